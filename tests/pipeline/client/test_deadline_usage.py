"""A deadline cut still reports what the attempt was billed: usage already seen comes before the TIMEOUT finish."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from transport_helpers import MESSAGES

from operators import Code, Finish, TextDelta, UsageChunk
from pipeline.client import ChatClient

pytestmark = pytest.mark.server  # tests/tiers.py

_HEADERS = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _usage_then_keepalive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(_HEADERS)
        text = {"choices": [{"index": 0, "delta": {"content": "partial"}}]}
        usage = {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 3}}
        writer.write(_chunk(b"data: %s\n\ndata: %s\n\n" % (json.dumps(text).encode(), json.dumps(usage).encode())))
        while True:  # a comment every 50 ms: the idle timeout never fires
            writer.write(_chunk(b": keep-alive\n\n"))
            await writer.drain()
            await asyncio.sleep(0.05)


async def test_usage_seen_before_the_total_timeout_comes_before_the_timeout_finish() -> None:
    server = await asyncio.start_server(_usage_then_keepalive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with ChatClient(f"http://127.0.0.1:{port}/v1", model="m", idle_timeout=0.3, total_timeout=0.6) as client:
            async with asyncio.timeout(10):
                chunks = [c async for c in client.stream(MESSAGES, retry=False)]
    finally:
        server.close()

    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["partial"]
    usage, finish = chunks[-2:]
    assert isinstance(usage, UsageChunk)
    assert usage.usage.input_tokens == 11
    assert isinstance(finish, Finish)
    assert finish.reason.failure is not None
    assert finish.reason.failure.code == Code.TIMEOUT
    assert "total_timeout=0.6 s" in finish.reason.failure.message
