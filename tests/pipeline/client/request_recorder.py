"""A loopback HTTP server that records each request exactly (method, path, headers, JSON body) and answers with the
next scripted SSE body, for the request-shape tests of ``ChatClient`` and ``run_turn``; and small SSE scripts of each
format (a tool call, a text answer)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs

__all__ = [
    "Recorded",
    "Recorder",
    "chat_text",
    "chat_tool_call",
    "messages_text",
    "messages_tool_call",
    "recorder",
    "responses_text",
    "responses_tool_call",
]


@attrs.frozen
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any


@attrs.define
class Recorder:
    base_url: str
    script: list[bytes]
    requests: list[Recorded] = attrs.field(factory=list)


async def _read_request(reader: asyncio.StreamReader) -> Recorded:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *lines = head.split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    raw = await reader.readexactly(int(headers.get("content-length", "0")))
    return Recorded(method, target, headers, json.loads(raw) if raw else None)


@asynccontextmanager
async def recorder(script: Sequence[bytes]) -> AsyncIterator[Recorder]:
    """Serves on 127.0.0.1 (a free port) under ``/v1``; the n-th request gets ``script[n]`` (the last one again past
    the end) as ``text/event-stream``."""
    state = Recorder(base_url="", script=list(script))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            state.requests.append(request)
            body = state.script[min(len(state.requests), len(state.script)) - 1]
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    state.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


def _sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


ARGUMENTS = '{"city": "Paris"}'


def chat_tool_call(call_id: str = "call_1", name: str = "get_weather") -> bytes:
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ARGUMENTS}}
    return _sse([
        (None, {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]}),
        (None, {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        (None, "[DONE]"),
    ])


def chat_text(text: str = "Sunny.") -> bytes:
    return _sse([
        (None, {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        (None, {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        (None, "[DONE]"),
    ])


def _message_start() -> tuple[str, Any]:
    return ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})


def _message_end(reason: str) -> list[tuple[str, Any]]:
    return [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def messages_tool_call(call_id: str = "toolu_1", name: str = "get_weather") -> bytes:
    return _sse([
        _message_start(),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": call_id, "name": name, "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": ARGUMENTS}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_message_end("tool_use"),
    ])


def messages_text(text: str = "Sunny.") -> bytes:
    return _sse([
        _message_start(),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_message_end("end_turn"),
    ])


def _completed(output: list[Any]) -> tuple[str, Any]:
    return ("response.completed", {"type": "response.completed", "response": {
        "id": "resp_1", "object": "response", "status": "completed", "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})


def _created() -> tuple[str, Any]:
    return ("response.created", {"type": "response.created", "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "output": []}})


def responses_tool_call(call_id: str = "call_1", name: str = "get_weather") -> bytes:
    item = {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name, "arguments": ""}
    done = {**item, "arguments": ARGUMENTS, "status": "completed"}
    return _sse([
        _created(),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                    "output_index": 0, "item_id": "fc_1", "delta": ARGUMENTS}),
        ("response.function_call_arguments.done", {"type": "response.function_call_arguments.done",
                                                   "output_index": 0, "item_id": "fc_1", "arguments": ARGUMENTS}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done}),
        _completed([done]),
    ])


def responses_text(text: str = "Sunny.") -> bytes:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": [], "status": "in_progress"}
    done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return _sse([
        _created(),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                        "content_index": 0, "item_id": "msg_1", "delta": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done}),
        _completed([done]),
    ])
