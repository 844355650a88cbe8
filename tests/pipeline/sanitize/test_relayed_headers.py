"""A repaired response's headers reach the client as the upstream sent them (``relay_headers``): a repeated header
stays repeated, and a value that is not ASCII stays its bytes. Before, the headers went through a ``dict`` of
``str`` (two ``set-cookie`` became one) and httpx refused to encode a UTF-8 value back (``UnicodeEncodeError`` out
of the transport). A loopback server serves the bytes."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from bytes_server import BytesServer

from pipeline import SanitizingTransport

pytestmark = pytest.mark.server  # a loopback server (tests/tiers.py)

NOTE = "café €".encode()
EXTRA = (("x-note", NOTE), ("Set-Cookie", b"a=1; Path=/"), ("Set-Cookie", b"b=2; Path=/"))
CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
STREAM = b"data: " + json.dumps(CHUNK).encode() + b"\n\ndata: [DONE]\n\n"
BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _relayed(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, value in raw if name.lower() in (b"x-note", b"set-cookie")]


def test_a_repaired_streams_headers_reach_a_sync_client_byte_for_byte() -> None:
    with BytesServer() as server:
        server.serve(STREAM, headers=EXTRA)
        with httpx.Client(transport=SanitizingTransport(), timeout=10) as client:
            response = client.post(f"{server.base_url}/v1/chat/completions", json=BODY)
    assert response.status_code == 200
    assert response.content == STREAM
    assert _relayed(response.headers.raw) == [(name.encode(), value) for name, value in EXTRA]


def test_a_repaired_streams_headers_reach_an_async_client_byte_for_byte() -> None:
    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=SanitizingTransport(), timeout=10) as client:
            response = await client.post(f"{server.base_url}/v1/chat/completions", json=BODY)
            await response.aread()
            return response

    with BytesServer() as server:
        server.serve(STREAM, headers=EXTRA)
        response = asyncio.run(post())
    assert response.status_code == 200
    assert response.content == STREAM
    assert _relayed(response.headers.raw) == [(name.encode(), value) for name, value in EXTRA]
