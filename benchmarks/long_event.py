"""One long event in small reads, per path (issue 31): CPU seconds per MiB of the stream at two sizes, 4x apart.

Each format's generated stream (``benchmarks.formats``) with one text delta of ``--kib`` KiB in the middle, cut into
reads of ``--reads`` bytes, through the default chain (``pipeline.collect``: the fast path), the plain rule chain
(``rules=protocol_rules()``), and the format's repairer (``ChatRepair``, ``MessagesRepair``, ``ResponsesRepair``,
``GeminiRepair``, ``feed`` per read). Linear work costs the same per MiB at both sizes (the time 4x/1x near 4); work
that rescans what an open event holds on every read costs 4x more per MiB at 4x the bytes (the time near 16x).

    python -m benchmarks.long_event [--kib 192] [--reads 64] [--rounds 3] [--formats chat,messages,responses,gemini]
                                    [--line-ends lf|crlf|cr] [--lines] [--bare]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import pipeline
from pipeline.sanitize import ChatRepair, GeminiRepair, MessagesRepair, ResponsesRepair

from ._format_streams import GENERATORS, texts

__all__ = ["PATHS", "best_seconds", "body", "main", "measure", "pieces", "work"]

PATHS = ("default chain", "plain chain", "repairer")
LINEAR_BAR = 8.0
"""The most the time at 4x the bytes may be, as a multiple of the time at 1x (linear: about 4; quadratic: 16)."""

_REPAIRERS: dict[str, Callable[[], Any]] = {"chat": ChatRepair, "messages": MessagesRepair,
                                            "responses": ResponsesRepair, "gemini": GeminiRepair}
_LINE_ENDS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}


def body(format: str, size: int, *, line_end: bytes = b"\n", lines: bool = False, bare: bool = False) -> bytes:
    """The format's generated stream (four text deltas, a tool call, the finish) with one event of about ``size``
    bytes: its second text that long, or (``lines``) that many bytes of short data lines (its JSON opens with an
    unknown ``"pad"`` array, one element a line). Lines end in ``line_end``; ``bare``: no ``event:`` lines (each
    event named by its JSON ``type`` alone)."""
    stream = GENERATORS[format](4).replace(b"\r\n", b"\n")  # Gemini's CRLF too: the line ends are ``line_end``
    text = texts(4)[1].encode()
    if lines:
        start = stream.rfind(b"\ndata: {", 0, stream.find(text)) + len(b"\ndata: {")
        stream = stream[:start] + b'"pad":[' + b"0,\ndata: " * (size // 10) + b"0]," + stream[start:]
    else:
        stream = stream.replace(text, b"long answer, " * (size // 13) + b"x" * (size % 13), 1)
    if bare:
        stream = b"".join(line + b"\n" for line in stream.split(b"\n")[:-1] if not line.startswith(b"event: "))
    return stream if line_end == b"\n" else stream.replace(b"\n", line_end)


def pieces(data: bytes, read: int) -> list[bytes]:
    return [data[i : i + read] for i in range(0, len(data), read)]


def _chain(format: str, parts: list[bytes], rules: Any) -> int:
    chunks = pipeline.collect(parts, format=format, rules=rules)  # type: ignore[arg-type]
    return len(pipeline.assemble(chunks).text)


def _repair(format: str, parts: list[bytes]) -> int:
    repair = _REPAIRERS[format]()
    feed = repair.feed
    total = sum(len(feed(part)) for part in parts) + len(repair.close())
    assert repair.failure is None, repair.failure
    return total


def work(path: str, format: str, parts: list[bytes]) -> Callable[[], int]:
    """One run of ``path`` over ``parts``: the text's length (a chain) or the bytes forwarded (a repairer)."""
    if path == "default chain":
        return lambda: _chain(format, parts, None)
    if path == "plain chain":
        return lambda: _chain(format, parts, pipeline.protocol_rules())
    if path == "repairer":
        return lambda: _repair(format, parts)
    raise ValueError(path)


def best_seconds(run: Callable[[], object], rounds: int) -> float:
    """The least CPU time (``time.process_time``) of ``rounds`` runs: what the work costs, whatever else runs."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def measure(kib: int, read: int, rounds: int, formats: Iterable[str] = tuple(GENERATORS), paths: Iterable[str] = PATHS,
            **shape: Any) -> list[dict[str, Any]]:
    """One row per format and path: seconds per MiB at ``kib`` and at 4x ``kib``, and the time 4x/1x."""
    rows: list[dict[str, Any]] = []
    for format in formats:
        streams = [body(format, size * 1024, **shape) for size in (kib, 4 * kib)]
        for path in paths:
            times = [best_seconds(work(path, format, pieces(data, read)), rounds) for data in streams]
            rows.append({
                "format": format, "path": path, "read": read, "kib": [kib, 4 * kib], **shape,
                "s_per_mib": [t / (len(data) / 2**20) for t, data in zip(times, streams, strict=True)],
                "ratio_4x": times[1] / max(times[0], 1e-9),
            })
    return rows


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a table: format, path, read, s/MiB at 1x and 4x, the time 4x/1x."""
    out = [f"{'format':<10} {'path':<14} {'read':>5} {'1x s/MiB':>9} {'4x s/MiB':>9} {'time 4x/1x':>10}"]
    for row in rows:
        one, four = row["s_per_mib"]
        out.append(f"{row['format']:<10} {row['path']:<14} {row['read']:>4}B {one:>9.3f} {four:>9.3f} "
                   f"{row['ratio_4x']:>10.1f}")
    return out


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kib", type=int, default=192, help="the long event at 1x, in KiB (default 192)")
    parser.add_argument("--reads", type=int, default=64, help="bytes a read (default 64)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per row, the least CPU time counts (default 3)")
    parser.add_argument("--formats", default=",".join(GENERATORS))
    parser.add_argument("--line-ends", choices=sorted(_LINE_ENDS), default="lf")
    parser.add_argument("--lines", action="store_true", help="the long event as many short data lines")
    parser.add_argument("--bare", action="store_true", help="no event: lines")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    shape = {"line_end": _LINE_ENDS[args.line_ends], "lines": args.lines, "bare": args.bare}
    rows = measure(args.kib, args.reads, args.rounds, args.formats.split(","), **shape)
    print(f"one long event ({'many short lines' if args.lines else 'one line'}{', bare' if args.bare else ''}, "
          f"{args.line_ends}) in {args.reads}-byte reads: CPU s per MiB at {args.kib} and {4 * args.kib} KiB")
    print("\n".join(lines(rows)))
    if args.json:
        with open(args.json, "w") as file:
            json.dump([{**row, "line_end": row["line_end"].decode()} for row in rows], file, indent=1)
    return rows


if __name__ == "__main__":
    main()
