"""``GeminiRepair`` on hostile input costs time linear in its bytes (decision 0036's amendment, issue 31): one long
event in small reads (one line, or many data lines; CRLF, LF, CR), and many events in one read. Each case times (CPU,
the best of three, gc off) the stream at two sizes 4x apart against the bar the other repairers meet
(``benchmarks.long_event.LINEAR_BAR``: linear work is about 4x, work that rescans what it holds about 16x)."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable

import pytest

from benchmarks import long_event
from pipeline.sanitize import GeminiRepair

pytestmark = pytest.mark.slow


def _event(text: str, *, finish: bool = False) -> bytes:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish:
        candidate["finishReason"] = "STOP"
    return b"data: " + json.dumps({"candidates": [candidate]}).encode() + b"\n\n"


def _long(size: int, line_end: bytes, lines: bool) -> bytes:
    middle = _event("long answer, " * (size // 13))
    if lines:  # the same bytes as many data lines (the JSON opens with an unknown array, one element a line)
        middle = b'data: {"pad":[' + b"0,\ndata: " * (size // 10) + b'0],"candidates":[]}\n\n'
    body = _event("Hel") + middle + _event("lo", finish=True)
    return body if line_end == b"\n" else body.replace(b"\n", line_end)


def _run(body: bytes, read: int) -> Callable[[], object]:
    parts = long_event.pieces(body, read)

    def run() -> object:
        repair = GeminiRepair()
        out = b"".join([repair.feed(part) for part in parts]) + repair.close()
        assert repair.failure is None
        return out

    return run


def _growth(small: bytes, large: bytes, read: int) -> float:
    runs = [_run(small, read), _run(large, read)]
    gc.collect()
    gc.disable()
    try:
        return long_event.best_seconds(runs[1], 3) / long_event.best_seconds(runs[0], 3)
    finally:
        gc.enable()


@pytest.mark.parametrize("lines", [False, True], ids=["one line", "many lines"])
@pytest.mark.parametrize("line_end", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_one_long_event_in_64_byte_reads_costs_time_linear_in_its_bytes(line_end: bytes, lines: bool) -> None:
    assert _growth(_long(240 * 1024, line_end, lines), _long(960 * 1024, line_end, lines), 64) < long_event.LINEAR_BAR


@pytest.mark.parametrize("lines", [False, True], ids=["one line", "many lines"])
def test_one_long_event_in_1_byte_reads_costs_time_linear_in_its_bytes(lines: bool) -> None:
    assert _growth(_long(8 * 1024, b"\r\n", lines), _long(32 * 1024, b"\r\n", lines), 1) < long_event.LINEAR_BAR


@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_many_events_in_one_read_cost_time_linear_in_their_number(line_end: bytes) -> None:
    def body(count: int) -> bytes:
        return (_event("a") * count + _event("", finish=True)).replace(b"\n", line_end)

    assert _growth(body(5_000), body(20_000), 1 << 30) < long_event.LINEAR_BAR
