"""Shared helpers of the Messages and Responses emulator tests: requests, and a reader of event-named SSE."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs
import httpx
import pytest

__all__ = ["Json", "SseEvent", "cut_body", "events", "format_body", "post_format"]

Json = dict[str, Any]


@attrs.frozen
class SseEvent:
    """One SSE event: its ``event:`` name (``None`` without one) and its parsed ``data``."""

    name: str | None
    data: Json


def events(body: bytes) -> list[SseEvent]:
    """Every event of an event-named stream (``data`` parsed as JSON)."""
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        lines = block.split("\n")
        names = [line.removeprefix("event:").strip() for line in lines if line.startswith("event:")]
        data = "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:"))
        if data:
            out.append(SseEvent(names[-1] if names else None, json.loads(data)))
    return out


def format_body(*, stream: bool = True, model: str = "claude-sonnet-4-5", responses: bool = False) -> Json:
    if responses:
        return {"model": model, "stream": stream, "input": "Weather in Paris?"}
    return {
        "model": model,
        "stream": stream,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }


def post_format(
    http: httpx.Client,
    path: str,
    profile: str | None,
    headers: Mapping[str, str] | None = None,
    **body: Any,
) -> httpx.Response:
    """POST ``path`` (``/messages`` or ``/responses``) with ``profile`` in the ``x-emulator-profile`` header."""
    sent = dict(headers or {})
    if profile is not None:
        sent["x-emulator-profile"] = profile
    return http.post(path, json=format_body(responses=path == "/responses", **body), headers=sent)


def cut_body(http: httpx.Client, path: str, profile: str) -> bytes:
    """The bytes a stream cut mid-body delivered before the cut (the cut itself asserted)."""
    pieces: list[bytes] = []
    request = format_body(responses=path == "/responses")
    with http.stream("POST", path, json=request, headers={"x-emulator-profile": profile}) as response:
        assert response.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            pieces.extend(response.iter_bytes())  # keeps what arrived before the cut
    return b"".join(pieces)
