"""The anchor's own translator cases, dsh-behaviour.md §8.1: TC-1..TC-34 and the extra cases X1..X8.

Our protocol is the anchor's in Python naming (``block_type``, ``arguments_delta``, ``input_tokens``...). We implement
usage variant B (``total_tokens`` under the exact-total rule) plus the variant A alias ``delta.reasoning``.

Deliberate divergences from the anchor, asserted as OUR behaviour (each test docstring says why):

- TC-24 / X5: a tool call that never got an id (or a name) is refused at ``[DONE]`` with ``MALFORMED_TOOL_CALL``
  (after the usage, no block-end at all) instead of being closed with ``id: ""``.
- TC-21 / TC-22 / X1 / X6 / X7: nothing raises; the stream ends with an error finish instead.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from builders import F, Json, delta, finish, of_type, run, sse, tool, tools, usage

import pipeline
from operators import FinishReason
from operators._classify_finish import EMPTY_RESPONSE_MESSAGE, map_finish_reason
from operators._usage import map_usage
from operators.wire import WireUsage

MAX_SAFE_INTEGER = 2**53 - 1

# -- expected chunks, as JSON ---------------------------------------------------------------------------------------


def start(index: int, block_type: str) -> Json:
    return {"type": "block-start", "index": index, "block_type": block_type}


def text_delta(index: int, text: str) -> Json:
    return {"type": "text-delta", "index": index, "text": text}


def reasoning_delta(index: int, text: str) -> Json:
    return {"type": "reasoning-delta", "index": index, "text": text}


def call_delta(index: int, id: str, name: str | None, arguments_delta: str) -> Json:
    out: Json = {"type": "tool-call-delta", "index": index, "id": id}
    if name is not None:
        out["name"] = name
    out["arguments_delta"] = arguments_delta
    return out


def end_text(index: int, text: str) -> Json:
    return {"type": "block-end", "index": index, "block": {"type": "text", "text": text}}


def end_reasoning(index: int, text: str) -> Json:
    return {"type": "block-end", "index": index, "block": {"type": "reasoning", "text": text}}


def end_call(index: int, id: str, name: str, arguments: str) -> Json:
    return {
        "type": "block-end",
        "index": index,
        "block": {"type": "tool-call", "id": id, "name": name, "arguments": arguments},
    }


def usage_chunk(input_tokens: int | float, output_tokens: int | float, **extra: Any) -> Json:
    return {"type": "usage", "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **extra}}


def finished(kind: str) -> Json:
    return {"type": "finish", "reason": {"kind": kind}}


def failed(code: str, message: str) -> Json:
    return {"type": "finish", "reason": {"kind": "error", "failure": {"code": code, "message": message}}}


EMPTY_RESPONSE_FINISH = failed("EMPTY_RESPONSE", EMPTY_RESPONSE_MESSAGE)


# -- wire payloads the builders do not cover ------------------------------------------------------------------------


def bare_finish(reason: str) -> Json:
    """The anchor's ``{finish_reason: X}``: a choice with a finish_reason and no delta at all."""
    return {"choices": [{"index": 0, "finish_reason": reason}]}


