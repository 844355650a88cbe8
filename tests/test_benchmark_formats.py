"""The per-format benchmark's streams assemble to the same response in every format (so its rows compare alike)."""

from __future__ import annotations

import pytest

from benchmarks import formats
from benchmarks._format_streams import gemini, payloads
from benchmarks._timing import split

pytestmark = pytest.mark.slow  # tests/tiers.py


def test_each_generated_format_stream_assembles_to_the_same_response() -> None:
    rows = formats.measure(events=50, rounds=1)  # asserts the text, the tool call and the finish per format and read
    assert [(row["format"], row["read"]) for row in rows] == [
        (name, read) for read in ("4k", "event") for name in ("chat", "messages", "responses", "gemini")
    ]
    assert all(row["floor_s"] > 0 and row["ours_s"] > 0 and row["ratio_min"] <= row["ratio"] for row in rows)


def test_the_gemini_rows_read_googles_crlf_events_one_per_read_and_have_their_goal() -> None:
    data = gemini(50)
    pieces = split(data, "event")

    assert len(pieces) == len(payloads(data)) == 51  # 50 text events and the call with the finish
    assert all(piece.startswith(b"data: ") and piece.endswith(b"}\r\n\r\n") for piece in pieces)
    assert b"".join(pieces) == data
    assert formats.GOALS[("gemini", "4k")] == 0.5
    assert formats.GOALS[("gemini", "event")] == 0.8
    formats.check("gemini", 50, pieces)  # the arguments compared as JSON: Gemini sends them as an object
    with pytest.raises(AssertionError):
        formats.check("gemini", 49, pieces)
