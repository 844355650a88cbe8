"""The per-format benchmark's streams assemble to the same response in every format (so its rows compare alike)."""

from __future__ import annotations

from benchmarks import formats


def test_each_generated_format_stream_assembles_to_the_same_response() -> None:
    rows = formats.measure(events=50, repeat=1)  # asserts the text, the tool call and the finish per format
    assert [row["format"] for row in rows] == ["chat", "messages", "responses"]
    assert all(row["floor_s"] > 0 and row["ours_s"] > 0 for row in rows)
