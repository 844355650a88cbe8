"""Token counts: only non-negative 64-bit integers are counts; usage split over chunks merges field by field
(decision 0012)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from builders import F, delta, finish, of_type, run, sse, usage
from corpus import PEER_STREAMS

import pipeline
from operators._usage import MAX_COUNT

PEERS = PEER_STREAMS


def _usage_of(data: bytes) -> dict[str, Any]:
    [chunk] = of_type(run(data), "usage")
    out: dict[str, Any] = chunk["usage"]
    return out


def _anomalies(data: bytes) -> list[dict[str, Any]]:
    return of_type(run(data, anomalies=True), "anomaly")


@pytest.mark.parametrize(
    ("wire", "shown"),
    [("-1", "-1"), ("1.5", "1.5"), ("-1.7e308", "-1.7e+308"), (str(2**64), str(2**64)), ("1e300", "1e+300")],
    ids=["negative", "fractional", "huge-negative-float", "over-64-bits", "absurd-float"],
)
def test_an_invalid_prompt_count_is_dropped_with_an_anomaly(wire: str, shown: str) -> None:
    trailing = '{"choices": [], "usage": {"prompt_tokens": ' + wire + ', "completion_tokens": 2}}'
    data = sse(F, delta(content="x"), finish("stop"), trailing)

    assert _usage_of(data) == {"output_tokens": 2}  # the invalid count absent, never 0 (decision 0046)
    [anomaly] = [a for a in _anomalies(data) if a["kind"] == "invalid-usage"]
    assert f"prompt_tokens={shown}" in anomaly["detail"]


def test_counts_that_once_summed_to_minus_infinity_give_strict_json() -> None:
    """Today's reproducer: prompt - cached - cache_write over huge floats overflowed to -Infinity."""
    trailing = (
        '{"choices": [], "usage": {"prompt_tokens": -1.7e308, "completion_tokens": 1,'
        ' "prompt_tokens_details": {"cached_tokens": 1.7e308, "cache_write_tokens": 1.7e308}}}'
    )
    data = sse(F, delta(content="x"), finish("stop"), trailing)

    for chunk in pipeline.collect(data, anomalies=True):
        json.dumps(chunk.to_dict(), allow_nan=False)  # raises on -Infinity
    assert _usage_of(data) == {"output_tokens": 1}


def test_a_number_beyond_the_float_range_is_a_malformed_response() -> None:
    data = sse(F, delta(content="x"), finish("stop"), '{"choices": [], "usage": {"prompt_tokens": 1e400}}')

    [finish_chunk] = of_type(run(data), "finish")
    assert finish_chunk["reason"]["failure"]["code"] == "MALFORMED_RESPONSE"


def test_the_largest_64_bit_count_is_kept() -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(MAX_COUNT, 1))

    assert _usage_of(data) == {"input_tokens": MAX_COUNT, "output_tokens": 1}  # the total is not a safe integer
    assert [a for a in _anomalies(data) if a["kind"] == "invalid-usage"] == []


def test_cache_counts_larger_than_the_prompt_are_dropped() -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(5, 1, prompt_tokens_details={"cached_tokens": 9}))

    assert _usage_of(data) == {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    assert any("cache counts 9 > prompt_tokens=5" in a["detail"] for a in _anomalies(data))


def test_a_later_usage_chunk_omitting_prompt_tokens_does_not_erase_it() -> None:
    first = {"choices": [], "usage": {"prompt_tokens": 50, "prompt_tokens_details": {"cached_tokens": 20}}}
    second = {"choices": [], "usage": {"completion_tokens": 7}}
    data = sse(F, delta(content="x"), finish("stop"), first, second)

    assert _usage_of(data) == {"input_tokens": 30, "output_tokens": 7, "total_tokens": 57, "cache_read_tokens": 20}


def test_the_last_value_of_each_usage_field_wins() -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(10, 1), usage(12, 3))

    assert _usage_of(data) == {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}


def test_a_null_usage_field_keeps_the_earlier_value() -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(10, 1), usage(None, 4))

    assert _usage_of(data) == {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}


@pytest.mark.parametrize("invalid", [-3, 1.5, 2**64], ids=["negative", "fraction", "beyond-64-bits"])
def test_a_later_invalid_count_keeps_the_earlier_valid_one(invalid: object) -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(10, 4), usage(invalid, 5))

    assert _usage_of(data) == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def test_a_later_invalid_count_is_reported_as_set_aside() -> None:
    data = sse(F, delta(content="x"), finish("stop"), usage(10, 4), usage(10, -3))

    [anomaly] = [a for a in _anomalies(data) if a["kind"] == "invalid-usage"]
    assert "completion_tokens=-3 (the earlier valid count kept)" in anomaly["detail"]


def test_a_later_invalid_messages_output_count_keeps_the_earlier_one() -> None:
    def event(payload: dict[str, Any]) -> bytes:
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()

    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                  "model": "x", "usage": {"input_tokens": 9, "output_tokens": 1}}}
    data = b"".join(event(p) for p in (
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}},
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": -3}},
        {"type": "message_stop"},
    ))

    [chunk] = of_type([c.to_dict() for c in pipeline.collect(data)], "usage")
    assert chunk["usage"]["output_tokens"] == 6
    assert chunk["usage"]["input_tokens"] == 9


def _peer(name: str) -> bytes:
    path = PEERS / name
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"the peers corpus is missing: {path}")
        pytest.skip(f"no peers corpus under {PEERS}")
    return path.read_bytes()


def test_litellm_cache_details_sent_before_the_trailing_usage_are_kept() -> None:
    """LiteLLM's regression #34801: details in one chunk, the trailing usage without them."""
    data = _peer("61-litellm-trailing-usage-without-cache-details.sse")

    message = pipeline.assemble(pipeline.collect(data))

    assert message.usage is not None
    assert message.usage.to_dict() == {
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 6021,
        "cache_read_tokens": 6004,
        "cache_write_tokens": 10,
    }


def test_gemini_prompt_count_in_one_chunk_and_completion_in_another_are_both_kept() -> None:
    """LiteLLM's Gemini case: the second chunk repeats prompt_tokens as a placeholder 0."""
    data = _peer("62-litellm-gemini-usage-split-across-chunks.sse")

    message = pipeline.assemble(pipeline.collect(data))

    assert message.usage is not None
    # the wire total (27) contradicts the merged counts (50 + 27), so the exact-total rule omits it
    assert message.usage.to_dict() == {"input_tokens": 50, "output_tokens": 27}
