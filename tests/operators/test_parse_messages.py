"""parse_messages_sse: the Messages API stream to the signals of parse_sse, one test per quirk; the rules after it are
the protocol rules, unchanged (docs/decisions/0024-messages-format.md)."""

from __future__ import annotations

import json
from typing import Any

from operators import (
    Anomaly,
    BlockEnd,
    Chunk,
    Code,
    Finish,
    Limits,
    ReasoningBlock,
    ReasoningDelta,
    TextDelta,
    ToolCallBlock,
    Usage,
    UsageChunk,
)
from operators.extend import Done, Halt
from operators.messages import parse_messages_sse
from pipeline.compose import apply, assemble, bytes_source, protocol_rules, to_chunks

Json = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------------------------------


def sse(*payloads: Json, named: bool = True) -> bytes:
    """One SSE event per payload, with an ``event:`` line naming its type unless ``named`` is False."""
    out = []
    for body in payloads:
        head = f"event: {body['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(body)}\n\n")
    return "".join(out).encode()


def start(usage: Json | None = None, **message: Any) -> Json:
    body: Json = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": None}
    body.update(usage=usage if usage is not None else {"input_tokens": 10, "output_tokens": 1}, **message)
    return {"type": "message_start", "message": body}


def block(index: int, **content_block: Any) -> Json:
    return {"type": "content_block_start", "index": index, "content_block": content_block}


def tool_use(index: int, id: Any = "toolu_1", name: Any = "Glob", **extra: Any) -> Json:
    return block(index, type="tool_use", id=id, name=name, input=extra.pop("input", {}), **extra)


def delta(index: int, **body: Any) -> Json:
    return {"type": "content_block_delta", "index": index, "delta": body}


def text(index: int, value: str) -> Json:
    return delta(index, type="text_delta", text=value)


def args(index: int, fragment: str) -> Json:
    return delta(index, type="input_json_delta", partial_json=fragment)


def stop(index: int) -> Json:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, usage: Json | None = None) -> Json:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": usage if usage is not None else {"output_tokens": 5},
    }


END: Json = {"type": "message_stop"}
SAID = (block(9, type="text", text=""), text(9, "ok"), stop(9))  # a response with no content is EMPTY_RESPONSE


def stream(*middle: Json, reason: str | None = "end_turn", usage: Json | None = None) -> list[Json]:
    return [start(), *middle, message_delta(reason, usage), END]


def chunks(data: bytes | list[bytes]) -> list[Chunk]:
    out: list[Chunk] = []
    source = bytes_source(data if isinstance(data, list) else [data])
    to_chunks(anomalies=True)(apply(parse_messages_sse()(source), protocol_rules())).subscribe(out.append)
    return out


def signals(data: bytes) -> list[Any]:
    out: list[Any] = []
    parse_messages_sse()(bytes_source([data])).subscribe(out.extend)
    return out


def anomalies(out: list[Chunk], kind: str) -> list[Anomaly]:
    return [c for c in out if isinstance(c, Anomaly) and c.kind == kind]


def finish(out: list[Chunk]) -> Finish:
    last = out[-1]
    assert isinstance(last, Finish)
    return last


def calls(out: list[Chunk]) -> list[ToolCallBlock]:
    return [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]


def plain(out: list[Chunk]) -> list[Chunk]:
    return [c for c in out if not isinstance(c, Anomaly)]


# -- tool calls ------------------------------------------------------------------------------------------------------


def test_identity_repeated_empty_or_null_in_a_later_start_keeps_the_first() -> None:
    out = chunks(
        sse(
            *stream(
                tool_use(0),
                tool_use(0, id="", name=None),
                args(0, '{"a":'),
                args(0, "1}"),
                stop(0),
                reason="tool_use",
            )
        )
    )
    assert calls(out) == [ToolCallBlock(id="toolu_1", name="Glob", arguments='{"a":1}')]
    assert anomalies(out, "repeated-block-start")
    assert anomalies(out, "empty-identity")
    assert finish(out).reason.kind == "tool-calls"


def test_a_never_identified_tool_use_is_malformed_after_the_usage_with_no_block_end() -> None:
    out = chunks(sse(*stream(tool_use(0, id=None), args(0, "{}"), stop(0), reason="tool_use")))
    assert not [c for c in out if isinstance(c, BlockEnd)]
    usage_at = next(i for i, c in enumerate(out) if isinstance(c, UsageChunk))
    assert usage_at < len(out) - 1
    assert finish(out).reason.code == Code.MALFORMED_TOOL_CALL