def with_usage(chunk: Json, prompt: int, completion: int) -> Json:
    """``chunk`` with a top-level usage attached (the finish chunk carrying the usage)."""
    return {**chunk, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


def failure_of(out: list[Json]) -> Json:
    last = out[-1]
    assert last["type"] == "finish"
    assert last["reason"]["kind"] == "error"
    failure: Json = last["reason"]["failure"]
    return failure


def decode_usage(payload: Json | bytes) -> WireUsage:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return msgspec.json.decode(raw, type=WireUsage)


# -- TC-1 .. TC-9: text, reasoning, the assembler -------------------------------------------------------------------


def test_tc01_text_streaming_defers_finish_to_done() -> None:
    out = run(
        sse(
            F,
            delta(content="Hel"),
            delta(content="lo"),
            with_usage(delta(content="", finish_reason="stop"), 5, 2),
        )
    )

    assert out == [
        start(0, "text"),
        text_delta(0, "Hel"),
        text_delta(0, "lo"),
        end_text(0, "Hello"),
        usage_chunk(5, 2, total_tokens=7),
        finished("stop"),
    ]


def test_tc02_output_feeds_the_assembler() -> None:
    chunks = pipeline.collect(sse(F, delta(content="hi"), finish("stop")))

    message = pipeline.assemble(chunks)

    assert message.text == "hi"
    assert message.reasoning == ""
    assert message.tool_calls == ()
    assert message.usage is None
    assert message.finish == FinishReason("stop")
    assert message.ok


def test_tc03_empty_first_reasoning_chunk_opens_no_block() -> None:
    out = run(sse(F, delta(content="plain"), bare_finish("stop")))

    assert [c for c in of_type(out, "block-start") if c["block_type"] == "reasoning"] == []
    assert of_type(out, "reasoning-delta") == []
    assert of_type(out, "block-start") == [start(0, "text")]


def test_tc04_reasoning_then_text_are_separate_blocks() -> None:
    out = run(
        sse(
            F,
            delta(content=None, reasoning_content="think"),
            delta(content=None, reasoning_content="ing"),
            delta(content="answer", reasoning_content=None),
            finish("stop"),
        )
    )

    assert out == [
        start(0, "reasoning"),
        reasoning_delta(0, "think"),
        reasoning_delta(0, "ing"),
        start(1, "text"),
        text_delta(1, "answer"),
        end_reasoning(0, "thinking"),
        end_text(1, "answer"),
        finished("stop"),
    ]
    assert of_type(out, "usage") == []


def test_tc05_absent_reasoning_content_means_non_thinking() -> None:
    out = run(sse(delta(role="assistant", content="x"), bare_finish("stop")))

    assert of_type(out, "block-start") == [start(0, "text")]


def test_tc06_vllm_reasoning_alias_goes_into_one_reasoning_block() -> None:
    """Variant A alias plus variant B usage: the combined build also reports ``total_tokens`` 10."""
    out = run(
        sse(
            delta(role="assistant", content=None),
            delta(reasoning="We"),
            delta(reasoning=" need answer"),
            with_usage(delta(content="answer", finish_reason="stop"), 4, 6),
        )
    )

    assert out == [
        start(0, "reasoning"),
        reasoning_delta(0, "We"),
        reasoning_delta(0, " need answer"),
        start(1, "text"),
        text_delta(1, "answer"),
        end_reasoning(0, "We need answer"),
        end_text(1, "answer"),
        usage_chunk(4, 6, total_tokens=10),
        finished("stop"),
    ]


def test_tc07_alias_reasoning_survives_the_assembler() -> None:
    chunks = pipeline.collect(
        sse(
            delta(role="assistant"),
            delta(reasoning="chain of thought"),
            delta(content="visible"),
            bare_finish("stop"),
        )
    )

    message = pipeline.assemble(chunks)

    assert message.reasoning == "chain of thought"
    assert message.text == "visible"
    assert message.tool_calls == ()
    assert message.finish == FinishReason("stop")


def test_tc08_official_reasoning_field_wins_over_the_alias() -> None:
    out = run(
        sse(
            delta(reasoning_content="official", reasoning="alias"),
            delta(reasoning_content=None, reasoning="more alias"),
            bare_finish("stop"),
        )
    )

    assert out == [
        start(0, "reasoning"),
        reasoning_delta(0, "official"),
        reasoning_delta(0, "more alias"),
        end_reasoning(0, "officialmore alias"),
        finished("stop"),
    ]


def test_tc09_empty_alias_first_chunk_opens_no_block() -> None:
    out = run(sse(delta(role="assistant", content=None, reasoning=""), delta(content="plain"), bare_finish("stop")))

    assert [c for c in of_type(out, "block-start") if c["block_type"] == "reasoning"] == []
    assert out == [start(0, "text"), text_delta(0, "plain"), end_text(0, "plain"), finished("stop")]


# -- TC-10 .. TC-12: tool calls -------------------------------------------------------------------------------------


def test_tc10_tool_call_is_rebuilt_from_argument_fragments() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="call_00_x", name="get_weather", arguments="")),
            tools(tool(0, arguments='{"city"')),
            tools(tool(0, arguments=': "Paris"}')),
            with_usage(delta(content="", finish_reason="tool_calls"), 28, 6),
        )
    )

    assert out == [
        start(0, "tool-call"),
        call_delta(0, "call_00_x", "get_weather", ""),
        call_delta(0, "call_00_x", "get_weather", '{"city"'),
        call_delta(0, "call_00_x", "get_weather", ': "Paris"}'),
        end_call(0, "call_00_x", "get_weather", '{"city": "Paris"}'),
        usage_chunk(28, 6, total_tokens=34),
        finished("tool-calls"),
    ]


