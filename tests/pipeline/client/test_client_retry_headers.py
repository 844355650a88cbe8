"""``ChatClient``'s retry reads the provider's retry headers as the openai SDK does: ``retry-after-ms`` before
``Retry-After``, and ``x-should-retry: true`` / ``false`` over the status's own retryability.

A scripted server on 127.0.0.1 answers each request with the next of its responses (then a clean stream), and counts
the requests it received.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

import pipeline
from operators import Chunk, Code, Finish, Retry, RetryPolicy

pytestmark = pytest.mark.server  # tests/tiers.py

CLEAN_SSE = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def http_response(status: int, headers: dict[str, str], body: bytes) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", "connection: close"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def error(status: int, **headers: str) -> bytes:
    body = b'{"error": {"message": "scripted failure", "type": "scripted"}}'
    return http_response(status, {"content-type": "application/json", **headers}, body)


CLEAN = http_response(200, {"content-type": "text/event-stream"}, CLEAN_SSE)


class ScriptedServer:
    """Answers request N with ``responses[N]``, and every later one with a clean stream."""

    def __init__(self, *responses: bytes) -> None:
        self.responses = list(responses)
        self.requests = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            length = next((int(x.split(b":", 1)[1]) for x in lines if x.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            number, self.requests = self.requests, self.requests + 1
            writer.write(self.responses[number] if number < len(self.responses) else CLEAN)
            await writer.drain()
        writer.close()


POLICY = RetryPolicy.normal(max_retries=2, initial_delay_ms=1, max_delay_ms=500, jitter_ratio=0)


async def run(server: ScriptedServer) -> list[Chunk]:
    async with pipeline.ChatClient(server.base_url, model="m", api_key="k", retry_policy=POLICY) as client:
        return [chunk async for chunk in client.stream([{"role": "user", "content": "hi"}])]


async def test_retry_after_ms_is_read_before_retry_after() -> None:
    async with ScriptedServer(error(429, **{"retry-after-ms": "40", "retry-after": "9"})) as server:
        chunks = await run(server)

    (retry,) = [c for c in chunks if isinstance(c, Retry)]
    assert retry.delay_ms == 40
    assert retry.failure.retry_after_ms == 40
    assert isinstance(retry.failure.retry_after_ms, int)
    assert pipeline.assemble(chunks).text == "ok"
    assert server.requests == 2


async def test_a_fractional_retry_after_is_whole_milliseconds_rounded_up() -> None:
    async with ScriptedServer(error(429, **{"retry-after": "0.0101"})) as server:
        chunks = await run(server)

    (retry,) = [c for c in chunks if isinstance(c, Retry)]
    assert retry.failure.retry_after_ms == 11
    assert retry.to_dict()["failure"]["retry_after_ms"] == 11


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_x_should_retry_false_stops_a_retryable_status(status: int) -> None:
    async with ScriptedServer(error(status, **{"x-should-retry": "false"})) as server:
        chunks = await run(server)

    assert not [c for c in chunks if isinstance(c, Retry)]
    (finish,) = [c for c in chunks if isinstance(c, Finish)]
    assert finish.reason.failure is not None
    assert finish.reason.failure.should_retry is False
    assert server.requests == 1


@pytest.mark.parametrize("status", [400, 404, 409])
async def test_x_should_retry_true_retries_a_status_that_is_not_retryable(status: int) -> None:
    async with ScriptedServer(error(status, **{"x-should-retry": "true"})) as server:
        chunks = await run(server)

    (retry,) = [c for c in chunks if isinstance(c, Retry)]
    assert retry.failure.should_retry is True
    assert pipeline.assemble(chunks).text == "ok"
    assert server.requests == 2


async def test_without_the_header_a_400_is_final() -> None:
    async with ScriptedServer(error(400)) as server:
        chunks = await run(server)

    (finish,) = [c for c in chunks if isinstance(c, Finish)]
    assert finish.reason.code == Code.INVALID_REQUEST
    assert server.requests == 1


@pytest.mark.parametrize("value", ["True", "1", "yes", ""])
async def test_only_the_exact_words_true_and_false_count(value: str) -> None:
    async with ScriptedServer(error(400, **{"x-should-retry": value})) as server:
        chunks = await run(server)

    assert not [c for c in chunks if isinstance(c, Retry)]
    assert server.requests == 1
