"""Hostile values in the fields the repairers read (issue 31, item 4): no exception escapes a repairer; the odd value
ends the stream with the library's own code (``pipeline.collect(bytes, format=...)``), at every read size.

Each case is a body whose reading by the library ends in an error; the repairer, fed the same bytes in reads of 1, 7,
64 bytes and whole, must end with that error's code and raise nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import pytest

import pipeline
from operators import Finish
from pipeline.sanitize import ChatRepair
from pipeline.sanitize.messages import MessagesRepair
from pipeline.sanitize.responses import ResponsesRepair

SIZES = (1, 7, 64, 1 << 22)
DEEP = 5000


def _sse(payload: Any, name: str | None = None) -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return (f"event: {name}\n".encode() if name else b"") + b"data: " + data + b"\n\n"


def _library(body: bytes, fmt: Literal["chat", "messages", "responses"]) -> str | None:
    finish = [c for c in pipeline.collect([body], format=fmt) if isinstance(c, Finish)][-1]
    return finish.reason.failure.code if finish.reason.failure is not None else None


def _repaired(make: Callable[[], Any], body: bytes, size: int) -> tuple[bytes, str | None]:
    repair = make()
    out = b"".join(repair.feed(body[i : i + size]) for i in range(0, len(body), size)) + repair.close()
    return out, repair.failure.code if repair.failure is not None else None


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                      "finish_reason": finish}]}


_TEXT = _sse(_chunk({"role": "assistant", "content": "hi"}))
_DONE = b"data: [DONE]\n\n"


def _call_at(index: Any) -> bytes:
    call = {"index": index, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return _sse(_chunk({"tool_calls": [call]})) + _sse(_chunk({}, "tool_calls")) + _DONE


_DEEP_ARRAY = b"[" * DEEP + b"]" * DEEP
_DEEP_OBJECT = b'{"a":' * DEEP + b"1" + b"}" * DEEP

CHAT = {
    "object-index-first": _call_at({}),
    "array-index-first": _call_at([1]),
    "object-index-after-text": _TEXT + _call_at({"a": 1}),
    "array-index-after-text": _TEXT + _call_at([]),
    "deep-error-first": _sse(b'{"error":' + _DEEP_OBJECT + b"}"),
    "deep-error-after-text": _TEXT + _sse(b'{"error":{"message":' + _DEEP_ARRAY + b"}}"),
    "deep-error-named-event": _TEXT + _sse(_DEEP_ARRAY, "error"),
    "deep-tool-call-arguments": _TEXT + _sse(b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x",'
                                             b'"function":{"name":"f","arguments":' + _DEEP_ARRAY + b"}}]}}]}"),
    "deep-finish-reason-first": _sse(b'{"choices":[{"index":0,"delta":{},"finish_reason":' + _DEEP_OBJECT + b"}]}"),
    "empty-error-object": _TEXT + _sse({"error": {}}),
    "zero-error": _TEXT + _sse({"error": 0, "choices": []}),
}


@pytest.mark.parametrize("case", sorted(CHAT))
@pytest.mark.parametrize("size", SIZES)
def test_chat_repair_reads_odd_values_as_the_library_does(case: str, size: int) -> None:
    body = CHAT[case]
    expected = _library(body, "chat")
    assert expected is not None
    out, code = _repaired(ChatRepair, body, size)
    assert code == expected
    if out:  # after the first byte: the in-band error names the library's code
        assert json.loads(out.rsplit(b"data: ", 1)[1])["error"]["code"] == expected


def _responses(output: list[Any]) -> bytes:
    response = {"id": "resp_1", "status": "in_progress", "output": []}
    created: dict[str, Any] = {"type": "response.created", "response": response}
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    delta = {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0,
             "delta": "hi"}
    completed = {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": output}}
    events: list[dict[str, Any]] = [created, added, delta, completed]
    return b"".join(_sse(e, e["type"]) for e in events)


@pytest.mark.parametrize("item_id", [{}, [], [1], {"a": 1}])
@pytest.mark.parametrize("size", SIZES)
def test_responses_repair_reads_an_unhashable_output_id_as_the_library_does(item_id: Any, size: int) -> None:
    body = _responses([{"type": "message", "id": item_id, "role": "assistant", "content": []}])
    _, code = _repaired(ResponsesRepair, body, size)  # raised TypeError (unhashable) in response.completed
    assert code == _library(body, "responses")


class _Tripping(MessagesRepair):
    """A Messages repairer whose rules trip on a block's start, as a rule would on a value of a type it never
    expected."""

    def _event(self, raw: bytes) -> None:
        if b"content_block_start" in raw:
            raise TypeError("unhashable type: 'dict'")
        super()._event(raw)


@pytest.mark.parametrize("size", SIZES)
def test_an_exception_in_a_rule_of_the_messages_and_responses_frame_ends_the_stream_malformed(size: int) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "model": "m"}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    events: list[dict[str, Any]] = [start, delta, block]
    body = b"".join(_sse(e, e["type"]) for e in events)
    out, code = _repaired(lambda: _Tripping(), body[:-2], size)  # the last event read at close, without its blank line
    assert code == "MALFORMED_RESPONSE"
    out, code = _repaired(lambda: _Tripping(), body, size)
    assert code == "MALFORMED_RESPONSE"
    assert b"MALFORMED_RESPONSE" in out
