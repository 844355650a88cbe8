"""A finished stream gives its upstream connection back to the pool: the transport reads the body's end (the last
chunk) after ``[DONE]`` when it comes at once, so the next request needs no new connection (decision 0073). What does
not come within ``DRAIN_S`` and ``DRAIN_BYTES`` is not waited for: the connection is closed, as before."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from pipeline import SanitizingTransport
from pipeline.sanitize import _bodies

pytestmark = pytest.mark.server

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
EVENT = (b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
         b'"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}\n\n')
STREAM = [EVENT % (b'{"content":"Hi"}', b"null"), EVENT % (b"{}", b'"stop"'), b"data: [DONE]\n\n"]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@asynccontextmanager
async def _server(tail: bytes, *, hold_s: float = 0.0) -> AsyncIterator[tuple[str, list[int]]]:
    """Chunked SSE responses on keep-alive connections; after ``[DONE]``: ``tail`` after ``hold_s``, then the last
    chunk. Yields the base URL and a list that counts the connections accepted."""
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                               if line.startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                for event in STREAM:
                    writer.write(_chunk(event))
                    await writer.drain()
                if hold_s:
                    await asyncio.sleep(hold_s)
                writer.write((_chunk(tail) if tail else b"") + b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):  # the client left, or teardown
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", accepted
    finally:
        server.close()


async def _read_all(client: httpx.AsyncClient, url: str) -> bytes:
    async with client.stream("POST", f"{url}/v1/chat/completions", json=BODY) as response:
        return b"".join([piece async for piece in response.aiter_raw()])


async def test_streams_read_to_their_finish_reuse_one_connection() -> None:
    async with _server(b"") as (url, accepted), httpx.AsyncClient(transport=SanitizingTransport()) as client:
        bodies = [await _read_all(client, url) for _ in range(3)]
    assert all(body.endswith(b"data: [DONE]\n\n") for body in bodies)
    assert len(accepted) == 1


async def test_bytes_after_done_are_discarded_and_the_connection_still_reused() -> None:
    async with _server(b"data: after\n\n") as (url, accepted), \
            httpx.AsyncClient(transport=SanitizingTransport()) as client:
        bodies = [await _read_all(client, url) for _ in range(2)]
    assert all(b"after" not in body for body in bodies)
    assert len(accepted) == 1


async def test_a_body_end_that_does_not_come_at_once_is_not_waited_for() -> None:
    async with _server(b"", hold_s=1.0) as (url, accepted), \
            httpx.AsyncClient(transport=SanitizingTransport()) as client:
        started = time.perf_counter()
        body = await _read_all(client, url)
        took = time.perf_counter() - started
        await _read_all(client, url)
    assert body.endswith(b"data: [DONE]\n\n")
    assert took < 0.5  # the held end (1 s) is not waited for: DRAIN_S, then the connection is closed
    assert len(accepted) == 2


async def test_much_after_done_closes_the_connection() -> None:
    tail = b"x" * (_bodies.DRAIN_BYTES + 1)
    async with _server(tail) as (url, accepted), httpx.AsyncClient(transport=SanitizingTransport()) as client:
        bodies = [await _read_all(client, url) for _ in range(2)]
    assert all(b"xxx" not in body for body in bodies)
    assert len(accepted) == 2