def test_input_given_whole_counts_once_at_the_block_stop() -> None:
    given = {"player": "p2", "n": [1, 2]}
    out = chunks(sse(*stream(tool_use(0, input=given), stop(0), reason="tool_use")))
    assert calls(out) == [ToolCallBlock(id="toolu_1", name="Glob", arguments='{"player":"p2","n":[1,2]}')]


def test_input_given_whole_then_deltas_counts_only_the_deltas() -> None:
    out = chunks(sse(*stream(tool_use(0, input={"x": 1}), args(0, '{"y":'), args(0, "2}"), stop(0))))
    assert calls(out)[0].arguments == '{"y":2}'


def test_a_tool_use_given_whole_in_message_start_is_one_call() -> None:
    whole = {"type": "tool_use", "id": "toolu_9", "name": "rollDie", "input": {"player": "player2"}}
    data = sse(start(content=[whole], stop_reason="tool_use"), END)
    out = chunks(data)
    assert calls(out) == [ToolCallBlock(id="toolu_9", name="rollDie", arguments='{"player":"player2"}')]
    assert finish(out).reason.kind == "tool-calls"


def test_deltas_are_matched_by_block_index_with_interleaved_blocks() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="text", text=""),
                tool_use(1, id="toolu_a", name="A"),
                tool_use(2, id="toolu_b", name="B"),
                args(2, '{"b":'),
                text(0, "hi"),
                args(1, '{"a":'),
                args(2, "2}"),
                args(1, "1}"),
                stop(2),
                stop(1),
                stop(0),
                reason="tool_use",
            )
        )
    )
    assert calls(out) == [
        ToolCallBlock(id="toolu_a", name="A", arguments='{"a":1}'),
        ToolCallBlock(id="toolu_b", name="B", arguments='{"b":2}'),
    ]
    assert [c.text for c in out if isinstance(c, TextDelta)] == ["hi"]


def test_max_tokens_cutting_a_tool_block_closes_it_with_the_partial_arguments_and_reports_it() -> None:
    # docs/decisions/0024-messages-format.md: the call is identified, so it is closed as a chat call cut by "length"
    out = chunks(sse(*stream(tool_use(0), args(0, '{"filename": "ta'), reason="max_tokens")))
    assert calls(out) == [ToolCallBlock(id="toolu_1", name="Glob", arguments='{"filename": "ta')]
    assert [a.index for a in anomalies(out, "unterminated-block")] == [0]
    assert finish(out).reason.kind == "max-tokens"


def test_an_empty_first_input_json_delta_gives_empty_arguments() -> None:
    out = chunks(sse(*stream(tool_use(0), args(0, ""), stop(0), reason="tool_use")))
    assert calls(out)[0].arguments == ""


# -- finish and errors -----------------------------------------------------------------------------------------------


def test_refusal_is_the_error_refusal() -> None:
    out = chunks(sse(*stream(block(0, type="text", text=""), text(0, "I can't"), stop(0), reason="refusal")))
    assert finish(out).reason.code == Code.REFUSAL


def test_pause_turn_is_the_error_pause_turn() -> None:
    assert finish(chunks(sse(*stream(reason="pause_turn")))).reason.code == "PAUSE_TURN"


def test_stop_sequence_and_end_turn_are_stop() -> None:
    for reason in ("end_turn", "stop_sequence"):
        assert finish(chunks(sse(*stream(*SAID, reason=reason)))).reason.kind == "stop"


def test_overloaded_error_is_server_named_or_data_only() -> None:
    error = {"type": "error", "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"}}
    for named in (True, False):
        out = chunks(sse(start(), block(0, type="text", text=""), text(0, "Hel"), error, named=named))
        reason = finish(out).reason
        assert reason.code == Code.SERVER
        assert reason.failure is not None
        assert "Overloaded" in reason.failure.message
        assert [c.text for c in out if isinstance(c, TextDelta)] == ["Hel"]
        assert any(isinstance(c, UsageChunk) for c in out)


def test_rate_limit_error_is_rate_limit() -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    assert finish(chunks(sse(error))).reason.code == Code.RATE_LIMIT


