"""A loopback gateway that echoes the caller's API key back in every place a server can put a string.

    with LeakyGateway() as gw:                     # 127.0.0.1, an ephemeral port, served from a background thread
        ChatClient(gw.base_url, model="http-401", api_key=KEY)

The model names a case (``CASES``); the key echoed is the one the request carried in ``Authorization: Bearer``, so
what the tests check is that nothing the client received can carry it back out. A request whose last message is a
tool result is answered with plain text (so a tool loop ends). Shared by the transport and the CLI secret tests.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CASES", "FORMAT_CASES", "KEY", "LeakyGateway"]

KEY = "sk-proj-Zq8uLeak7Secret3Key9Xw"
"""The key every secret test configures; long and sk-shaped, as real keys are."""

Json = dict[str, Any]


def _event(payload: Json | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def _chunk(delta: Json, finish: str | None = None) -> Json:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(*events: bytes, done: bool = True) -> tuple[int, str, dict[str, str], bytes]:
    body = b"".join(events) + (b"data: [DONE]\n\n" if done else b"")
    return 200, "text/event-stream", {}, body


def _usage() -> bytes:
    return _event({"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})


def _text(*pieces: str, field: str = "content", finish: str = "stop") -> tuple[int, str, dict[str, str], bytes]:
    return _sse(*(_event(_chunk({field: piece})) for piece in pieces), _event(_chunk({}, finish)), _usage())


Response = tuple[int, str, dict[str, str], bytes]


def _http_401(key: str) -> Response:
    error = {"message": f"Incorrect API key provided: {key}. Check Bearer {key}.", "code": "invalid_api_key"}
    return 401, "application/json", {"x-request-id": f"req_{key}"}, json.dumps({"error": error}).encode()


def _request_id(key: str) -> Response:
    return 500, "application/json", {"x-request-id": key}, b'{"error": {"message": "upstream failed"}}'


def _inband(key: str) -> Response:
    error = {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}}
    return _sse(_event(_chunk({"content": "Hi"})), _event(error), done=False)


def _json_2xx(key: str) -> Response:
    return (
        200,
        "application/json",
        {},
        json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode(),
    )


def _html_2xx(key: str) -> Response:
    return 200, "text/html", {}, f"<html><body>Bad key {key}</body></html>".encode()


def _finish_reason(key: str) -> Response:
    return _text("partial", finish=key)


def _refusal(key: str) -> Response:
    return _sse(_event(_chunk({"refusal": "I will not use "})), _event(_chunk({"refusal": key})), _usage())


def _split_text(key: str) -> Response:
    return _text("Your key is ", key[:5], key[5:17], key[17:] + ", keep it.")


def _reasoning(key: str) -> Response:
    return _sse(
        _event(_chunk({"reasoning_content": "The user's key is " + key[:9]})),
        _event(_chunk({"reasoning_content": key[9:]})),
        _event(_chunk({"content": "ok"})),
        _event(_chunk({}, "stop")),
        _usage(),
    )


def _split_call(call_id: str, name: str, opening: str, parts: list[str]) -> Response:
    """One tool call whose arguments (``opening`` then ``parts``) arrive over several deltas."""
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": opening}}
    rest = [{"index": 0, "function": {"arguments": part}} for part in parts]
    return _sse(
        _event(_chunk({"tool_calls": [first]})),
        *(_event(_chunk({"tool_calls": [piece]})) for piece in rest),
        _event(_chunk({}, "tool_calls")),
        _usage(),
    )


def _tool_call(key: str) -> Response:
    return _split_call(f"call_{key}", key, '{"k": "', [key[:3], key[3:20], key[20:] + '"}'])


def _tool_arguments(key: str) -> Response:
    """A call of a real tool (``echo``) whose arguments carry the key, split over three deltas."""
    return _split_call("call_1", "echo", '{"text": "', [key[:10], key[10:], '"}'])


def _malformed(key: str) -> Response:
    broken = f'data: {{"error": "Incorrect API key provided: {key}\n\n'.encode()
    return _sse(_event(_chunk({"content": "Hi"})), broken, done=False)


def _malformed_cut(key: str) -> Response:
    """The quote of a malformed payload is cut at 120 characters, in the middle of the key."""
    padding = "x" * (120 - len('{"error": "') - 12)
    return _sse(f'data: {{"error": "{padding}{key}"\n\n'.encode(), done=False)


def _comment(key: str) -> Response:
    return _sse(f": auth {key}\n\n".encode(), _event(_chunk({"content": "Hi"})), _event(_chunk({}, "stop")), _usage())


CASES: dict[str, Callable[[str], Response]] = {
    "http-401": _http_401,
    "request-id": _request_id,
    "inband-error": _inband,
    "json-2xx-error": _json_2xx,
    "html-2xx": _html_2xx,
    "finish-reason": _finish_reason,
    "refusal": _refusal,
    "split-text": _split_text,
    "reasoning": _reasoning,
    "tool-call": _tool_call,
    "tool-arguments": _tool_arguments,
    "malformed": _malformed,
    "malformed-cut": _malformed_cut,
    "comment": _comment,
}

def _named(payload: Json) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _thinking_signature(key: str) -> Response:
    """A Messages stream whose thinking block's ``signature`` echoes the key."""
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                  "model": "x", "usage": {"input_tokens": 3, "output_tokens": 1}}}
    events: list[Json] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": f"sig{key}"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    return _sse(*(_named(event) for event in events), done=False)


def _encrypted_reasoning(key: str) -> Response:
    """A Responses stream whose reasoning item's ``id`` and ``encrypted_content`` echo the key."""
    item = {"type": "reasoning", "id": f"rs_{key}", "summary": []}
    done = {**item, "encrypted_content": f"enc{key}"}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    completed = {"id": "r", "status": "completed", "output": [], "usage": {"input_tokens": 3, "output_tokens": 2}}
    events: list[Json] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "item_id": item["id"], "delta": "hmm"},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1", "delta": "Hi"},
        {"type": "response.completed", "response": completed},
    ]
    return _sse(*(_named(event) for event in events), done=False)


FORMAT_CASES: dict[str, tuple[str, Callable[[str], Response]]] = {
    "thinking-signature": ("messages", _thinking_signature),
    "encrypted-reasoning": ("responses", _encrypted_reasoning),
}
"""Cases in another wire format: the model names the case, the value the API (``ChatClient(api=...)``) it needs."""

_REASONS = {200: "OK", 401: "Unauthorized", 500: "Internal Server Error"}


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
        key = headers.get("authorization", "").removeprefix("Bearer ")
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") == "tool":
            status, content_type, extra, payload = _text("done")
        else:
            case = CASES.get(body["model"]) or FORMAT_CASES[body["model"]][1]
            status, content_type, extra, payload = case(key)
        lines = [f"HTTP/1.1 {status} {_REASONS[status]}", f"content-type: {content_type}", "connection: close"]
        lines += [f"{name}: {value}" for name, value in extra.items()]
        lines.append(f"content-length: {len(payload)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


class LeakyGateway:
    """Serves ``CASES`` on 127.0.0.1 from a thread with its own event loop (so a synchronous CLI run can use it)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(_answer, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    def __enter__(self) -> LeakyGateway:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
