"""parse_responses_sse: the Responses API stream to the signals of parse_sse, one test per quirk.

Each stream is built from small event builders and run through the whole rule chain, so the tests state what a
caller sees (chunks, the assembled message), and a few look at the parser's own signals."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex

import pipeline
from operators import Anomaly, BlockEnd, BlockStart, Chunk, Code, Finish, ReasoningBlock, Usage, UsageChunk
from operators.extend import Batch, Done, Halt
from operators.responses import parse_responses_sse
from operators.wire import WireChunk
from pipeline.compose import apply, bytes_source, protocol_rules, to_chunks

Json = dict[str, Any]

USAGE: Json = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}


# -- builders --------------------------------------------------------------------------------------------------------


def ev(kind: str, *, named: bool = True, **fields: Any) -> bytes:
    """One Responses event: ``event: <kind>`` (unless ``named`` is False, as OpenRouter sends) and its payload."""
    data = json.dumps({"type": kind, **fields}, ensure_ascii=False)
    return (f"event: {kind}\n" if named else "").encode() + f"data: {data}\n\n".encode()


def text(delta: str, index: int = 0) -> bytes:
    return ev("response.output_text.delta", output_index=index, content_index=0, item_id="msg_1", delta=delta)


def call_item(index: int, *, done: bool = False, call_id: Any = "call_1", name: Any = "Glob",
              arguments: str = "", item_id: str = "fc_1") -> bytes:
    kind = "response.output_item.done" if done else "response.output_item.added"
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments}
    return ev(kind, output_index=index, item=item)


def args_delta(index: int, delta: str, item_id: str = "fc_1") -> bytes:
    return ev("response.function_call_arguments.delta", output_index=index, item_id=item_id, delta=delta)


def args_done(index: int, arguments: str, item_id: str = "fc_1") -> bytes:
    return ev("response.function_call_arguments.done", output_index=index, item_id=item_id, arguments=arguments)


def completed(usage: Json | None = USAGE, kind: str = "response.completed", **response: Any) -> bytes:
    return ev(kind, response={"status": kind.rpartition(".")[2], "usage": usage, **response})


def chunks(*events: bytes) -> list[Chunk]:
    out: list[Chunk] = []
    source = parse_responses_sse()(bytes_source(b"".join(events)))
    to_chunks(anomalies=True)(apply(source, protocol_rules())).subscribe(on_next=out.append)
    return out


def assembled(*events: bytes) -> pipeline.AssistantMessage:
    return pipeline.assemble(c for c in chunks(*events) if not isinstance(c, Anomaly))


def signals(*events: bytes) -> list[Any]:
    batches: list[Batch[Any]] = []
    parse_responses_sse()(reactivex.of(b"".join(events))).subscribe(on_next=batches.append)
    return [signal for batch in batches for signal in batch]


def arguments_of(chunk: WireChunk) -> object:
    """The arguments of the one tool call a parser chunk carries, if any."""
    delta = chunk.choices[0].delta if chunk.choices else None
    calls = delta.tool_calls if delta is not None else None
    function = calls[0].function if calls else None
    return function.arguments if function is not None else None


def anomalies(out: list[Chunk]) -> list[str]:
    return [c.kind for c in out if isinstance(c, Anomaly)]


def finish_of(out: list[Chunk]) -> Finish:
    last = out[-1]
    assert isinstance(last, Finish)
    return last


# -- text, reasoning, finish -----------------------------------------------------------------------------------------


def test_text_deltas_assemble_and_completed_is_stop() -> None:
    message = assembled(ev("response.created", response={}), text("Hel"), text("lo"), completed())

    assert message.text == "Hello"
    assert message.finish.kind == "stop"


def test_events_without_event_lines_are_read_from_their_type_and_trailing_done_is_ignored() -> None:
    out = chunks(ev("response.output_text.delta", named=False, delta="hi"),
                 ev("response.completed", named=False, response={"usage": USAGE}), b"data: [DONE]\n\n")

    assert finish_of(out).reason.kind == "stop"
    assert "payload-after-done" not in anomalies(out)


def test_reasoning_summary_and_raw_reasoning_text_are_reasoning() -> None:
    message = assembled(ev("response.reasoning_summary_text.delta", output_index=0, delta="**Plan** "),
                        ev("response.reasoning_text.delta", output_index=0, delta="think"), text("ok", 1),
                        completed())

    assert message.reasoning == "**Plan** think"
    assert message.text == "ok"


def test_a_reasoning_item_keeps_its_id_and_encrypted_content_on_its_block() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-secret"}
    out = chunks(ev("response.reasoning_summary_text.delta", output_index=0, delta="plan"),
                 ev("response.output_item.done", output_index=0, item=item), text("ok", 1), completed())

    ends = [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ReasoningBlock)]
    assert ends == [ReasoningBlock("plan", encrypted="gAAAA-secret", item_id="rs_1")]
    assert not any("secret" in c.detail for c in out if isinstance(c, Anomaly))


def test_encrypted_reasoning_without_a_summary_is_a_block_of_its_own() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    out = chunks(ev("response.output_item.done", output_index=0, item=item), text("ok", 1), completed())

    ends = [c.block for c in out if isinstance(c, BlockEnd)]
    assert ends[0] == ReasoningBlock("", encrypted="gAAAA", item_id="rs_1")


def test_a_reasoning_item_with_only_its_id_opens_no_block() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": []}
    out = chunks(ev("response.output_item.done", output_index=0, item=item), text("ok", 1), completed())

    assert [c.block_type for c in out if isinstance(c, BlockStart)] == ["text"]


def test_two_reasoning_items_are_two_blocks() -> None:
    first = {"type": "reasoning", "id": "rs_1", "summary": []}
    second = {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "E2"}
    out = chunks(ev("response.reasoning_summary_text.delta", output_index=0, delta="one"),
                 ev("response.output_item.done", output_index=0, item=first),
                 ev("response.reasoning_summary_text.delta", output_index=1, delta="two"),
                 ev("response.output_item.done", output_index=1, item=second), text("ok", 2), completed())

    ends = [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ReasoningBlock)]
    assert ends == [ReasoningBlock("one", item_id="rs_1"), ReasoningBlock("two", encrypted="E2", item_id="rs_2")]


def test_incomplete_max_output_tokens_is_max_tokens() -> None:
    message = assembled(text("Hello,"), completed(kind="response.incomplete",
                                                  incomplete_details={"reason": "max_output_tokens"}))

    assert message.finish.kind == "max-tokens"
    assert message.usage is not None


def test_incomplete_content_filter_is_an_error_content_filter() -> None:
    incomplete = completed(kind="response.incomplete", incomplete_details={"reason": "content_filter"})
    message = assembled(text("Hel"), incomplete)

    assert message.finish.code == Code.CONTENT_FILTER


def test_refusal_delta_ends_with_error_refusal_carrying_its_text() -> None:
    message = assembled(ev("response.refusal.delta", output_index=0, delta="I can't help"), completed())

    assert message.finish.code == Code.REFUSAL
    assert message.finish.failure is not None
    assert message.finish.failure.message == "I can't help"


# -- usage -----------------------------------------------------------------------------------------------------------


def test_usage_with_cached_and_reasoning_tokens_is_disjoint() -> None:
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 10},
             "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 130}
    message = assembled(text("hi"), completed(usage))

    assert message.usage == Usage(input_tokens=30, output_tokens=30, total_tokens=130, cache_read_tokens=60,
                                  cache_write_tokens=10, reasoning_tokens=20)


# -- function calls --------------------------------------------------------------------------------------------------


def test_function_call_streams_arguments_and_completed_is_tool_calls() -> None:
    message = assembled(call_item(0), args_delta(0, '{"a"'), args_delta(0, ":1}"), args_done(0, '{"a":1}'),
                        call_item(0, done=True, arguments='{"a":1}'), completed())

    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_1", "Glob", '{"a":1}')]
    assert message.finish.kind == "tool-calls"


def test_late_call_id_on_output_item_done_is_accepted() -> None:
    message = assembled(call_item(0, call_id=""), args_delta(0, "{}"), call_item(0, done=True, arguments="{}"),
                        completed())

    assert [(c.id, c.name) for c in message.tool_calls] == [("call_1", "Glob")]


def test_a_different_call_id_on_done_keeps_the_first_and_is_reported() -> None:
    out = chunks(call_item(0, call_id="call_a"), args_delta(0, "{}"), call_item(0, done=True, call_id="call_b"),
                 completed())

    ends = [c.block for c in out if isinstance(c, BlockEnd)]
    assert [getattr(b, "id", None) for b in ends] == ["call_a"]
    assert "conflicting-identity" in anomalies(out)


def test_rotated_item_ids_are_matched_by_output_index() -> None:
    message = assembled(call_item(1, item_id="id-1"), args_delta(1, '{"q"', item_id="id-2"),
                        args_delta(1, ':"x"}', item_id="id-3"), args_done(1, '{"q":"x"}', item_id="id-4"),
                        call_item(1, done=True, arguments='{"q":"x"}', item_id="id-5"), completed())

    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_1", "Glob", '{"q":"x"}')]


def test_arguments_only_in_done_events_count_once() -> None:
    out = chunks(call_item(0), args_done(0, '{"a":1}'), call_item(0, done=True, arguments='{"a":1}'), completed())
    message = pipeline.assemble(c for c in out if not isinstance(c, Anomaly))

    assert [c.arguments for c in message.tool_calls] == ['{"a":1}']
    wire = signals(call_item(0), args_done(0, '{"a":1}'), call_item(0, done=True, arguments='{"a":1}'))
    assert [arguments_of(s) for s in wire if isinstance(s, WireChunk)].count('{"a":1}') == 1


def test_never_identified_function_call_is_malformed_after_the_usage_with_no_block_end() -> None:
    out = chunks(call_item(0, call_id="", name=""), args_delta(0, "{}"),
                 call_item(0, done=True, call_id="", name="", arguments="{}"), completed())

    assert not [c for c in out if isinstance(c, BlockEnd)]
    kinds = [type(c) for c in out if not isinstance(c, Anomaly)]
    assert kinds[-2:] == [UsageChunk, Finish]
    assert finish_of(out).reason.code == Code.MALFORMED_TOOL_CALL


# -- errors and the end ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "code"),
    [
        pytest.param(ev("error", error={"type": "server_error", "code": "server_error", "message": "boom"}),
                     Code.SERVER, id="nested-server-error"),
        pytest.param(ev("error", code="rate_limit_exceeded", message="Rate limit reached", param=None),
                     Code.RATE_LIMIT, id="flat-rate-limit"),
        pytest.param(ev("error", error={"type": "insufficient_quota", "code": "insufficient_quota",
                                        "message": "You exceeded your current quota"}),
                     Code.QUOTA, id="nested-quota"),
        pytest.param(ev("response.failed", response={"error": {"code": "server_error", "message": "failed"}}),
                     Code.SERVER, id="failed-server-error"),
        pytest.param(ev("response.failed", response={"error": {"code": "rate_limit_exceeded", "message": "slow"}}),
                     Code.RATE_LIMIT, id="failed-rate-limit"),
        pytest.param(ev("response.failed", response={"error": {"code": "insufficient_quota", "message": "pay"}}),
                     Code.QUOTA, id="failed-quota"),
    ],
)
def test_failed_and_error_events_are_classified(event: bytes, code: str) -> None:
    message = assembled(text("partial"), event)

    assert message.finish.kind == "error"
    assert message.finish.code == code


def test_failed_reports_its_usage_before_the_error() -> None:
    out = chunks(text("x"), ev("response.failed", response={"usage": USAGE, "error": {"code": "server_error",
                                                                                        "message": "failed"}}))

    assert [type(c) for c in out if isinstance(c, (UsageChunk, Finish))] == [UsageChunk, Finish]


def test_a_cut_before_the_terminal_event_is_stream_closed() -> None:
    message = assembled(text("Hel"), call_item(1), args_delta(1, "{"))

    assert message.finish.code == Code.STREAM_CLOSED


def test_an_unterminated_terminal_event_is_still_read() -> None:
    out = chunks(text("hi"), completed().rstrip(b"\n"))

    assert finish_of(out).reason.kind == "stop"
    assert "unterminated-event" in anomalies(out)


def test_a_terminal_event_cut_mid_json_is_discarded_and_the_stream_closed() -> None:
    cut = completed()[:-12]
    out = chunks(text("hi"), cut)

    assert finish_of(out).reason.code == Code.STREAM_CLOSED
    assert "unterminated-event" in anomalies(out)


def test_malformed_payload_halts_with_malformed_response() -> None:
    [halt] = [s for s in signals(b"data: {not json\n\n") if isinstance(s, Halt)]

    assert halt.failure.code == Code.MALFORMED_RESPONSE


def test_terminal_event_gives_done() -> None:
    assert isinstance(signals(text("x"), completed())[-1], Done)


# -- anomalies, never errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("item_type", ["web_search_call", "code_interpreter_call", "mcp_call", "tool_search_call"])
def test_server_tools_are_anomalies_not_tool_calls(item_type: str) -> None:
    item = {"type": item_type, "id": "ws_1", "status": "in_progress"}
    out = chunks(ev("response.output_item.added", output_index=0, item=item),
                 ev(f"response.{item_type}.in_progress", output_index=0, item_id="ws_1"),
                 ev("response.output_item.done", output_index=0, item=item), text("found", 1), completed())
    message = pipeline.assemble(c for c in out if not isinstance(c, Anomaly))

    assert message.tool_calls == ()
    assert message.finish.kind == "stop"
    [anomaly] = [c for c in out if isinstance(c, Anomaly) and c.kind == "server-tool"]
    assert item_type in anomaly.detail


@pytest.mark.parametrize("item_type", ["tool_search_call", "brand_new_call"])
def test_a_response_waiting_on_an_item_it_cannot_carry_ends_unsupported_output_after_its_usage(item_type: str) -> None:
    # a client-run tool_search_call, and an item type the library does not know (decisions 0045, 0072)
    item = {"type": item_type, "id": "it_1", "call_id": "call_1", "name": "x", "execution": "client"}
    out = chunks(text("Running it."), ev("response.output_item.added", output_index=1, item=item),
                 ev("response.output_item.done", output_index=1, item=item), completed())

    finish = finish_of(out)
    assert finish.reason.code == Code.UNSUPPORTED_OUTPUT
    assert finish.reason.failure is not None
    assert item_type in finish.reason.failure.message
    assert isinstance(out[-2], UsageChunk)
    assert not any(isinstance(c, BlockEnd) for c in out)
    assert "unsupported-item" in anomalies(out)
    assert Code.UNSUPPORTED_OUTPUT not in (pipeline.RetryPolicy().retryable_codes or ())


def test_unknown_events_are_anomalies() -> None:
    out = chunks(text("a"), ev("response.brand_new.delta", delta="?"), text("b"), completed())

    assert "unknown-event" in anomalies(out)
    assert finish_of(out).reason.kind == "stop"


def test_an_unknown_event_of_any_shape_is_an_anomaly_not_malformed() -> None:
    out = chunks(text("a"), ev("response.audio.delta", delta={"b64": "AAAA"}, output_index="x"), completed())

    assert "unknown-event" in anomalies(out)
    assert finish_of(out).reason.kind == "stop"


def test_a_known_event_of_the_wrong_shape_is_malformed() -> None:
    message = assembled(text("a"), ev("response.output_text.delta", output_index=0, delta=["not", "text"]))

    assert message.finish.code == Code.MALFORMED_RESPONSE


def test_item_done_without_output_index_is_matched_by_its_item_id() -> None:
    done = ev("response.output_item.done",
              item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "Glob", "arguments": "{}"})
    message = assembled(call_item(0, call_id=""), args_delta(0, "{}"), done, completed())

    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_1", "Glob", "{}")]
