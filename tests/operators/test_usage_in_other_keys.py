"""A chat chunk's usage in keys other than OpenAI's (decision 0046): read where unambiguous, else absent and named in
an ``unknown-usage`` anomaly, never 0/0."""

from __future__ import annotations

from typing import Any

import pytest
from builders import F, delta, finish, of_type, run, sse

Json = dict[str, Any]


def _stream(usage: Json) -> bytes:
    return sse(F, delta(content="x"), finish("stop"), {"choices": [], "usage": usage})


def _usage(data: bytes) -> list[Json]:
    return [chunk["usage"] for chunk in of_type(run(data), "usage")]


def _unknown(data: bytes) -> list[str]:
    return [a["detail"] for a in of_type(run(data, anomalies=True), "anomaly") if a["kind"] == "unknown-usage"]


@pytest.mark.parametrize(
    ("wire", "counts"),
    [
        ({"input_tokens": 12, "output_tokens": 34}, {"input_tokens": 12, "output_tokens": 34, "total_tokens": 46}),
        (
            {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 3, "output_tokens": 2},
            {"input_tokens": 10, "output_tokens": 2, "total_tokens": 20, "cache_read_tokens": 5,
             "cache_write_tokens": 3},
        ),
        (
            {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 5}, "output_tokens": 4,
             "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 24},
            {"input_tokens": 15, "output_tokens": 4, "total_tokens": 24, "cache_read_tokens": 5,
             "reasoning_tokens": 2},
        ),
    ],
    ids=["anthropic-plain", "anthropic-cache", "responses-details"],
)
def test_input_and_output_tokens_are_read_with_the_meaning_their_other_keys_give(wire: Json, counts: Json) -> None:
    data = _stream(wire)

    assert _usage(data) == [counts]
    assert _unknown(data) == []


def test_openai_keys_beside_anthropic_ones_win() -> None:
    data = _stream({"prompt_tokens": 9, "completion_tokens": 1, "input_tokens": 500, "output_tokens": 500})

    assert _usage(data) == [{"input_tokens": 9, "output_tokens": 1, "total_tokens": 10}]


@pytest.mark.parametrize(
    ("wire", "named"),
    [
        ({"tokens": 12, "cost": 0.1}, "cost, tokens"),
        ({"input_tokens": 20, "cache_read_input_tokens": 5, "input_tokens_details": {"cached_tokens": 5}},
         "could mean either"),
        ({"input_tokens": "12", "output_tokens": "34"}, "no number"),
    ],
    ids=["unknown-keys", "both-cache-families", "not-numbers"],
)
def test_usage_the_library_cannot_read_is_absent_and_named_never_zero(wire: Json, named: str) -> None:
    data = _stream(wire)

    assert _usage(data) == []
    [detail] = _unknown(data)
    assert named in detail


@pytest.mark.parametrize("wire", [{}, {"prompt_tokens": None, "completion_tokens": None}], ids=["empty", "nulls"])
def test_a_usage_object_with_no_value_is_no_usage_silently(wire: Json) -> None:
    data = _stream(wire)

    assert _usage(data) == []
    assert _unknown(data) == []


def test_an_earlier_count_survives_a_later_unreadable_usage() -> None:
    data = sse(F, delta(content="x"), {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
               finish("stop"), {"choices": [], "usage": {"tokens": 12}})

    assert _usage(data) == [{"input_tokens": 4, "output_tokens": 2, "total_tokens": 6}]
    assert len(_unknown(data)) == 1


@pytest.mark.parametrize(
    ("wire", "reported"),
    [
        ({"prompt_tokens": -1, "completion_tokens": 1.5}, []),
        ({"prompt_tokens": -1, "completion_tokens": 2}, [{"output_tokens": 2}]),
    ],
    ids=["both-invalid", "one-valid"],
)
def test_a_usage_with_no_valid_count_is_no_usage_not_zero(wire: Json, reported: list[Json]) -> None:
    data = _stream(wire)

    assert _usage(data) == reported
    assert [a["kind"] for a in of_type(run(data, anomalies=True), "anomaly")] == ["invalid-usage"]


@pytest.mark.parametrize(
    ("wire", "counts"),
    [
        ({"output_tokens": 7, "service_tier": "standard"}, {"output_tokens": 7}),
        ({"completion_tokens": 5}, {"output_tokens": 5}),
        ({"prompt_tokens": 9}, {"input_tokens": 9}),
    ],
    ids=["anthropic-output-only", "completion-only", "prompt-only"],
)
def test_a_count_the_wire_does_not_give_is_absent_never_zero(wire: Json, counts: Json) -> None:
    assert _usage(_stream(wire)) == [counts]