def test_tc11_parallel_tool_calls_are_told_apart_by_wire_index() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="a", name="one", arguments="{}"), tool(1, id="b", name="two", arguments="")),
            tools(tool(1, arguments="{}")),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-end") == [end_call(0, "a", "one", "{}"), end_call(1, "b", "two", "{}")]
    assert out[-1] == finished("tool-calls")


def test_tc12_text_and_tool_call_blocks_get_distinct_indices() -> None:
    out = run(
        sse(
            F,
            delta(content="Checking."),
            tools(tool(0, id="c", name="f", arguments="{}")),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-start") == [start(0, "text"), start(1, "tool-call")]
    assert of_type(out, "tool-call-delta") == [call_delta(1, "c", "f", "{}")]


# -- TC-13 .. TC-20: usage and the finish ---------------------------------------------------------------------------


def test_tc13_usage_from_a_trailing_usage_only_chunk() -> None:
    out = run(sse(F, delta(content="x"), finish("stop", usage=None), usage(9, 1)))

    assert out[-2] == usage_chunk(9, 1, total_tokens=10)
    assert out[-1] == finished("stop")
    assert len(of_type(out, "usage")) == 1


def test_tc14_last_usage_wins_over_the_attached_one() -> None:
    out = run(sse(F, with_usage(finish("stop"), 1, 1), usage(2, 2)))

    assert of_type(out, "usage") == [usage_chunk(2, 2, total_tokens=4)]
    assert out == [usage_chunk(2, 2, total_tokens=4), EMPTY_RESPONSE_FINISH]


def test_tc15_finish_defaults_to_stop_without_finish_reason() -> None:
    out = run(sse(F, delta(content="x")))

    assert out[-1] == finished("stop")


def test_tc16_no_usage_chunk_when_none_arrived() -> None:
    out = run(sse(F))

    assert of_type(out, "usage") == []


def test_tc17_chunk_without_choices_is_a_no_op() -> None:
    out = run(sse({}))

    assert out == [EMPTY_RESPONSE_FINISH]


def test_tc18_explicit_stop_with_no_blocks_is_empty_response_after_usage() -> None:
    out = run(sse(F, with_usage(finish("stop"), 7, 0)))

    assert out == [usage_chunk(7, 0, total_tokens=7), EMPTY_RESPONSE_FINISH]


def test_tc19_reasoning_only_stream_stays_a_successful_stop() -> None:
    out = run(sse(F, delta(content=None, reasoning_content="mull"), bare_finish("stop")))

    assert out[-1] == finished("stop")
    assert out == [start(0, "reasoning"), reasoning_delta(0, "mull"), end_reasoning(0, "mull"), finished("stop")]


def test_tc20_non_stop_finish_is_not_reclassified_with_zero_blocks() -> None:
    out = run(sse(F, bare_finish("length")))

    assert out == [finished("max-tokens")]


# -- TC-21, TC-22: a broken stream ends with an error finish (diverges: the anchor raises) ---------------------------


def test_tc21_invalid_json_ends_with_malformed_response_finish() -> None:
    """Diverges from the anchor, which raises ``LlmError(MALFORMED_RESPONSE)``: our stream never raises, it ends with
    an error finish quoting the payload, so every consumer sees exactly one finish, last."""
    out = run(sse("{bad json", done=False))

    assert out == [failed("MALFORMED_RESPONSE", "malformed SSE payload: {bad json")]
    assert failure_of(out)["message"].startswith("malformed SSE payload: ")


def test_tc21_invalid_json_after_content_still_ends_with_one_finish_and_no_block_end() -> None:
    """Diverges from the anchor (which raises): the text already streamed stays, but no block is closed."""
    out = run(sse(F, delta(content="x"), "{bad json", usage(1, 1)))

    assert out == [
        start(0, "text"),
        text_delta(0, "x"),
        failed("MALFORMED_RESPONSE", "malformed SSE payload: {bad json"),
    ]


def test_tc22_stream_without_done_ends_with_stream_closed_finish() -> None:
    """Diverges from the anchor, which raises ``STREAM_CLOSED``: we end with that error finish instead."""
    out = run(sse(F, done=False))

    assert out == [failed("STREAM_CLOSED", "SSE stream ended without [DONE]")]


def test_tc22_stream_without_done_after_text_has_no_block_end() -> None:
    """Diverges from the anchor (which raises): the cut stream closes nothing and ends with ``STREAM_CLOSED``."""
    out = run(sse(F, delta(content="x"), usage(3, 1), done=False))

    assert out == [
        start(0, "text"),
        text_delta(0, "x"),
        usage_chunk(3, 1, total_tokens=4),
        failed("STREAM_CLOSED", "SSE stream ended without [DONE]"),
    ]


# -- TC-23: map_finish_reason ---------------------------------------------------------------------------------------

FINISH_TABLE: list[tuple[str, Json]] = [
    ("stop", {"kind": "stop"}),
    ("tool_calls", {"kind": "tool-calls"}),
    ("length", {"kind": "max-tokens"}),
    (
        "content_filter",
        {"kind": "error", "failure": {"code": "CONTENT_FILTER", "message": "model stopped: content_filter"}},
    ),
    (
        "insufficient_system_resource",
        {
            "kind": "error",
            "failure": {
                "code": "INSUFFICIENT_SYSTEM_RESOURCE",
                "message": "model stopped: insufficient_system_resource",
            },
        },
    ),
    (
        "mystery_reason",
        {"kind": "error", "failure": {"code": "MYSTERY_REASON", "message": "model stopped: mystery_reason"}},
    ),
]


@pytest.mark.parametrize(("wire", "expected"), FINISH_TABLE, ids=[wire for wire, _ in FINISH_TABLE])
def test_tc23_map_finish_reason_table(wire: str, expected: Json) -> None:
    assert map_finish_reason(wire).to_dict() == expected


@pytest.mark.parametrize(("wire", "expected"), FINISH_TABLE, ids=[wire for wire, _ in FINISH_TABLE])
def test_tc23_finish_reason_table_end_to_end(wire: str, expected: Json) -> None:
    out = run(sse(F, delta(content="x"), bare_finish(wire)))

    assert out[-1] == {"type": "finish", "reason": expected}
    assert out[-2] == end_text(0, "x")


def test_tc23_no_finish_reason_at_all_maps_to_stop() -> None:
    assert map_finish_reason(None) == FinishReason("stop")


# -- TC-24 .. TC-26: defensive tool-call shapes ---------------------------------------------------------------------


def test_tc24_tool_call_without_id_or_name_is_refused_at_done() -> None:
    """Diverges from the anchor on purpose (D5): the anchor closes the call with ``id: ""`` / ``name: ""`` and a
    ``tool-calls`` finish. An unidentified call would become a ``tool/result`` that fails session validation, so we
    refuse it: no block-end at all, then ``MALFORMED_TOOL_CALL`` naming the wire index and both missing fields."""
    out = run(sse(F, tools(tool(0, arguments="{}")), bare_finish("tool_calls")))

    assert out[:2] == [start(0, "tool-call"), call_delta(0, "", None, "{}")]
    assert "name" not in out[1]
    assert len(out) == 3
    assert of_type(out, "block-end") == []
    failure = failure_of(out)
    assert failure["code"] == "MALFORMED_TOOL_CALL"
    assert "wire index 0" in failure["message"]
    assert "no id and no name" in failure["message"]


def test_tc25_function_without_arguments_field_gives_empty_arguments_delta() -> None:
    out = run(sse(F, tools(tool(0, id="c", function={"name": "f"})), bare_finish("tool_calls")))

    assert out[1] == call_delta(0, "c", "f", "")
    assert of_type(out, "block-end") == [end_call(0, "c", "f", "")]


def test_tc26_tool_call_without_function_object_has_no_name_key() -> None:
    """Our divergence (D5) also applies here: the call never gets a name, so it is refused at ``[DONE]``."""
    out = run(sse(F, tools(tool(0, id="c")), bare_finish("tool_calls")))

    assert out[1] == call_delta(0, "c", None, "")
    assert "name" not in out[1]
    assert of_type(out, "block-end") == []
    failure = failure_of(out)
    assert failure["code"] == "MALFORMED_TOOL_CALL"
    assert "wire index 0" in failure["message"]
    assert "no name" in failure["message"]
    assert "no id" not in failure["message"]


# -- TC-27 .. TC-30: identity (variant B) ---------------------------------------------------------------------------


def test_tc27_identity_resent_empty_is_kept() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="call_00_x", name="get_weather", arguments="")),
            tools(tool(0, id="", name="", arguments='{"city"')),
            tools(tool(0, id="", name="", arguments=': "Paris"}')),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-end") == [end_call(0, "call_00_x", "get_weather", '{"city": "Paris"}')]