def test_a_malformed_payload_is_malformed_response() -> None:
    for body in (b"data: {not json\n\n", b'data: {"type":"content_block_delta","index":"x","delta":{}}\n\n'):
        assert finish(chunks(sse(start()) + body)).reason.code == Code.MALFORMED_RESPONSE


def test_a_cut_before_message_stop_is_stream_closed_after_the_usage() -> None:
    out = chunks(sse(start(), block(0, type="text", text=""), text(0, "Hi")))
    assert finish(out).reason.code == Code.STREAM_CLOSED
    assert [c.usage for c in out if isinstance(c, UsageChunk)] == [Usage(10, 1, total_tokens=11)]


def test_a_cut_after_a_stop_reason_is_a_stop_with_an_anomaly() -> None:
    out = chunks(sse(start(), block(0, type="text", text=""), text(0, "Hi"), stop(0), message_delta("end_turn")))
    assert finish(out).reason.kind == "stop"
    assert anomalies(out, "missing-message-stop")
    assert Done(synthetic=True) in signals(sse(start(), message_delta("end_turn")))


def test_a_last_event_without_its_blank_line_is_still_read() -> None:
    data = sse(*stream(block(0, type="text", text=""), text(0, "Hi"), stop(0)))
    out = chunks(data.rstrip(b"\n"))
    assert finish(out).reason.kind == "stop"
    assert not anomalies(out, "missing-message-stop")
    assert anomalies(out, "unterminated-event")


def test_a_last_line_cut_mid_json_is_discarded() -> None:
    data = sse(start(), block(0, type="text", text="")) + b'data: {"type":"message_st'
    assert finish(chunks(data)).reason.code == Code.STREAM_CLOSED


# -- usage -----------------------------------------------------------------------------------------------------------


def test_usage_merges_start_and_delta_field_by_field_with_cache_reads_and_writes() -> None:
    first = {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 1}
    later = {"input_tokens": None, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 7}}
    out = chunks(sse(start(usage=first), message_delta("end_turn", later), END))
    assert [c.usage for c in out if isinstance(c, UsageChunk)] == [
        Usage(10, 50, total_tokens=180, cache_read_tokens=100, cache_write_tokens=20, reasoning_tokens=7)
    ]


def test_a_later_input_count_in_message_delta_replaces_the_first() -> None:
    out = chunks(sse(start(usage={"input_tokens": 43, "output_tokens": 1}), message_delta("end_turn", {
        "input_tokens": 61, "output_tokens": 2}), END))
    assert [c.usage for c in out if isinstance(c, UsageChunk)] == [Usage(61, 2, total_tokens=63)]


# -- reasoning, server tools, the unknown ----------------------------------------------------------------------------


def reasoning_blocks(out: list[Chunk]) -> list[ReasoningBlock]:
    return [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ReasoningBlock)]


def test_a_thinking_block_keeps_its_signature_and_a_redacted_block_its_data() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="thinking", thinking="", signature=""),
                delta(0, type="thinking_delta", thinking="hmm"),
                delta(0, type="signature_delta", signature="SECRETSIG"),
                stop(0),
                block(1, type="redacted_thinking", data="OPAQUE"),
                stop(1),
            )
        )
    )
    assert [c.text for c in out if isinstance(c, ReasoningDelta)] == ["hmm"]
    assert reasoning_blocks(out) == [
        ReasoningBlock("hmm", signature="SECRETSIG"),
        ReasoningBlock("", encrypted="OPAQUE"),
    ]
    assert not any("SECRETSIG" in a.detail or "OPAQUE" in a.detail for a in out if isinstance(a, Anomaly))


def test_each_thinking_block_is_its_own_reasoning_block_with_its_own_signature() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="thinking", thinking="first"),
                delta(0, type="signature_delta", signature="SIG-A"),
                stop(0),
                block(1, type="text", text=""),
                text(1, "between"),
                stop(1),
                block(2, type="thinking", thinking="second", signature="SIG-B"),
                stop(2),
            )
        )
    )
    assert reasoning_blocks(out) == [
        ReasoningBlock("first", signature="SIG-A"),
        ReasoningBlock("second", signature="SIG-B"),
    ]
    assert assemble(out).reasoning == "firstsecond"


def test_a_signature_delta_replaces_the_signature_an_empty_one_leaves_it() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="thinking", thinking="t", signature="FROM-START"),
                delta(0, type="signature_delta", signature="FIRST"),
                delta(0, type="signature_delta", signature="SECOND"),
                delta(0, type="signature_delta", signature=""),
                stop(0),
            )
        )
    )
    assert reasoning_blocks(out) == [ReasoningBlock("t", signature="SECOND")]


