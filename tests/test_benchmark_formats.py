"""The per-format benchmark's streams assemble to the same response in every format (so its rows compare alike)."""

from __future__ import annotations

import pytest

from benchmarks import formats

pytestmark = pytest.mark.slow  # tests/tiers.py


def test_each_generated_format_stream_assembles_to_the_same_response() -> None:
    rows = formats.measure(events=50, rounds=1)  # asserts the text, the tool call and the finish per format and read
    assert [(row["format"], row["read"]) for row in rows] == [
        (name, read) for read in ("4k", "event") for name in ("chat", "messages", "responses")
    ]
    assert all(row["floor_s"] > 0 and row["ours_s"] > 0 and row["ratio_min"] <= row["ratio"] for row in rows)
