"""parse_gemini_sse: Gemini's streamGenerateContent to the signals of parse_sse, one test per rule of decision 0071;
the rules after it are the protocol rules, unchanged (docs/decisions/0071-gemini-format.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from operators import (
    DEFAULT_RETRYABLE_CODES,
    Anomaly,
    BlockEnd,
    Chunk,
    Code,
    Finish,
    Limits,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    Usage,
    UsageChunk,
    parse_stream,
)
from operators.extend import Done, Halt, ReasoningEnd, ToolCallSignature
from operators.gemini import parse_gemini_sse
from pipeline.compose import apply, bytes_source, protocol_rules, to_chunks

Json = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------------------------------


def sse(*payloads: Json | str, end: bytes = b"\r\n\r\n") -> bytes:
    """One data-only event per payload, CRLF CRLF between them as Google sends them."""
    return b"".join(b"data: " + (p if isinstance(p, str) else json.dumps(p)).encode() + end for p in payloads)


def event(*parts: Json, finish: str | None = None, usage: Json | None = None, **candidate: Any) -> Json:
    body: Json = {"candidates": [{"content": {"role": "model", "parts": list(parts)}, **candidate}]}
    if finish is not None:
        body["candidates"][0]["finishReason"] = finish
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def text(value: str, **extra: Any) -> Json:
    return {"text": value, **extra}


def thought(value: str, **extra: Any) -> Json:
    return {"text": value, "thought": True, **extra}


def call(name: Any = "get_weather", args: Any = None, **extra: Any) -> Json:
    body: Json = {"name": name} if name is not None else {}
    if args is not None:
        body["args"] = args
    body.update(extra.pop("fields", {}))
    return {"functionCall": body, **extra}


def piece(path: str, **value: Any) -> Json:
    return {"jsonPath": path, **value}


STOP = event(text(""), finish="STOP")


def chunks(data: bytes | list[bytes]) -> list[Chunk]:
    out: list[Chunk] = []
    source = bytes_source(data if isinstance(data, list) else [data])
    to_chunks(anomalies=True)(apply(parse_gemini_sse()(source), protocol_rules())).subscribe(out.append)
    return out


def signals(data: bytes) -> list[Any]:
    out: list[Any] = []
    parse_gemini_sse()(bytes_source([data])).subscribe(out.extend)
    return out


def anomalies(out: list[Chunk], kind: str) -> list[Anomaly]:
    return [c for c in out if isinstance(c, Anomaly) and c.kind == kind]


def finish(out: list[Chunk]) -> Finish:
    last = out[-1]
    assert isinstance(last, Finish)
    return last


def ended(out: list[Chunk]) -> list[Any]:
    return [c.block for c in out if isinstance(c, BlockEnd)]


def calls(out: list[Chunk]) -> list[ToolCallBlock]:
    return [b for b in ended(out) if isinstance(b, ToolCallBlock)]


def code(out: list[Chunk]) -> str | None:
    failure = finish(out).reason.failure
    return failure.code if failure is not None else None


# -- text, thoughts, candidates, parts -------------------------------------------------------------------------------


def test_text_parts_over_several_events_are_one_text_block_and_stop_is_stop() -> None:
    out = chunks(sse(event(text("Hel")), event(text("lo")), event(text(""), finish="STOP")))
    assert ended(out) == [TextBlock("Hello")]
    assert finish(out).reason.kind == "stop"


def test_thought_parts_are_reasoning_before_the_text() -> None:
    out = chunks(sse(event(thought("Let me ")), event(thought("think.")), event(text("Done.")), STOP))
    assert ended(out) == [ReasoningBlock("Let me think."), TextBlock("Done.")]


def test_only_candidate_zero_is_read_and_another_is_reported_once() -> None:
    other = {"content": {"parts": [{"text": "other"}]}, "index": 1}
    first = event(text("one"))
    first["candidates"].append(other)
    out = chunks(sse(first, {"candidates": [other]}, STOP))
    assert ended(out) == [TextBlock("one")]
    assert len(anomalies(out, "extra-choice")) == 1


def test_an_absent_candidate_index_is_candidate_zero() -> None:
    out = chunks(sse(event(text("hi"), index=0), event(text("!")), STOP))
    assert ended(out) == [TextBlock("hi!")]


def test_an_unsupported_part_is_an_anomaly_once_per_kind_not_an_error() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
    code_part = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    out = chunks(sse(event(text("see"), image, image, code_part), STOP))
    found = anomalies(out, "unsupported-part")
    assert [a.detail for a in found] == ["inlineData part not read", "executableCode part not read"]
    assert finish(out).reason.kind == "stop"


def test_crlf_cr_and_lf_framing_read_the_same() -> None:
    events = (event(text("a")), event(text("b")), STOP)
    crlf = chunks(sse(*events))
    assert chunks(sse(*events, end=b"\n\n")) == crlf
    assert chunks(sse(*events, end=b"\r\r")) == crlf


# -- function calls: identity, arguments ---------------------------------------------------------------------------


def test_a_call_without_an_id_gets_a_made_id_by_its_position_reported_by_an_anomaly() -> None:
    out = chunks(sse(event(call("a", {"x": 1}), call("b", {})), STOP))
    assert [c.id for c in calls(out)] == ["gemini-made-0", "gemini-made-1"]
    assert [a.detail for a in anomalies(out, "made-id")] == [
        "functionCall a had no id: gemini-made-0 made",
        "functionCall b had no id: gemini-made-1 made",
    ]


def test_a_wire_id_is_kept_exactly_and_counts_in_the_positions_of_made_ids() -> None:
    given = call("a", {}, fields={"id": "call-1"})
    prefixed = call("b", {}, fields={"id": "gemini-made-7"})
    out = chunks(sse(event(given, prefixed, call("c", {})), STOP))
    assert [c.id for c in calls(out)] == ["call-1", "gemini-made-7", "gemini-made-2"]
    assert len(anomalies(out, "made-id")) == 1


def test_stop_after_a_call_is_a_tool_calls_finish() -> None:
    out = chunks(sse(event(call("get_weather", {"city": "Paris"})), STOP))
    assert calls(out) == [ToolCallBlock("gemini-made-0", "get_weather", '{"city":"Paris"}')]
    assert finish(out).reason.kind == "tool-calls"


def test_args_are_one_compact_json_fragment_keys_in_wire_order() -> None:
    args = b'{"z": 1, "a": [true, "\xc3\xa9"]}'
    raw = b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":' + args + b"}}]}}]}\r\n\r\n"
    out = chunks(raw + sse(STOP))
    assert calls(out)[0].arguments == '{"z":1,"a":[true,"\u00e9"]}'
    fragments = [c for c in out if getattr(c, "type", None) == "tool-call-delta"]
    assert len(fragments) == 1


def test_a_call_with_neither_args_nor_partial_args_has_empty_object_arguments() -> None:
    assert calls(chunks(sse(event(call("read_theme")), STOP)))[0].arguments == "{}"


@pytest.mark.parametrize("name", [None, "", 7])
def test_a_nameless_call_ends_the_stream_with_malformed_tool_call_usage_first(name: Any) -> None:
    part = call(name, {"x": 1}) if name is not None else {"functionCall": {"args": {"x": 1}}}
    out = chunks(sse(event(text("hi"), part, usage={"promptTokenCount": 4, "candidatesTokenCount": 2}), STOP))
    assert code(out) == Code.MALFORMED_TOOL_CALL
    assert Code.MALFORMED_TOOL_CALL in DEFAULT_RETRYABLE_CODES
    assert "without a name" in (finish(out).reason.failure or pytest.fail("no failure")).message
    assert isinstance(out[-2], UsageChunk)
    assert out[-2].usage.input_tokens == 4
    assert calls(out) == []


def test_vertex_partial_args_build_the_arguments_and_the_call_is_emitted_whole_when_it_ends() -> None:
    out = chunks(
        sse(
            event(call("get_weather", fields={"willContinue": True})),
            event(
                {
                    "functionCall": {
                        "partialArgs": [piece("$.location", stringValue="Bos", willContinue=True)],
                        "willContinue": True,
                    }
                }
            ),
            event({"functionCall": {"partialArgs": [piece("$.location", stringValue="ton")], "willContinue": True}}),
            event(
                {
                    "functionCall": {
                        "partialArgs": [
                            piece("$.days", numberValue=3),
                            piece("$.metric", boolValue=True),
                            piece("$.note", nullValue={}),
                        ],
                        "willContinue": True,
                    }
                }
            ),
            event({"functionCall": {}}),
            STOP,
        )
    )
    assert calls(out) == [
        ToolCallBlock("gemini-made-0", "get_weather", '{"location":"Boston","days":3,"metric":true,"note":null}')
    ]
    assert finish(out).reason.kind == "tool-calls"


def test_partial_args_reach_nested_paths_and_int_values_written_as_strings() -> None:
    pieces = [piece("$.a.b", stringValue="x"), piece("$.list[1]", intValue="42"), piece("$['c d']", doubleValue=1.5)]
    out = chunks(sse(event(call("f", fields={"partialArgs": pieces})), STOP))
    assert json.loads(calls(out)[0].arguments) == {"a": {"b": "x"}, "list": [None, 42], "c d": 1.5}


def test_a_string_that_continues_keeps_its_call_open_and_the_same_id_continues_it() -> None:
    first = call(
        "search", fields={"id": "call-1", "partialArgs": [piece("$.q", stringValue="hello", willContinue=True)]}
    )
    second = call("search", fields={"id": "call-1", "partialArgs": [piece("$.q", stringValue=" world")]})
    seal = call("search", {"q": "hello world"}, fields={"id": "call-1"})
    out = chunks(sse(event(first), event(second), event(seal), STOP))
    assert calls(out) == [ToolCallBlock("call-1", "search", '{"q":"hello world"}')]
    assert len(anomalies(out, "repeated-call")) == 1


def test_a_named_call_while_one_streams_ends_the_first() -> None:
    out = chunks(
        sse(
            event(call("a", fields={"partialArgs": [piece("$.x", stringValue="1")], "willContinue": True})),
            event(call("b", fields={"partialArgs": [piece("$.y", stringValue="2")], "willContinue": True})),
            event(text("done")),
            STOP,
        )
    )
    assert [(c.id, c.name, c.arguments) for c in calls(out)] == [
        ("gemini-made-0", "a", '{"x":"1"}'),
        ("gemini-made-1", "b", '{"y":"2"}'),
    ]


def test_a_streamed_call_still_open_when_the_body_is_cut_is_not_emitted() -> None:
    out = chunks(sse(event(call("Tool", fields={"willContinue": True}))))
    assert [c for c in out if getattr(c, "type", None) == "tool-call-delta"] == []
    assert anomalies(out, "unfinished-call")
    assert code(out) == Code.STREAM_CLOSED


def test_streamed_arguments_past_max_arguments_bytes_end_the_stream_while_they_stream() -> None:
    more = {"partialArgs": [piece("$.a", stringValue="x" * 600, willContinue=True)], "willContinue": True}
    events = [event(call("f", fields={"willContinue": True})), *[event({"functionCall": more})] * 3, STOP]
    out: list[Any] = []
    parse_gemini_sse(Limits(max_arguments_bytes=1000))(bytes_source([sse(*events)])).subscribe(out.extend)
    assert isinstance(out[-1], Halt)
    assert out[-1].failure.code == Code.LIMIT_EXCEEDED
    assert "max_arguments_bytes" in out[-1].failure.message
    assert not any(getattr(s, "choices", None) for s in out)  # held, never emitted


# -- signatures ------------------------------------------------------------------------------------------------------


def test_a_thought_signature_on_a_thought_part_is_the_reasoning_blocks_signature() -> None:
    out = chunks(sse(event(thought("plan", thoughtSignature="sig-t")), event(text("ok")), STOP))
    assert ended(out) == [ReasoningBlock("plan", signature="sig-t"), TextBlock("ok")]


def test_a_signature_on_a_call_is_the_tool_call_blocks_signature_and_in_its_json() -> None:
    out = chunks(sse(event(call("f", {}, thoughtSignature="sig-c"), call("g", {})), STOP))
    first, second = calls(out)
    assert first.signature == "sig-c"
    assert second.signature is None
    assert first.to_dict()["signature"] == "sig-c"
    assert "signature" not in second.to_dict()


def test_the_call_signature_is_a_signal_at_the_calls_wire_index() -> None:
    found = [
        s
        for s in signals(sse(event(call("f", {}), call("g", {}, thoughtSignature="s2")), STOP))
        if isinstance(s, ToolCallSignature)
    ]
    assert found == [ToolCallSignature(1, "s2")]


def test_a_signature_on_a_streamed_call_stays_with_that_call() -> None:
    out = chunks(
        sse(
            event(call("Read", fields={"willContinue": True}, thoughtSignature="sig123")),
            event({"functionCall": {"partialArgs": [piece("$.path", stringValue="/tmp/x")], "willContinue": False}}),
            STOP,
        )
    )
    assert calls(out) == [ToolCallBlock("gemini-made-0", "Read", '{"path":"/tmp/x"}', signature="sig123")]


def test_a_signature_on_a_text_part_is_an_empty_reasoning_block_closed_after_that_text() -> None:
    out = chunks(sse(event(thought("think")), event(text("Hi", thoughtSignature="sig-x")), event(text(" there")), STOP))
    assert ended(out) == [
        ReasoningBlock("think"),
        TextBlock("Hi there"),
        ReasoningBlock("", signature="sig-x"),
    ]


def test_a_signature_on_an_empty_final_text_part_keeps_the_answer_stop() -> None:
    out = chunks(sse(event(text("Answer.")), event(text("", thoughtSignature="end-sig"), finish="STOP")))
    assert ended(out) == [TextBlock("Answer."), ReasoningBlock("", signature="end-sig")]
    assert finish(out).reason.kind == "stop"


def test_a_signature_on_a_thought_part_without_text_signs_the_open_reasoning_block() -> None:
    out = chunks(sse(event(thought("plan")), event({"thought": True, "thoughtSignature": "s-only"}), STOP))
    assert ended(out) == [ReasoningBlock("plan", signature="s-only")]


def test_the_parser_ends_reasoning_with_the_signature_it_came_on() -> None:
    out = signals(sse(event(thought("a", thoughtSignature="s")), STOP))
    assert ReasoningEnd(signature="s") in out


# -- finish ----------------------------------------------------------------------------------------------------------


def test_max_tokens_is_a_max_tokens_finish() -> None:
    assert finish(chunks(sse(event(text("cut sh"), finish="MAX_TOKENS")))).reason.kind == "max-tokens"


@pytest.mark.parametrize(
    "reason",
    [
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "LANGUAGE",
    ],
)
def test_the_safety_family_is_content_filter_naming_the_reason_and_finish_message(reason: str) -> None:
    out = chunks(sse(event(text("x"), finish=reason, finishMessage="why it stopped")))
    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.CONTENT_FILTER
    assert reason in failure.message
    assert "why it stopped" in failure.message
    assert Code.CONTENT_FILTER not in DEFAULT_RETRYABLE_CODES


def test_malformed_function_call_is_a_retryable_malformed_tool_call_carrying_the_finish_message() -> None:
    out = chunks(sse({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed: x("}]}))
    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.MALFORMED_TOOL_CALL
    assert "Malformed: x(" in failure.message


@pytest.mark.parametrize(
    "reason",
    ["UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "NO_IMAGE", "OTHER", "FINISH_REASON_UNSPECIFIED", "SOMETHING_NEW"],
)
def test_other_finish_reasons_are_unknown_errors_naming_the_wire_value(reason: str) -> None:
    failure = finish(chunks(sse(event(text("x"), finish=reason)))).reason.failure
    assert failure is not None
    assert failure.code == Code.UNKNOWN
    assert reason in failure.message


def test_a_blocked_prompt_is_content_filter_and_later_candidates_are_not_read() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}
    out = chunks(sse(blocked, event(text("late"), finish="STOP")))
    assert code(out) == Code.CONTENT_FILTER
    assert [c for c in out if getattr(c, "type", None) == "text-delta"] == []
    assert isinstance(out[-2], UsageChunk)
    assert out[-2].usage.input_tokens == 9


@pytest.mark.parametrize("reason", ["BLOCK_REASON_UNSPECIFIED", ""])
def test_a_default_block_reason_blocks_nothing(reason: str) -> None:
    out = chunks(sse({"promptFeedback": {"blockReason": reason}}, event(text("fine")), STOP))
    assert ended(out) == [TextBlock("fine")]


def test_a_body_cut_before_any_finish_reason_is_stream_closed_whatever_text_came() -> None:
    out = chunks(sse(event(text("a complete-looking answer."))))
    assert code(out) == Code.STREAM_CLOSED
    assert Code.STREAM_CLOSED in DEFAULT_RETRYABLE_CODES


def test_done_after_the_finish_ends_normally_and_before_it_is_a_cut() -> None:
    assert finish(chunks(sse(event(text("a")), STOP, "[DONE]"))).reason.kind == "stop"
    out = chunks(sse(event(text("a")), "[DONE]", STOP))
    assert code(out) == Code.STREAM_CLOSED
    assert "[DONE] came first" in (finish(out).reason.failure or pytest.fail("no failure")).message


def test_the_finish_comes_at_the_end_of_the_body_after_a_later_usage_event() -> None:
    out = signals(
        sse(event(text("hi"), finish="STOP"), {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}})
    )
    assert isinstance(out[-1], Done)
    last = out[-2]
    assert last.choices[0].finish_reason == "stop"
    assert last.usage.prompt_tokens == 3


# -- usage -----------------------------------------------------------------------------------------------------------


def test_usage_is_cumulative_the_last_value_of_each_field_never_a_sum() -> None:
    early = {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}
    late = {"promptTokenCount": 10, "candidatesTokenCount": 7, "thoughtsTokenCount": 5, "totalTokenCount": 22}
    out = chunks(
        sse(event(text("a"), usage=early), event(text("b"), usage=early), event(text(""), finish="STOP", usage=late))
    )
    usage = next(c.usage for c in out if isinstance(c, UsageChunk))
    assert usage == Usage(input_tokens=10, output_tokens=12, total_tokens=22, reasoning_tokens=5)


def test_usage_maps_cache_and_thoughts_and_leaves_tool_use_prompt_out() -> None:
    counts = {
        "promptTokenCount": 12,
        "cachedContentTokenCount": 4,
        "candidatesTokenCount": 71,
        "thoughtsTokenCount": 89,
        "toolUsePromptTokenCount": 65,
        "totalTokenCount": 237,
    }
    out = chunks(sse(event(text("x"), finish="STOP", usage=counts)))
    usage = next(c.usage for c in out if isinstance(c, UsageChunk))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.reasoning_tokens) == (8, 4, 160, 89)


def test_a_count_the_wire_does_not_give_is_absent_never_zero() -> None:
    out = chunks(sse(event(text("x"), finish="STOP", usage={"promptTokenCount": 5})))
    usage = next(c.usage for c in out if isinstance(c, UsageChunk))
    assert usage.input_tokens == 5
    assert usage.output_tokens is None
    assert usage.reasoning_tokens is None


def test_an_invalid_later_count_keeps_the_earlier_valid_one() -> None:
    out = chunks(
        sse(
            event(text("x"), usage={"promptTokenCount": 5, "candidatesTokenCount": 1}),
            event(text(""), finish="STOP", usage={"promptTokenCount": -3, "candidatesTokenCount": 2}),
        )
    )
    usage = next(c.usage for c in out if isinstance(c, UsageChunk))
    assert (usage.input_tokens, usage.output_tokens) == (5, 2)
    assert anomalies(out, "invalid-usage")


def test_no_usage_metadata_reports_no_usage() -> None:
    assert [c for c in chunks(sse(event(text("x")), STOP)) if isinstance(c, UsageChunk)] == []


# -- errors ----------------------------------------------------------------------------------------------------------


# These hold with today's classifier (the numeric code) and with google.rpc statuses (helper gerr's
# RESOURCE_EXHAUSTED -> RATE_LIMIT, UNAVAILABLE -> SERVER, INVALID_ARGUMENT -> INVALID_REQUEST).
@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}, Code.RATE_LIMIT),
        ({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}, Code.SERVER),
        ({"code": 400, "message": "Bad field.", "status": "INVALID_ARGUMENT"}, Code.INVALID_REQUEST),
    ],
)
def test_an_in_band_error_is_classified_after_the_usage(error: Json, expected: str) -> None:
    out = chunks(sse(event(text("partial"), usage={"promptTokenCount": 3}), {"error": error}))
    assert code(out) == expected
    assert isinstance(out[-2], UsageChunk)


def test_a_payload_that_is_not_a_gemini_object_is_malformed() -> None:
    assert code(chunks(sse(event(text("a")), '{"candidates": 5}'))) == Code.MALFORMED_RESPONSE
    assert code(chunks(sse("[1, 2]"))) == Code.MALFORMED_RESPONSE


@pytest.mark.parametrize(
    ("payload", "seen"),
    [
        ({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "x"}}]}, "chat"),
        ({"type": "message_start", "message": {"id": "m"}}, "messages"),
        ({"type": "response.created", "response": {}}, "responses"),
    ],
)
def test_another_formats_payload_read_as_gemini_names_the_format(payload: Json, seen: str) -> None:
    failure = finish(chunks(sse(payload))).reason.failure
    assert failure is not None
    assert failure.code == Code.MALFORMED_RESPONSE
    assert f"format={seen!r}" in failure.message
    assert "read as Gemini" in failure.message


# -- splits ----------------------------------------------------------------------------------------------------------

RICH = sse(
    event(thought("Plan ", thoughtSignature="sig-t"), usage={"promptTokenCount": 7}),
    event(text("Héllo wörld"), call("a", {"k": "v"}, thoughtSignature="sig-c")),
    event(call("b", fields={"willContinue": True, "partialArgs": [piece("$.q", stringValue="x", willContinue=True)]})),
    event({"functionCall": {"partialArgs": [piece("$.q", stringValue="yz")]}}),
    event(text("", thoughtSignature="sig-e"), finish="STOP", usage={"promptTokenCount": 7, "candidatesTokenCount": 9}),
    {"usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 11}},
)


def test_identical_chunks_at_every_read_split() -> None:
    whole = chunks(RICH)
    assert finish(whole).reason.kind == "tool-calls"
    for at in range(1, len(RICH)):
        assert chunks([RICH[:at], RICH[at:]]) == whole, at
    assert chunks([RICH[i : i + 1] for i in range(len(RICH))]) == whole


def test_detection_reads_a_gemini_first_event_as_gemini() -> None:
    detected: list[Any] = []
    parse_stream()(bytes_source([RICH[:5], RICH[5:]])).subscribe(detected.extend)
    assert detected == signals(RICH)
    assert [s for s in detected if isinstance(s, Halt)] == []
