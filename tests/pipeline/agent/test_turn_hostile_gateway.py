"""run_turn never raises for anything a gateway sends (issue 10): a loopback server sends the exact SSE bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from operators import RetryPolicy
from pipeline import ChatClient, Session, ToolRegistry, run_turn_to_end

pytestmark = pytest.mark.server  # tests/tiers.py


def _sse(*payloads: object) -> bytes:
    body = b"".join(b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n\n" for p in payloads)
    return body + b"data: [DONE]\n\n"


async def _serve(body: bytes) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1"


def _delta(**fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields}]}


DUPLICATE_IDS = _sse(
    _delta(tool_calls=[{"index": 0, "function": {"name": "f"}}]),
    _delta(tool_calls=[{"index": 1, "id": "a", "function": {"name": "f", "arguments": "{}"}}]),
    _delta(tool_calls=[{"index": 0, "id": "a"}]),
)
INFINITE_USAGE = _sse(
    _delta(content="hi"),
    b'{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":1e400,"completion_tokens":-5,"total_tokens":1e400}}',
)


@pytest.mark.parametrize(
    ("body", "code"),
    [(DUPLICATE_IDS, "MALFORMED_TOOL_CALL"), (INFINITE_USAGE, "MALFORMED_RESPONSE")],
    ids=["two-tool-call-block-ends-with-the-same-id", "usage-with-infinite-and-negative-tokens"],
)
async def test_run_turn_never_raises_for_anything_a_gateway_sends(body: bytes, code: str, tmp_path: Path) -> None:
    registry = ToolRegistry()

    @registry.register
    def f() -> str:
        return "ok"

    path = tmp_path / "s.jsonl"
    async for base_url in _serve(body):
        client = ChatClient(base_url=base_url, api_key="k", model="m", retry_policy=RetryPolicy.normal(max_retries=0))
        with Session.open(path) as session:
            events = await asyncio.wait_for(run_turn_to_end(client, session, registry, "go"), 10)
    end = events[-1]
    assert end.kind == "turn-end"
    assert end.data["kind"] == "error", end.data
    with Session.open(path) as again:
        assert again.state.open_turn is None
        types = [event.type for event in again.events]
    assert types[-1] == "turn/end"
    assert "assistant/attempt" in types
    assert end.data["failure"]["code"] == code, end.data
