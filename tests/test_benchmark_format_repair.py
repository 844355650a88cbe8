"""The repair benchmark runs on its generated streams, with no failure in either format (so its rows measure the
hot path, not an error ending)."""

from __future__ import annotations

import pytest

from benchmarks import format_repair

pytestmark = pytest.mark.slow  # tests/tiers.py


def test_the_repair_benchmark_measures_both_formats() -> None:
    rows = format_repair.measure(events=50, rounds=1)  # asserts that no stream fails
    assert [row["format"] for row in rows] == [
        "messages, 4 KB reads", "messages, 1 event reads", "responses, 4 KB reads", "responses, 1 event reads"
    ]
    assert all(isinstance(row["events"], int) and row["events"] > 50 for row in rows)
