"""What a repairer holds before it can forward is bounded by the stream's limits (issue 31, item 5): past the bound
the stream ends ``LIMIT_EXCEEDED``, before any byte (an HTTP error in the API's shape through the transport), and
nothing more is held. Small limits keep the floods small; every case at read sizes 1, 7, 64 and whole."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from bytes_server import BytesServer

import pipeline
from operators import Finish, Limits
from pipeline import SanitizingTransport
from pipeline.proxy import Proxy
from pipeline.sanitize import ChatRepair
from pipeline.sanitize._chat_bounds import MAX_CHOICES
from pipeline.sanitize.messages import MessagesRepair
from pipeline.sanitize.responses import ResponsesRepair

SIZES = (1, 7, 64, 1 << 22)
LIMITS = Limits(max_text_bytes=10_000, max_arguments_bytes=5_000)


def _sse(payload: dict[str, Any], name: str | None = None) -> bytes:
    return (f"event: {name}\n".encode() if name else b"") + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _sse({"id": "c", "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


_EMPTY_DELTAS = _chunk({"role": "assistant"}) + _chunk({}) * 1000 + _chunk({"content": "late"}, "stop")
_UNIDENTIFIED = _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "x" * 100}}]}) * 100
_TEXT = _chunk({"role": "assistant", "content": "hi"})


def _fed(repair: Any, body: bytes, size: int) -> list[bytes]:
    return [repair.feed(body[i : i + size]) for i in range(0, len(body), size)] + [repair.close()]


@pytest.mark.parametrize("size", SIZES)
def test_chat_empty_deltas_before_the_answer_are_held_up_to_max_text_bytes_then_limit_exceeded(size: int) -> None:
    repair = ChatRepair(limits=LIMITS)
    outs = _fed(repair, _EMPTY_DELTAS, size)
    assert repair.failure is not None
    assert repair.failure.code == "LIMIT_EXCEEDED"
    assert "max_text_bytes" in repair.failure.message
    assert b"".join(outs) == b""  # found before any byte: the transport answers it as an HTTP error
    assert len(repair._held) == 0  # what was held is dropped


def test_chat_empty_deltas_under_the_bound_are_held_and_released_with_the_answer() -> None:
    body = _chunk({"role": "assistant"}) + _chunk({}) * 10 + _chunk({"content": "late"}, "stop")
    repair = ChatRepair(limits=LIMITS)
    out = b"".join(_fed(repair, body, 64))
    assert repair.failure is None
    assert out == body + b"data: [DONE]\n\n"


_WAITING = (
    _chunk({"tool_calls": [{"index": 0, "function": {"name": "first", "arguments": ""}}]})  # never identified
    + _chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "second"}}]})
    + _chunk({"tool_calls": [{"index": 1, "function": {"arguments": "y" * 100}}]}) * 100
)


@pytest.mark.parametrize("size", SIZES)
def test_chat_arguments_of_an_identified_call_waiting_for_an_earlier_one_are_bounded_as_the_library_reads_them(
    size: int,
) -> None:
    chunks = pipeline.collect([_WAITING], format="chat", limits=LIMITS)
    library = [c for c in chunks if isinstance(c, Finish)][-1].reason.failure
    assert library is not None
    assert library.code == "LIMIT_EXCEEDED"
    repair = ChatRepair(limits=LIMITS)
    out = b"".join(_fed(repair, _WAITING, size))
    assert repair.failure is not None
    assert repair.failure.code == "LIMIT_EXCEEDED"
    assert "max_arguments_bytes" in repair.failure.message
    assert b"y" * 100 not in out  # nothing of the held call went out


@pytest.mark.parametrize("before", [b"", _TEXT], ids=["first", "after-text"])
@pytest.mark.parametrize("size", SIZES)
def test_chat_arguments_of_an_unidentified_call_end_limit_exceeded_as_the_library_reads_them(
    before: bytes, size: int
) -> None:
    body = before + _UNIDENTIFIED
    chunks = pipeline.collect([body], format="chat", limits=LIMITS)
    library = [c for c in chunks if isinstance(c, Finish)][-1].reason.failure
    assert library is not None
    assert library.code == "LIMIT_EXCEEDED"
    repair = ChatRepair(limits=LIMITS)
    out = b"".join(_fed(repair, body, size))
    assert repair.failure is not None
    assert repair.failure.code == "LIMIT_EXCEEDED"
    assert "max_arguments_bytes" in repair.failure.message
    if before:  # the text went out; the failure is the in-band error naming the code
        assert json.loads(out.rsplit(b"data: ", 1)[1])["error"]["code"] == "LIMIT_EXCEEDED"


def _messages_held_call() -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "model": "m"}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "", "name": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                  "partial_json": "x" * 100}}
    return _sse(start, "message_start") + _sse(block, "content_block_start") + _sse(delta, "content_block_delta") * 200


def _responses_held_call() -> bytes:
    created = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}
    item = {"type": "function_call", "id": "fc_1", "call_id": "", "name": "", "arguments": ""}
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    delta = {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1",
             "delta": "x" * 100}
    name = "response.function_call_arguments.delta"
    return _sse(created, "response.created") + _sse(added, added["type"]) + _sse(delta, name) * 200  # type: ignore[arg-type]


@pytest.mark.parametrize(("make", "body"), [(MessagesRepair, _messages_held_call()),
                                        (ResponsesRepair, _responses_held_call())], ids=["messages", "responses"])
@pytest.mark.parametrize("size", SIZES)
def test_events_behind_an_unidentified_call_are_held_up_to_the_bound_then_limit_exceeded(
    make: Any, body: bytes, size: int
) -> None:
    repair = make(limits=LIMITS)
    outs = _fed(repair, body, size)
    assert repair.failure is not None
    assert repair.failure.code == "LIMIT_EXCEEDED"
    assert b"LIMIT_EXCEEDED" in b"".join(outs)  # its in-band error (the transport answers an HTTP error instead)
    assert repair._queue == []  # what was held is dropped


@pytest.mark.server  # a loopback server
def test_the_transport_answers_a_held_flood_as_an_http_error_naming_limit_exceeded() -> None:
    with BytesServer() as server:
        server.serve(_EMPTY_DELTAS)
        transport = SanitizingTransport(limits=LIMITS)
        with httpx.Client(transport=transport, base_url=server.base_url) as client:
            response = client.post("/v1/chat/completions", json={"model": "m", "stream": True, "messages": []})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "LIMIT_EXCEEDED"


_LONG_ANSWER = _chunk({"role": "assistant", "content": ""}) + _chunk({"content": "x" * 100}) * 2000 + _chunk({}, "stop")
"""About 400 KB: more than one read of the client (64 KiB), each over the bound of 10,000 bytes."""


def _request(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/chat/completions", json={"model": "m", "stream": True, "messages": []})


@pytest.mark.server  # a loopback server
def test_buffered_mode_holds_at_most_max_text_bytes_then_answers_limit_exceeded() -> None:
    with BytesServer() as server:
        server.serve(_LONG_ANSWER + b"data: [DONE]\n\n")
        server.serve(_LONG_ANSWER + b"data: [DONE]\n\n")
        buffered = SanitizingTransport(limits=LIMITS, mode="buffered")
        with httpx.Client(transport=buffered, base_url=server.base_url) as client:
            response = _request(client)
        assert response.status_code == 502
        assert response.json()["error"]["code"] == "LIMIT_EXCEEDED"
        streamed = SanitizingTransport(limits=LIMITS)  # the same answer in stream mode is forwarded, not held
        with httpx.Client(transport=streamed, base_url=server.base_url) as client:
            response = _request(client)
        assert response.status_code == 200
        assert response.content.endswith(b"data: [DONE]\n\n")


@pytest.mark.server  # a loopback server
async def test_buffered_mode_in_an_async_client_is_bounded_likewise() -> None:
    with BytesServer() as server:
        server.serve(_LONG_ANSWER + b"data: [DONE]\n\n")
        buffered = SanitizingTransport(limits=LIMITS, mode="buffered")
        async with httpx.AsyncClient(transport=buffered, base_url=server.base_url) as client:
            response = await client.post("/v1/chat/completions", json={"model": "m", "stream": True, "messages": []})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "LIMIT_EXCEEDED"


@pytest.mark.server  # a loopback server
def test_buffered_mode_under_the_bound_gives_the_whole_answer() -> None:
    body = _chunk({"role": "assistant", "content": "hi"}) + _chunk({}, "stop") + b"data: [DONE]\n\n"
    with BytesServer() as server:
        server.serve(body)
        buffered = SanitizingTransport(limits=LIMITS, mode="buffered")
        with httpx.Client(transport=buffered, base_url=server.base_url) as client:
            response = _request(client)
    assert response.status_code == 200
    assert response.content == body


@pytest.mark.parametrize("size", SIZES)
def test_an_answer_forwarded_as_it_comes_is_not_cut_at_max_text_bytes(size: int) -> None:
    """Decision 0036's amendment: the limits bound what a repairer holds, not what it forwards (the client bounds an
    answer with max_tokens); the library's own reading ends the same bytes LIMIT_EXCEEDED."""
    body = _LONG_ANSWER + b"data: [DONE]\n\n"
    chunks = pipeline.collect([body], format="chat", limits=LIMITS)
    library = [c for c in chunks if isinstance(c, Finish)][-1].reason.failure
    assert library is not None
    assert library.code == "LIMIT_EXCEEDED"
    repair = ChatRepair(limits=LIMITS)
    assert b"".join(_fed(repair, body, size)) == body
    assert repair.failure is None


