"""One long event in small reads costs the chains time linear in its bytes (issue 31), whatever the read size and
the line ends: the default chain (the fast path, decision 0050) as the plain rule chain.

Each case times (CPU, the best of three runs, gc off) one stream at two sizes 4x apart: linear work takes about 4x
the time, work that rescans the open event on every read about 16x; the bar is 8x, which a loaded machine keeps.
Format detection (``format=None``) is checked by counting the bytes it searches.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest

import pipeline
from benchmarks import long_event
from operators import DEFAULT_LIMITS
from operators._parse_format import _Detect

FORMATS = ("chat", "messages", "responses", "gemini")
LINE_ENDS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}


def _best(run: Callable[[], object], rounds: int = 3) -> float:
    gc.collect()
    gc.disable()
    try:
        return long_event.best_seconds(run, rounds)
    finally:
        gc.enable()


def growth(path: str, format: str, read: int, kib: int, **shape: Any) -> float:
    """The time at 4x the event's bytes over the time at 1x."""
    runs = [long_event.work(path, format, long_event.pieces(long_event.body(format, size * 1024, **shape), read))
            for size in (kib, 4 * kib)]
    small = _best(runs[0])
    return _best(runs[1]) / small


VARIANTS: dict[str, dict[str, Any]] = {
    "one line": {},
    "one line, bare": {"bare": True},  # no event: lines: Messages and Responses events take the fast path too
    "many lines": {"lines": True},
    "one line, crlf": {"line_end": b"\r\n"},
    "one line, cr": {"line_end": b"\r"},
    "many lines, cr": {"lines": True, "line_end": b"\r"},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("path", ["default chain", "plain chain"])
def test_one_long_event_in_64_byte_reads_costs_time_linear_in_its_bytes(path: str, format: str, variant: str) -> None:
    assert growth(path, format, 64, 240, **VARIANTS[variant]) < long_event.LINEAR_BAR


@pytest.mark.parametrize("bare", [False, True])
@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("path", ["default chain", "plain chain"])
def test_one_long_event_in_1_byte_reads_costs_time_linear_in_its_bytes(path: str, format: str, bare: bool) -> None:
    assert growth(path, format, 1, 8, bare=bare) < long_event.LINEAR_BAR


def test_an_event_up_to_the_event_limit_in_64_byte_reads_is_read_whole() -> None:
    data = long_event.body("chat", DEFAULT_LIMITS.max_event_bytes - 1024)
    chunks = pipeline.collect(long_event.pieces(data, 64), format="chat")
    assert len(pipeline.assemble(chunks).text) > DEFAULT_LIMITS.max_event_bytes - 1024


class _Counting(bytearray):
    """A detection head that counts the bytes its ``rfind`` calls look at."""

    searched = 0

    def rfind(self, sub: object, start: int | None = None, end: int | None = None) -> int:  # type: ignore[override]
        first = 0 if start is None else start
        last = len(self) if end is None else end
        _Counting.searched += max(0, last - first)
        return super().rfind(sub, start, end)  # type: ignore[arg-type]


def test_format_detection_looks_at_each_byte_of_a_long_first_line_a_bounded_number_of_times() -> None:
    data = long_event.body("chat", 64 * 1024)
    first = data[data.rfind(b"data: ", 0, data.find(b"long answer")) :]  # the long event first: detection reads it
    detect = _Detect(DEFAULT_LIMITS)
    detect.head = _Counting()
    _Counting.searched = 0
    out: list[object] = []
    for piece in long_event.pieces(first[: first.find(b"\n")], 64):
        detect.on_batch(piece, out)  # type: ignore[arg-type]
    assert detect.inner is None  # no line ended: still detecting
    assert _Counting.searched <= 2 * first.find(b"\n")  # two searches (LF, CR) over the new bytes of each read
