"""Where a stream ends, and of which format it is (issue 22; decisions 0043-0045): ``[DONE]`` where a format's own end
event is missing, usage before every failure, a second message inside a message, a client ``tool_search_call``, and
a stream of another format than the one read. Each through the whole rule chain, as a caller sees it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import MESSAGES_STREAMS, REAL_STREAMS, RESPONSES_STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators import (
    DEFAULT_RETRYABLE_CODES,
    Anomaly,
    BlockEnd,
    Chunk,
    Code,
    Finish,
    Limits,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
    parse_stream,
)
from pipeline.compose import apply, bytes_source, protocol_rules, to_chunks

Json = dict[str, Any]


def sse(*payloads: Json | str) -> bytes:
    return b"".join(
        f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n".encode() for p in payloads
    )


def chunks(data: bytes, fmt: Any, limits: Limits | None = None) -> list[Chunk]:
    out: list[Chunk] = []
    source = parse_stream(fmt, limits)(bytes_source([data]))
    to_chunks(anomalies=True)(apply(source, protocol_rules())).subscribe(out.append)
    return out


def finish(out: list[Chunk]) -> Finish:
    assert isinstance(out[-1], Finish)
    return out[-1]


def kinds(out: list[Chunk]) -> list[str]:
    return [c.kind for c in out if isinstance(c, Anomaly)]


def plain(out: list[Chunk]) -> list[Chunk]:
    return [c for c in out if not isinstance(c, Anomaly)]


def usage_then_finish(out: list[Chunk]) -> Usage:
    """The usage chunk, which must come right before the finish."""
    usage = list(plain(out))[-2]
    assert isinstance(usage, UsageChunk), plain(out)[-3:]
    return usage.usage


# -- Messages ------------------------------------------------------------------------------------------------------


def start(id: str = "msg_1", input_tokens: int = 100) -> Json:
    message: Json = {"id": id, "type": "message", "role": "assistant", "content": [], "stop_reason": None,
                     "usage": {"input_tokens": input_tokens, "output_tokens": 1}}
    return {"type": "message_start", "message": message}


def tool(index: int, id: str) -> list[Json]:
    return [
        {"type": "content_block_start", "index": index,
         "content_block": {"type": "tool_use", "id": id, "name": "query", "input": {}}},
        {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": '{"q"'}},
        {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ":1}"}},
        {"type": "content_block_stop", "index": index},
    ]


STOP_REASON: Json = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 50}}
TOOL_TURN = [start(), *tool(0, "toolu_1"), STOP_REASON]


def test_a_trailing_done_where_message_stop_is_missing_ends_a_tool_turn_with_its_calls_and_usage() -> None:
    with_done = chunks(sse(*TOOL_TURN, "[DONE]"), "messages")
    with_stop = chunks(sse(*TOOL_TURN, {"type": "message_stop"}), "messages")

    assert plain(with_done) == plain(with_stop)
    assert finish(with_done).reason.kind == "tool-calls"
    calls = [c.block for c in with_done if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert [(c.id, c.arguments) for c in calls] == [("toolu_1", '{"q":1}')]
    assert usage_then_finish(with_done) == Usage(input_tokens=100, output_tokens=50, total_tokens=150)
    assert kinds(with_done) == ["missing-message-stop"]


def test_done_before_any_stop_reason_is_a_cut_stream_after_its_usage_and_ends_the_reading() -> None:
    out = chunks(sse(start(), *tool(0, "toolu_1"), "[DONE]", STOP_REASON, {"type": "message_stop"}), "messages")

    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.STREAM_CLOSED
    assert "[DONE]" in failure.message
    assert usage_then_finish(out) == Usage(input_tokens=100, output_tokens=1, total_tokens=101)


MALFORMED = "{not json"
ERROR: Json = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}


@pytest.mark.parametrize(
    ("tail", "limits", "code"),
    [
        ([MALFORMED], None, Code.MALFORMED_RESPONSE),
        ([ERROR], None, Code.SERVER),
        ([], None, Code.STREAM_CLOSED),
        ([{"type": "ping", "pad": "x" * 400}], Limits(max_event_bytes=300), Code.LIMIT_EXCEEDED),
        ([{"choices": []}], None, Code.MALFORMED_RESPONSE),
    ],
    ids=["malformed", "in-band-error", "cut", "limit-exceeded", "another-format"],
)
def test_every_messages_failure_comes_after_the_usage_known_so_far(
    tail: list[Json | str], limits: Limits | None, code: str
) -> None:
    out = chunks(sse(start(input_tokens=7), *tail), "messages", limits)

    assert finish(out).reason.code == code
    assert usage_then_finish(out) == Usage(input_tokens=7, output_tokens=1, total_tokens=8)


def test_a_second_message_inside_the_open_one_is_a_cut_stream_not_one_merged_answer() -> None:
    first = [start("msg_first"), *tool(0, "toolu_first")[:2]]  # its arguments cut at '{"q"'
    second = [start("msg_second", input_tokens=5), *tool(0, "toolu_second"), STOP_REASON, {"type": "message_stop"}]
    out = chunks(sse(*first, *second), "messages")

    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.STREAM_CLOSED
    assert "msg_second" in failure.message
    assert "msg_first" in failure.message
    assert failure.code in DEFAULT_RETRYABLE_CODES
    assert kinds(out) == ["message-restarted"]
    assert usage_then_finish(out) == Usage(input_tokens=100, output_tokens=1, total_tokens=101)
    assert not [c for c in out if isinstance(c, BlockEnd)]
    assert {c.id for c in out if isinstance(c, ToolCallDelta)} == {"toolu_first"}


def test_a_repeated_message_start_of_the_same_message_is_still_a_duplicate() -> None:
    out = chunks(sse(start(), start(), *tool(0, "toolu_1"), STOP_REASON, {"type": "message_stop"}), "messages")

    assert finish(out).reason.kind == "tool-calls"
    assert kinds(out) == ["duplicate-message-start"]


# -- Responses -----------------------------------------------------------------------------------------------------


def item(kind: str, **fields: Any) -> Json:
    return {"type": "response.output_item.added", "output_index": 0, "item": {"type": kind, "id": "x_1", **fields}}


COMPLETED: Json = {"type": "response.completed",
                   "response": {"status": "completed", "usage": {"input_tokens": 9, "output_tokens": 3}}}


def test_a_client_executed_tool_search_call_is_an_item_to_act_on_not_retried() -> None:
    out = chunks(sse(item("tool_search_call", execution="client", arguments={"goal": "weather"}), COMPLETED),
                 "responses")

    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.UNSUPPORTED_OUTPUT
    assert "tool_search_call (execution client)" in failure.message
    assert failure.code not in DEFAULT_RETRYABLE_CODES
    assert kinds(out) == ["unsupported-item"]
    assert usage_then_finish(out) == Usage(input_tokens=9, output_tokens=3, total_tokens=12)


def test_a_tool_search_call_the_provider_runs_stays_a_server_tool() -> None:
    out = chunks(sse(item("tool_search_call", execution="server"), COMPLETED), "responses")

    assert kinds(out) == ["server-tool"]
    assert finish(out).reason.code == Code.EMPTY_RESPONSE  # nothing the client can use: as before (decision 0025)


def test_done_before_the_terminal_event_ends_a_responses_stream_there() -> None:
    text = {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}
    out = chunks(sse(text, "[DONE]", COMPLETED), "responses")

    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.STREAM_CLOSED
    assert "[DONE]" in failure.message


# -- a stream of another format --------------------------------------------------------------------------------------

STREAMS = {
    "chat": sorted(REAL_STREAMS.glob("*.sse"))[0],
    "messages": MESSAGES_STREAMS / "35-vercel-ai-programmatic-tool-call.sse",
    "responses": RESPONSES_STREAMS / "02-vercel-ai-reasoning-summary-function-call.sse",
}
NAMES = {"chat": "a chat-completions stream", "messages": "a Messages", "responses": "a Responses stream"}


@pytest.mark.parametrize(
    ("seen", "read_as"), [(a, b) for a in STREAMS for b in STREAMS if a != b], ids=lambda value: str(value)
)
def test_a_stream_of_another_format_is_named_and_not_retried(seen: str, read_as: str) -> None:
    out = chunks(STREAMS[seen].read_bytes(), read_as)

    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == Code.MALFORMED_RESPONSE
    assert failure.message.startswith(NAMES[seen])
    assert f"format={seen!r}" in failure.message
    assert failure.code not in DEFAULT_RETRYABLE_CODES
    detected = chunks(STREAMS[seen].read_bytes(), None)
    assert finish(detected).reason.kind != "error"  # detection reads it as what it is


@pytest.mark.parametrize("fmt", ["messages", "responses"])
def test_a_done_after_the_formats_own_end_changes_nothing_whatever_the_split(fmt: Any) -> None:
    data = STREAMS[fmt].read_bytes()
    done = b"data: [DONE]\n\n"
    whole = chunks(data, fmt)

    assert chunks(data + done, fmt) == whole
    out: list[Chunk] = []
    source = parse_stream(fmt)(bytes_source([data, done]))  # the [DONE] in a read of its own
    to_chunks(anomalies=True)(apply(source, protocol_rules())).subscribe(out.append)
    assert out == whole


EVENT_STREAMS = sorted(MESSAGES_STREAMS.glob("*.sse")) + sorted(RESPONSES_STREAMS.glob("*.sse"))


def _seen(out: list[Chunk]) -> list[Any]:
    """The chunks, with the two messages that say where the stream ended left out, and the notice that data after
    the end was not read (it was: the test sends the whole stream again after ``[DONE]``)."""
    shown: list[Any] = []
    for chunk in out:
        data = chunk.to_dict()
        if data["type"] == "anomaly" and data["kind"] == "payload-after-done":
            continue
        if data["type"] == "anomaly" and data["kind"] == "missing-message-stop":
            data.pop("detail")
        if data["type"] == "finish" and "failure" in data["reason"]:
            data["reason"]["failure"].pop("message")
        shown.append(data)
    return shown


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(EVENT_STREAMS or [Path("-")]), at=st.integers(min_value=0, max_value=10_000))
def test_done_anywhere_ends_the_stream_exactly_as_the_end_of_the_bytes_would(path: Path, at: int) -> None:
    """Messages and Responses: the bytes up to an event boundary, then ``data: [DONE]`` and more events, give what
    those bytes alone give (but for the words saying where the stream ended)."""
    if not path.exists():
        pytest.skip("no fixtures")
    fmt = "messages" if path.parent == MESSAGES_STREAMS else "responses"
    data = path.read_bytes().replace(b"\r\n", b"\n")
    events = data.split(b"\n\n")
    cut = b"\n\n".join(events[: at % (len(events) + 1)])
    head = cut + b"\n\n" if cut else b""

    assert _seen(chunks(head + b"data: [DONE]\n\n" + data, fmt)) == _seen(chunks(head, fmt))