def test_tc28_identity_resent_null_is_kept() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="call_1", name="Glob", arguments="")),
            tools(tool(0, id=None, name=None, arguments="{}")),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-end") == [end_call(0, "call_1", "Glob", "{}")]


def test_tc29_same_identity_resent_is_not_duplicated() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="call_1", name="Glob", arguments="")),
            tools(tool(0, id="call_1", name="Glob", arguments="{}")),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-end") == [end_call(0, "call_1", "Glob", "{}")]
    assert "call_1call_1" not in json.dumps(out)
    assert "GlobGlob" not in json.dumps(out)


def test_tc30_parallel_identities_are_kept_apart_under_empty_continuations() -> None:
    out = run(
        sse(
            F,
            tools(tool(0, id="a", name="one", arguments=""), tool(1, id="b", name="two", arguments="")),
            tools(tool(1, id="", name="", arguments='{"b":1}'), tool(0, id="", name="", arguments='{"a":1}')),
            bare_finish("tool_calls"),
        )
    )

    assert of_type(out, "block-end") == [end_call(0, "a", "one", '{"a":1}'), end_call(1, "b", "two", '{"b":1}')]


# -- TC-31 .. TC-34: map_usage (variant B) --------------------------------------------------------------------------

TC31_WIRE: Json = {
    "prompt_tokens": 283,
    "completion_tokens": 69,
    "total_tokens": 352,
    "prompt_cache_hit_tokens": 256,
    "prompt_cache_miss_tokens": 27,
    "prompt_tokens_details": {"cached_tokens": 256},
    "completion_tokens_details": {"reasoning_tokens": 24},
}
TC31_USAGE: Json = {
    "input_tokens": 27,
    "output_tokens": 69,
    "total_tokens": 352,
    "cache_read_tokens": 256,
    "reasoning_tokens": 24,
}


