"""The generated stream of each wire format for ``benchmarks.formats``: the same response in every format.

Each stream carries ``events`` text deltas (about 30 characters each), then one tool call whose arguments arrive in
40 fragments (Gemini: whole, in one part), then the usage and the finish, in the format's own vocabulary (chat
completions, the Messages API, the Responses API, Gemini's ``streamGenerateContent``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["GENERATORS", "chat", "fragments", "gemini", "messages", "payloads", "responses", "texts"]


def _sse(events: list[tuple[str | None, dict[str, Any]]], end: str = "\n\n") -> bytes:
    out = []
    for name, payload in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(payload, separators=(',', ':'))}{end}")
    return "".join(out).encode()


def texts(events: int) -> list[str]:
    return [f"token {n:05d} of the generated answer " for n in range(events)]


def fragments() -> list[str]:
    arguments = json.dumps({"path": "src/" + "x" * 200, "pattern": "**/*.py", "limit": 10})
    size = max(1, len(arguments) // 40)
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def chat(events: int) -> bytes:
    base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    out: list[tuple[str | None, dict[str, Any]]] = []
    for text in texts(events):
        out.append((None, {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}))
    for n, fragment in enumerate(fragments()):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": fragment}}
        if n == 0:
            call.update(id="call_b", type="function", function={"name": "Glob", "arguments": fragment})
        out.append((None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    out.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    usage = {"prompt_tokens": 100, "completion_tokens": events, "total_tokens": 100 + events}
    out.append((None, {**base, "choices": [], "usage": usage}))
    return _sse(out) + b"data: [DONE]\n\n"


def messages(events: int) -> bytes:
    usage = {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 0}
    out: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_b", "type": "message", "role": "assistant",
                                                                  "model": "bench", "content": [], "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]
    for text in texts(events):
        delta = {"type": "text_delta", "text": text}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    block = {"type": "tool_use", "id": "toolu_b", "name": "Glob", "input": {}}
    out.append(("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block}))
    for fragment in fragments():
        delta = {"type": "input_json_delta", "partial_json": fragment}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                  "usage": {"output_tokens": events}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return _sse(out)


def responses(events: int) -> bytes:
    out: list[tuple[str | None, dict[str, Any]]] = []
    seq = 0

    def add(kind: str, **fields: Any) -> None:
        nonlocal seq
        out.append((kind, {"type": kind, "sequence_number": seq, **fields}))
        seq += 1

    add("response.created", response={"id": "resp_b", "status": "in_progress", "output": []})
    add("response.output_item.added", output_index=0, item={"type": "message", "id": "msg_b", "role": "assistant"})
    for text in texts(events):
        add("response.output_text.delta", item_id="msg_b", output_index=0, content_index=0, delta=text)
    item = {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "Glob", "arguments": ""}
    add("response.output_item.added", output_index=1, item=item)
    for fragment in fragments():
        add("response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta=fragment)
    add("response.output_item.done", output_index=1, item={**item, "arguments": "".join(fragments())})
    usage = {"input_tokens": 100, "output_tokens": events, "total_tokens": 100 + events,
             "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    add("response.completed", response={"id": "resp_b", "status": "completed", "usage": usage})
    return _sse(out)


def gemini(events: int) -> bytes:
    """Gemini's ``streamGenerateContent?alt=sse``: CRLF CRLF between events, the cumulative ``usageMetadata`` on every
    event as Google sends it, the call whole in one part (Gemini streams no argument fragments), the finish on the
    last event."""
    out: list[tuple[str | None, dict[str, Any]]] = []

    def add(parts: list[dict[str, Any]], sent: int, finish: str | None = None) -> None:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        usage = {"promptTokenCount": 100, "candidatesTokenCount": sent, "totalTokenCount": 100 + sent}
        out.append((None, {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "bench",
                           "responseId": "resp_b"}))

    for n, text in enumerate(texts(events)):
        add([{"text": text}], n + 1)
    add([{"functionCall": {"name": "Glob", "args": json.loads("".join(fragments()))}}], events, "STOP")
    return _sse(out, "\r\n\r\n")


GENERATORS: dict[str, Callable[[int], bytes]] = {"chat": chat, "messages": messages, "responses": responses,
                                                 "gemini": gemini}


def payloads(data: bytes) -> list[bytes]:
    """Every ``data:`` payload but ``[DONE]``: what the floor decodes."""
    return [line[6:] for line in data.split(b"\n") if line.startswith(b"data: ") and line != b"data: [DONE]"]