@pytest.mark.server  # a loopback server
@pytest.mark.parametrize(("mode", "body"), [("stream", _EMPTY_DELTAS), ("buffered", _LONG_ANSWER)])
def test_the_proxy_answers_what_it_would_hold_past_its_limits_as_limit_exceeded(mode: str, body: bytes) -> None:
    with BytesServer() as server:
        server.serve(body + b"data: [DONE]\n\n")
        with Proxy(server.base_url, limits=LIMITS, mode=mode) as proxy:
            response = httpx.post(f"{proxy.base_url}/chat/completions",
                                  json={"model": "m", "stream": True, "messages": []}, timeout=10)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "LIMIT_EXCEEDED"


@pytest.mark.parametrize("size", SIZES)
def test_a_stream_naming_a_new_choice_every_event_ends_limit_exceeded_past_max_choices(size: int) -> None:
    """Each choice's state is kept to the end of the stream: a new ``index`` an event grew it without a bound."""
    def finished(index: int) -> bytes:
        return _sse({"id": "c", "choices": [{"index": index, "delta": {}, "finish_reason": "stop"}]})

    body = _TEXT + b"".join(finished(i) for i in range(1, MAX_CHOICES + 5))
    repair = ChatRepair()
    out = b"".join(_fed(repair, body, size))
    assert repair.failure is not None
    assert repair.failure.code == "LIMIT_EXCEEDED"
    assert len(repair._choices) == MAX_CHOICES + 1
    assert json.loads(out.rsplit(b"data: ", 1)[1])["error"]["code"] == "LIMIT_EXCEEDED"


def test_a_stream_of_max_choices_choices_is_read_whole() -> None:
    body = b"".join(_sse({"id": "c", "choices": [{"index": i, "delta": {"content": "a"}, "finish_reason": "stop"}]})
                    for i in range(MAX_CHOICES)) + b"data: [DONE]\n\n"
    repair = ChatRepair()
    assert b"".join(_fed(repair, body, 64)) == body
    assert repair.failure is None
