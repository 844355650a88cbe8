"""Shared helpers of the emulator tests: request bodies, and readers of the SSE bytes the emulator sends.

The ``emu`` and ``http`` fixtures live in each test module (a module-scoped emulator per module).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
from corpus import REAL_STREAMS

from pipeline.emulator._stream_profiles import CLEAN_TEXT

__all__ = [
    "CLEAN",
    "QWEN_EMPTY_ID",
    "REAL",
    "TIMEOUT",
    "Json",
    "assembled_calls",
    "chunks",
    "client",
    "data_fields",
    "finish_reasons",
    "post",
    "request_body",
    "text_of",
    "tool_deltas",
]

Json = dict[str, Any]

REAL = REAL_STREAMS
QWEN_EMPTY_ID = REAL / "14-qwen3max-tool-call-empty-id.sse"
CLEAN = "".join(CLEAN_TEXT)
TIMEOUT = httpx.Timeout(5.0)


def client(base_url: str = "", timeout: httpx.Timeout = TIMEOUT) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=timeout)


def request_body(*, include_usage: bool = False, stream: bool = True, model: str = "gpt-4o") -> Json:
    body: Json = {"model": model, "stream": stream, "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def post(
    http: httpx.Client,
    profile: str | None,
    headers: Mapping[str, str] | None = None,
    *,
    include_usage: bool = False,
    stream: bool = True,
) -> httpx.Response:
    sent = dict(headers or {})
    if profile is not None:
        sent["x-emulator-profile"] = profile
    return http.post("/chat/completions", json=request_body(include_usage=include_usage, stream=stream), headers=sent)


def data_fields(body: bytes) -> list[str]:
    """The ``data`` of each SSE event (LF or CRLF, BOM and comments ignored)."""
    text = body.decode("utf-8-sig").replace("\r\n", "\n")
    fields = []
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            fields.append("\n".join(data))
    return fields


def chunks(body: bytes) -> list[Json]:
    """Every well-formed ``chat.completion.chunk`` payload."""
    out = []
    for data in data_fields(body):
        try:
            payload = json.loads(data)
        except ValueError:
            continue
        if isinstance(payload, dict) and payload.get("object") == "chat.completion.chunk":
            out.append(payload)
    return out


def tool_deltas(body: bytes) -> list[Json]:
    return [tc for c in chunks(body) for ch in c["choices"] for tc in ch["delta"].get("tool_calls") or []]


def text_of(body: bytes) -> str:
    return "".join(ch["delta"].get("content") or "" for c in chunks(body) for ch in c["choices"])


def finish_reasons(body: bytes) -> list[str]:
    return [ch["finish_reason"] for c in chunks(body) for ch in c["choices"] if ch.get("finish_reason")]


def assembled_calls(body: bytes) -> dict[int, tuple[str, str, str]]:
    """index -> (id, name, arguments): the first non-empty id and name win, arguments are concatenated."""
    calls: dict[int, list[str]] = {}
    for tc in tool_deltas(body):
        call = calls.setdefault(tc["index"], ["", "", ""])
        function = tc.get("function") or {}
        call[0] = call[0] or tc.get("id") or ""
        call[1] = call[1] or function.get("name") or ""
        call[2] += function.get("arguments") or ""
    return {i: (c[0], c[1], c[2]) for i, c in calls.items()}