def test_tc31_map_usage_full_live_capture_shape() -> None:
    assert map_usage(decode_usage(TC31_WIRE)).to_dict() == TC31_USAGE


def test_tc31_map_usage_full_live_capture_shape_end_to_end() -> None:
    out = run(sse(F, delta(content="x"), finish("stop"), {"choices": [], "usage": TC31_WIRE}))

    assert out[-2:] == [{"type": "usage", "usage": TC31_USAGE}, finished("stop")]


def test_tc32_map_usage_falls_back_to_prompt_cache_hit_tokens() -> None:
    wire = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 8}

    assert map_usage(decode_usage(wire)).to_dict() == {
        "input_tokens": 2,
        "output_tokens": 2,
        "total_tokens": 12,
        "cache_read_tokens": 8,
    }


def test_tc33_map_usage_omits_optional_fields_and_rebuilds_exact_total() -> None:
    wire = {"prompt_tokens": 10, "completion_tokens": 2}

    assert map_usage(decode_usage(wire)).to_dict() == {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}


# The anchor passes a negative or fractional count through (inputTokens: -1); issue 10 goes beyond it: such a count is
# dropped as if absent (None here: left out, never 0; decisions 0012, 0046), with an invalid-usage anomaly. The total
# is omitted either way.
TC34_CASES: list[tuple[str, bytes, int | float | None, int | float | None]] = [
    ("contradictory-total", b'{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 99}', 10, 2),
    ("negative-prompt", b'{"prompt_tokens": -1, "completion_tokens": 2}', None, 2),
    ("fractional-prompt", b'{"prompt_tokens": 1.5, "completion_tokens": 2}', None, 2),
    ("negative-completion", b'{"prompt_tokens": 2, "completion_tokens": -1}', 2, None),
    ("fractional-completion", b'{"prompt_tokens": 2, "completion_tokens": 1.5}', 2, None),
    (
        "unsafe-aggregate",
        b'{"prompt_tokens": %d, "completion_tokens": 1}' % MAX_SAFE_INTEGER,
        MAX_SAFE_INTEGER,
        1,
    ),
]


