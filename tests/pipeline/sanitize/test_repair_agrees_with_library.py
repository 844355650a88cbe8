"""The repairers agree with the library on malformed bytes (issue 30, decision 0070): what the client gets through
the transport's repairer, read back by the library, is the library's reading of the upstream's own bytes (or an
error in both), at every read size. Each case is one defect the ``repair`` fuzz target found."""

from __future__ import annotations

import json
from typing import Any

import pytest
from repair_helpers import SPLITS

from scripts.fuzz_repair import HTTP_ERROR, disagreement, reading, transported

HEAD = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}


def chat(*choices: dict[str, object], **extra: object) -> bytes:
    return b"data: " + json.dumps({**HEAD, "choices": list(choices), **extra}).encode() + b"\n\n"


def delta(index: int = 0, finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"index": index, "delta": fields, "finish_reason": finish}


def call(index: object, fragment: str, **identity: object) -> dict[str, object]:
    entry: dict[str, object] = {"index": index, "function": {"arguments": fragment}, **identity}
    if "name" in identity:
        entry["function"] = {"name": identity.pop("name"), "arguments": fragment}
        entry.pop("name")
    return entry


def through(body: bytes, format: str = "chat") -> list[tuple[object, ...]]:
    """The library's reading of what the client gets, at each split size."""
    out = []
    for size in SPLITS:
        given = transported(body, format, [size])
        out.append(("error", "HTTP") if given == HTTP_ERROR else reading(given, format))
    return out


TEXT = chat(delta(content="ok")) + chat(delta(finish="stop"))
USAGE = chat(usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})


@pytest.mark.parametrize("cut", [1, 9, len(USAGE) - 2, len(USAGE) - 1])
def test_a_last_event_cut_inside_is_dropped_not_completed_by_the_added_done(cut: int) -> None:
    body = TEXT + USAGE[:cut]  # the connection cut while the trailing usage chunk was being sent
    assert reading(body, "chat") == ("ok", "", (), "stop")
    for size in SPLITS:
        given = transported(body, "chat", [size])
        assert given == TEXT + b"data: [DONE]\n\n"
    assert disagreement(body, "chat") is None


def test_a_cr_held_back_at_the_end_still_ends_the_last_event() -> None:
    body = (TEXT + b"data: [DONE]").replace(b"\n", b"\r\n") + b"\r\n\r"  # the final LF never came
    assert reading(body, "chat") == ("ok", "", (), "stop")
    assert set(through(body)) == {("ok", "", (), "stop")}


def agrees(body: bytes, expected: tuple[object, ...], format: str = "chat") -> None:
    assert reading(body, format) == expected
    assert set(through(body, format)) == {expected}


IDENTIFIED = call(0, "", id="call_1", name="get_weather")


def test_a_fragment_without_an_index_joins_the_latest_call_as_the_library_joins_it() -> None:
    no_index = {"function": {"arguments": '{"city": "Paris"}'}}
    null_index = {"index": None, "function": {"arguments": "}"}}
    body = (chat(delta(tool_calls=[IDENTIFIED])) + chat(delta(tool_calls=[no_index]))
            + chat(delta(tool_calls=[null_index])) + chat(delta(finish="tool_calls")) + b"data: [DONE]\n\n")
    agrees(body, ("", "", (("call_1", "get_weather", "function", '{"city": "Paris"}}'),), "tool-calls"))


def test_an_id_sent_again_at_a_reused_index_joins_the_call_that_owns_it() -> None:
    other = call(0, "", id="call_2", name="get_time")
    again = call(0, "{}", id="call_1")
    body = (chat(delta(tool_calls=[IDENTIFIED])) + chat(delta(tool_calls=[other])) + chat(delta(tool_calls=[again]))
            + chat(delta(finish="tool_calls")) + b"data: [DONE]\n\n")
    calls = (("call_1", "get_weather", "function", "{}"), ("call_2", "get_time", "function", ""))
    agrees(body, ("", "", calls, "tool-calls"))


@pytest.mark.parametrize("position", [1, 7, -1])
def test_a_broken_call_in_another_choice_does_not_fail_the_message(position: int) -> None:
    stray = delta(position, tool_calls=[call(0, '{"x"')])  # never identified; the library reads choice 0 only
    body = chat(delta(content="ok")) + chat(stray) + chat(delta(finish="stop")) + b"data: [DONE]\n\n"
    agrees(body, ("ok", "", (), "stop"))


def test_a_call_identified_after_its_choices_finish_is_read_as_the_library_reads_it() -> None:
    body = (chat(delta(tool_calls=[call(0, '{"a":')])) + chat(delta(finish="tool_calls"))
            + chat(delta(tool_calls=[call(0, "1}", id="call_1", name="f")])) + b"data: [DONE]\n\n")
    agrees(body, ("", "", (("call_1", "f", "function", '{"a":1}'),), "tool-calls"))


def test_a_call_never_identified_is_still_an_http_error_when_nothing_else_was_released() -> None:
    body = chat(delta(tool_calls=[call(0, '{"a":1}')])) + chat(delta(finish="tool_calls")) + b"data: [DONE]\n\n"
    assert reading(body, "chat") == ("error", "MALFORMED_TOOL_CALL")
    assert set(through(body)) == {("error", "HTTP")}


def test_a_chunk_the_library_refuses_is_refused_not_repaired() -> None:
    body = chat(delta(tool_calls=[call("0", "{}", id="call_1", name="f")])) + chat(delta(finish="tool_calls"))
    body += b"data: [DONE]\n\n"
    assert reading(body, "chat") == ("error", "MALFORMED_RESPONSE")
    assert all(read[0] == "error" for read in through(body))


