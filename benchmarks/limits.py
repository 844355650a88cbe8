"""Long-line framing and limit floods: time and peak memory (tracemalloc), fed in 64 KiB reads from generators.

    python -m benchmarks.limits              # framing of a 12 MB and a 50 MB line, then each limit's flood
    python -m benchmarks.limits --framing    # only the framing rows

Framing: ``parse_sse`` alone, one ``data:`` line of n bytes (``max_event_bytes`` raised above it) in 64 KiB reads;
linear framing keeps the time proportional to n (docs/decisions/0014-limits.md). Floods: each limit at its default,
crossed through ``pipeline.translate``; the row reports the time and the bytes read when the finish arrives, and the
tracemalloc peak at that moment. (A synchronous source stops at once only when ``parse_sse`` itself finishes.)
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pipeline
from operators import Limits, parse_sse

READ = 64 * 1024
MB = 1000 * 1000


def _event(value: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(value).encode() + b"\n\n"


def _reads(pieces: Iterator[bytes]) -> Iterator[bytes]:
    buf = bytearray()
    for piece in pieces:
        buf += piece
        while len(buf) >= READ:
            yield bytes(buf[:READ])
            del buf[:READ]
    if buf:
        yield bytes(buf)


def _filler(total: int) -> Iterator[bytes]:
    piece = b"x" * READ
    for _ in range(total // READ):
        yield piece


def _one_line(total: int) -> Iterator[bytes]:
    yield b"data: "
    yield from _filler(total)


def _arguments(total: int) -> Iterator[bytes]:
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
    yield _event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    fragment = {"index": 0, "function": {"arguments": "a" * 60000}}
    piece = _event({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]})
    for _ in range(total // 60000):
        yield piece


def _text(total: int) -> Iterator[bytes]:
    piece = _event({"choices": [{"index": 0, "delta": {"content": "t" * 1000}}]})
    for _ in range(total // 1000):
        yield piece


def _calls(count: int) -> Iterator[bytes]:
    for i in range(count):
        call = {"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": "{}"}}
        yield _event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})


def framing(size: int) -> float:
    """Seconds for ``parse_sse`` to frame one line of ``size`` bytes fed in 64 KiB reads."""
    pieces = [b"data: ", *_filler(size), b"\n\n"]
    source = pipeline.bytes_source(pieces)
    started = time.perf_counter()
    source.pipe(parse_sse(Limits(max_event_bytes=size + 1024))).subscribe(on_next=lambda _: None)
    return time.perf_counter() - started


FLOODS: list[tuple[str, Callable[[], Iterator[bytes]]]] = [
    ("200 MB with no newline", lambda: _filler(200 * MB)),
    ("one 200 MB data line", lambda: _one_line(200 * MB)),
    ("500 MB of arguments fragments", lambda: _arguments(500 * MB)),
    ("endless text deltas (100 MB offered)", lambda: _text(100 * MB)),
    ("1000 tool calls", lambda: _calls(1000)),
]


def flood(make: Callable[[], Iterator[bytes]]) -> dict[str, Any]:
    read = 0

    def counted() -> Iterator[bytes]:
        nonlocal read
        for piece in _reads(make()):
            read += len(piece)
            yield piece

    seen: dict[str, Any] = {}
    tracemalloc.start()
    started = time.perf_counter()

    def on_next(chunk: Any) -> None:
        if chunk.type == "finish":
            seen.update(seconds=time.perf_counter() - started, read_mb=read / MB,
                        peak_mib=tracemalloc.get_traced_memory()[1] / 2**20, message=chunk.reason.failure.message)

    pipeline.translate(counted()).subscribe(on_next=on_next)
    tracemalloc.stop()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framing", action="store_true", help="only the framing rows")
    args = parser.parse_args()
    for size in (12 * MB, 50 * MB):
        print(f"framing: one {size // MB} MB line in 64 KiB reads: {framing(size):.3f} s")
    if args.framing:
        return
    for name, make in FLOODS:
        row = flood(make)
        print(f"flood: {name}: finish after {row['seconds']:.3f} s, {row['read_mb']:.1f} MB read, "
              f"peak {row['peak_mib']:.1f} MiB: {row['message']}")


if __name__ == "__main__":
    main()