@pytest.mark.parametrize(
    ("wire", "prompt", "completion"),
    [case[1:] for case in TC34_CASES],
    ids=[case[0] for case in TC34_CASES],
)
def test_tc34_map_usage_omits_total_for_inconsistent_or_unsafe_input(
    wire: bytes, prompt: int | float | None, completion: int | float | None
) -> None:
    usage_json = map_usage(decode_usage(wire)).to_dict()

    assert usage_json == _known(input_tokens=prompt, output_tokens=completion)
    assert "total_tokens" not in usage_json


@pytest.mark.parametrize(
    ("wire", "prompt", "completion"),
    [case[1:] for case in TC34_CASES],
    ids=[case[0] for case in TC34_CASES],
)
def test_tc34_total_omitted_end_to_end(
    wire: bytes, prompt: int | float | None, completion: int | float | None
) -> None:
    payload = b'{"choices": [], "usage": ' + wire + b"}"
    out = run(sse(F, delta(content="x"), bare_finish("stop"), payload))

    assert out[-2:] == [{"type": "usage", "usage": _known(input_tokens=prompt, output_tokens=completion)},
                        finished("stop")]


def _known(**counts: int | float | None) -> Json:
    return {key: value for key, value in counts.items() if value is not None}


@pytest.mark.parametrize("wire", [b'{"completion_tokens": 2}', b"{}"], ids=["no-prompt", "no-counts"])
def test_tc34_total_omitted_when_prompt_tokens_absent(wire: bytes) -> None:
    assert "total_tokens" not in map_usage(decode_usage(wire)).to_dict()


def test_tc34_integral_float_counts_keep_the_exact_total() -> None:
    usage_json = map_usage(decode_usage(b'{"prompt_tokens": 10.0, "completion_tokens": 2}')).to_dict()

    assert usage_json.get("total_tokens") == 12


# -- X1 .. X8: extra cases derived from the rules -------------------------------------------------------------------


def test_x01_unterminated_last_event_without_done_is_stream_closed() -> None:
    """Diverges from the anchor's S5 only in form: no raise, a ``STREAM_CLOSED`` error finish. The unterminated tail
    (even one carrying a finish_reason) is truncation, not a response: it is discarded and closes nothing."""
    tail = json.dumps(delta(content="y", finish_reason="stop")).encode()
    data = sse(F, delta(content="x"), done=False) + b"data: " + tail

    out = run(data)

    assert out == [
        start(0, "text"),
        text_delta(0, "x"),
        failed("STREAM_CLOSED", "SSE stream ended without [DONE]"),
    ]
    assert [c["kind"] for c in of_type(run(data, anomalies=True), "anomaly")] == ["unterminated-event"]


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
def test_x02_utf8_character_split_across_two_reads_decodes_intact(char: str) -> None:
    text = f"a{char}b"
    data = sse(F, json.dumps(delta(content=text), ensure_ascii=False), finish("stop"))
    encoded = char.encode("utf-8")
    assert len(encoded) > 1
    at = data.index(encoded)

    for cut in range(1, len(encoded)):
        part1, part2 = data[: at + cut], data[at + cut :]
        with pytest.raises(UnicodeDecodeError):
            part1.decode("utf-8")

        out = [c.to_dict() for c in pipeline.collect([part1, part2])]

        assert out == [start(0, "text"), text_delta(0, text), end_text(0, text), finished("stop")]


def test_x03_comments_and_event_id_lines_yield_no_payload_and_data_lines_join() -> None:
    data = (
        b": keepalive\n"
        b"\n"
        b"event: message\n"
        b"id: 1\n"
        b"retry: 1000\n"
        b'data: {"choices": [{"index": 0,\n'
        b'data: "delta": {"content": "hi"}}]}\n'
        b"\n"
        b": ping\n"
        b"id: 2\n"
        b"\n"
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n'
        b"\n"
        b"data: [DONE]\n"
        b"\n"
    )

    out = run(data)

    assert out == [start(0, "text"), text_delta(0, "hi"), end_text(0, "hi"), finished("stop")]
    with_anomalies = run(data, anomalies=True)
    assert [c["kind"] for c in of_type(with_anomalies, "anomaly")] == ["comment", "comment"]
    assert [c for c in with_anomalies if c["type"] != "anomaly"] == out


def test_x03_joined_data_lines_are_one_payload_with_crlf_and_one_byte_reads() -> None:
    data = (
        b": keepalive\r\n\r\n"
        b'event: message\r\nid: 7\r\ndata: {"choices": [{"index": 0,\r\ndata: "delta": {"content": "hi"}}]}\r\n\r\n'
        b"data: [DONE]\r\n\r\n"
    )

    out = [c.to_dict() for c in pipeline.collect([data[i : i + 1] for i in range(len(data))])]

    assert out == [start(0, "text"), text_delta(0, "hi"), end_text(0, "hi"), finished("stop")]