@pytest.mark.parametrize("done", [b"event: error\ndata: [DONE]\n\n", b"data: [DONE] \n\n"])
def test_a_done_the_library_does_not_read_as_done_is_not_one(done: bytes) -> None:
    body = TEXT + done
    assert reading(body, "chat")[0] == "error"
    assert all(read[0] == "error" for read in through(body))


def messages(*events: dict[str, Any]) -> bytes:
    return b"".join(b"event: " + str(e["type"]).encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n"
                    for e in events)


START: dict[str, Any] = {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}}
TOOL: list[dict[str, Any]] = [{"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 0}]
STOPPED: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}


@pytest.mark.parametrize("stopped", [True, False], ids=["after-a-stop-reason", "before-one"])
def test_a_done_in_a_messages_stream_ends_it_as_the_library_ends_it(stopped: bool) -> None:
    body = messages(START, *TOOL, *([STOPPED] if stopped else []))
    body += b"data: [DONE]\n\n" + messages(*([] if stopped else [STOPPED]), {"type": "message_stop"})
    expected = ("", "", (("toolu_1", "f", "function", "{}"),), "tool-calls") if stopped else ("error", "STREAM_CLOSED")
    assert reading(body, "messages") == expected
    assert all(read == expected or (read[0] == expected[0] == "error") for read in through(body, "messages"))


def test_a_stop_reason_in_message_start_finishes_a_messages_stream_cut_after_it() -> None:
    start = {"type": "message_start", "message": {
        "id": "msg_1", "role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]}}
    body = messages(start)  # the body ends there: no message_delta, no message_stop
    agrees(body, ("", "", (("toolu_1", "f", "function", '{"a":1}'),), "tool-calls"), "messages")


def test_calls_keep_the_order_they_first_appeared_in_when_a_later_one_is_identified_first() -> None:
    body = (chat(delta(tool_calls=[call(0, '{"a":')])) + chat(delta(tool_calls=[call(1, "{}", id="call_2", name="g")]))
            + chat(delta(tool_calls=[call(1, " ")])) + chat(delta(tool_calls=[call(0, "1}", id="call_1", name="f")]))
            + chat(delta(finish="tool_calls")) + b"data: [DONE]\n\n")
    agrees(body, ("", "", (("call_1", "f", "function", '{"a":1}'), ("call_2", "g", "function", "{} ")), "tool-calls"))


def test_a_repeated_tool_use_start_with_another_id_keeps_the_first_identity_in_both() -> None:
    again = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}}}
    delta_more = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}
    body = messages(START, *TOOL[:2], again, delta_more, TOOL[2], STOPPED, {"type": "message_stop"})
    agrees(body, ("", "", (("toolu_1", "f", "function", "{}"),), "tool-calls"), "messages")


def responses(*events: dict[str, Any]) -> bytes:
    return b"".join(b"event: " + str(e["type"]).encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n"
                    for e in events)


@pytest.mark.parametrize("at", [0, 1], ids=["another-item-at-its-index", "its-own-index"])
def test_a_function_call_added_at_the_index_of_another_item_is_refused_by_both(at: int) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    call_item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    body = responses(
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": at, "item": call_item},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{}"},
        {"type": "response.output_item.done", "output_index": 1, "item": {**call_item, "arguments": "{}"}},
        {"type": "response.completed", "response": {"id": "resp_1", "output": []}},
    )
    if at == 1:
        agrees(body, ("", "", (("call_1", "f", "function", "{}"),), "tool-calls"), "responses")
    else:
        assert reading(body, "responses") == ("error", "MALFORMED_RESPONSE")
        assert all(read[0] == "error" for read in through(body, "responses"))


PARIS = call(0, '{"city": "Paris"}', id="call_1", name="w")


@pytest.mark.parametrize(("first", "repeat"), [
    (delta(content="ok"), delta(content="ok")),
    (delta(tool_calls=[PARIS]), delta(tool_calls=[call(0, ' "Paris"}')])),
], ids=["text", "arguments"])
def test_content_repeated_after_the_finish_reads_the_same_once_done_is_added(
    first: dict[str, object], repeat: dict[str, object]
) -> None:
    body = chat(first) + chat(delta(finish="stop")) + chat(repeat)  # a gateway resending its last chunk, no [DONE]
    original = reading(body, "chat")
    assert original[0] != "error"
    assert set(through(body)) == {original}


@pytest.mark.parametrize("body", [
    chat(delta(content="ok")) + chat(delta(1, finish="stop")),
    chat(delta(1, content="ok")) + chat(delta(1, finish="stop")),
    chat(delta(content="ok")),
    chat(delta(content="ok")) + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"st',
], ids=["another-choice-finished", "only-another-choice", "no-finish", "finish-cut-inside"])
def test_a_stream_the_library_ends_as_a_cut_is_never_a_clean_stop_through_the_repairer(body: bytes) -> None:
    assert reading(body, "chat") == ("error", "STREAM_CLOSED")
    assert all(read[0] == "error" for read in through(body))


GEMINI_STOP = (b'data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP",'
               b'"index":0}]}')


@pytest.mark.parametrize("body", [GEMINI_STOP + b"\n\rdata: {", GEMINI_STOP + b"\r\rdata: {"], ids=["lf-cr", "cr-cr"])
def test_an_event_ended_by_a_lone_cr_is_read_when_the_body_then_ends_inside_the_next(body: bytes) -> None:
    # the CR is held back until the next byte shows it is no CRLF; a next read with no line end in it used to keep it
    # held, so at the end of the body the event and the cut one after it were read as one unterminated event
    agrees(body, ("ok", "", (), "stop"), "gemini")