def test_a_signature_that_is_not_a_string_is_an_anomaly_and_not_kept() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="thinking", thinking="t"),
                delta(0, type="signature_delta", signature=12),
                stop(0),
                block(1, type="redacted_thinking", data=None),
                stop(1),
            )
        )
    )
    assert reasoning_blocks(out) == [ReasoningBlock("t")]
    (invalid,) = anomalies(out, "invalid-reasoning")
    assert "int" in invalid.detail


def test_a_thinking_block_cut_before_its_stop_keeps_its_signature_at_message_stop() -> None:
    out = chunks(
        sse(
            start(),
            block(0, type="thinking", thinking="t"),
            delta(0, type="signature_delta", signature="SIG"),
            *SAID,
            message_delta("end_turn"),
            END,
        )
    )
    assert reasoning_blocks(out) == [ReasoningBlock("t", signature="SIG")]
    assert anomalies(out, "unterminated-block")


def test_server_tools_are_anomalies_never_tool_calls() -> None:
    out = chunks(
        sse(
            *stream(
                block(0, type="server_tool_use", id="srvtoolu_1", name="web_search", input={}),
                args(0, '{"query": "x"}'),
                stop(0),
                block(1, type="web_search_tool_result", tool_use_id="srvtoolu_1", content=[]),
                stop(1),
                block(2, type="mcp_tool_use", id="mcptoolu_1", name="echo", server_name="deepwiki", input={}),
                stop(2),
                *SAID,
            )
        )
    )
    assert not calls(out)
    details = [a.detail for a in anomalies(out, "server-tool")]
    assert len(details) == 3
    assert "web_search" in details[0]
    assert "deepwiki" in details[2]
    assert finish(out).reason.kind == "stop"


def test_unknown_events_blocks_and_deltas_are_anomalies() -> None:
    out = chunks(
        sse(
            *stream(
                {"type": "something_new", "x": 1},
                block(0, type="compaction", content=None),
                delta(0, type="compaction_delta", content="c"),
                stop(0),
                block(1, type="text", text=""),
                delta(1, type="citations_delta", citation={"url": "u"}),
                text(1, "cited"),
                stop(1),
            )
        )
    )
    kinds = {a.kind for a in out if isinstance(a, Anomaly)}
    assert {"unknown-event", "unknown-block", "unknown-delta", "citation"} <= kinds
    assert finish(out).reason.kind == "stop"


def test_ping_and_a_duplicate_message_start_change_nothing() -> None:
    plain_stream = stream(block(0, type="text", text=""), text(0, "Hi"), stop(0))
    noisy = [plain_stream[0], plain_stream[0], {"type": "ping"}, *plain_stream[1:]]
    out = chunks(sse(*noisy))
    assert plain(out) == plain(chunks(sse(*plain_stream)))
    assert anomalies(out, "duplicate-message-start")


def test_a_data_only_stream_reads_as_the_event_named_one() -> None:
    events = stream(block(0, type="text", text=""), text(0, "Hi"), stop(0), tool_use(1), args(1, "{}"), stop(1))
    assert chunks(sse(*events, named=False)) == chunks(sse(*events))


def test_an_event_name_that_disagrees_with_the_payload_type_is_an_anomaly_and_the_type_wins() -> None:
    data = sse(start()) + b"event: content_block_delta\n" + sse(block(0, type="text", text="Hi"), named=False)
    out = chunks(data + sse(stop(0), message_delta("end_turn"), END))
    assert anomalies(out, "event-mismatch")
    assert assemble(out).text == "Hi"


def test_the_parser_alone_ends_with_done_or_halt() -> None:
    assert isinstance(signals(sse(*stream()))[-1], Done)
    assert isinstance(signals(sse(start()))[-1], Halt)


def test_an_event_past_max_event_bytes_is_limit_exceeded() -> None:
    out: list[Any] = []
    data = sse(start(), block(0, type="text", text=""), text(0, "x" * 5000))
    parse_messages_sse(Limits(max_event_bytes=1024))(bytes_source([data])).subscribe(out.extend)
    last = out[-1]
    assert isinstance(last, Halt)
    assert last.failure.code == Code.LIMIT_EXCEEDED