def test_x03_crlf_split_by_an_empty_read_is_one_line_end() -> None:
    pieces = [
        b'data: {"choices": [{"index": 0,\r',
        b"",
        b'\ndata: "delta": {"content": "hi"}}]}\r\n\r\ndata: [DONE]\r\n\r\n',
    ]

    out = [c.to_dict() for c in pipeline.collect(pieces)]

    assert out == [start(0, "text"), text_delta(0, "hi"), end_text(0, "hi"), finished("stop")]


def test_x04_content_filter_after_text_is_an_error_finish_not_empty_response() -> None:
    out = run(sse(F, delta(content="partial"), finish("content_filter")))

    assert out == [
        start(0, "text"),
        text_delta(0, "partial"),
        end_text(0, "partial"),
        failed("CONTENT_FILTER", "model stopped: content_filter"),
    ]


def test_x05_tool_call_that_never_got_an_id_is_refused_after_the_usage() -> None:
    """Diverges from the anchor on purpose (D5 recommended, code changed): the anchor's recommendation names
    ``MALFORMED_RESPONSE``; we use the dedicated ``MALFORMED_TOOL_CALL`` (retryable by default), emitted after the
    pending usage and with no block-end at all, so no path can assemble a call without its id."""
    out = run(
        sse(
            F,
            tools(tool(0, name="Glob", arguments="")),
            tools(tool(0, arguments='{"pattern":"*"}')),
            finish("tool_calls"),
            usage(12, 3),
        )
    )

    assert out[:-1] == [
        start(0, "tool-call"),
        call_delta(0, "", "Glob", ""),
        call_delta(0, "", "Glob", '{"pattern":"*"}'),
        usage_chunk(12, 3, total_tokens=15),
    ]
    failure = failure_of(out)
    assert failure["code"] == "MALFORMED_TOOL_CALL"
    assert "wire index 0" in failure["message"]
    assert "no id" in failure["message"]
    assert "no name" not in failure["message"]
    assert pipeline.assemble(pipeline.collect(sse(F, tools(tool(0, name="Glob", arguments="{}"))))).tool_calls == ()


def test_x06_inband_error_mid_stream_is_a_server_error_finish() -> None:
    """Extension beyond the chat-completions anchor (E3, recommended): instead of a no-op (and a misleading
    ``EMPTY_RESPONSE`` or ``stop``), the in-band error ends the stream: the usage seen so far, then ``SERVER`` with
    the provider's message. No block is closed."""
    out = run(
        sse(
            F,
            delta(content="x"),
            usage(4, 1),
            {"error": {"message": "overloaded", "type": "server_error"}},
            delta(content="never read"),
            finish("stop"),
        )
    )

    assert out == [
        start(0, "text"),
        text_delta(0, "x"),
        usage_chunk(4, 1, total_tokens=5),
        failed("SERVER", "overloaded"),
    ]


@pytest.mark.parametrize(
    "payload",
    ["[1,2]", '{"choices":"x"}', '{"usage":{"prompt_tokens":"a","completion_tokens":1}}'],
    ids=["not-an-object", "choices-not-a-list", "non-numeric-count"],
)
def test_x07_wrong_shape_payload_is_malformed_response(payload: str) -> None:
    """Diverges from the anchor (fork variant raises): an error finish ``MALFORMED_RESPONSE`` quoting the payload."""
    out = run(sse(F, payload, delta(content="never read")))

    assert len(out) == 1
    failure = failure_of(out)
    assert failure["code"] == "MALFORMED_RESPONSE"
    assert failure["message"].startswith(f"malformed SSE payload: {payload}")


def test_x08_empty_official_reasoning_wins_over_the_alias() -> None:
    out = run(sse(delta(reasoning_content="", reasoning="x"), delta(content="y"), bare_finish("stop")))

    assert out == [start(0, "text"), text_delta(0, "y"), end_text(0, "y"), finished("stop")]


def test_x08_empty_official_reasoning_alone_is_an_empty_response() -> None:
    out = run(sse(delta(reasoning_content="", reasoning="x"), bare_finish("stop")))

    assert out == [EMPTY_RESPONSE_FINISH]
