"""Deadlines: no wait of an attempt is unbounded. Against raw misbehaving servers on 127.0.0.1 (tests/hostile_server):
the idle timeout covers the headers and an error body, the total timeout ends keep-alive comments forever, the
CLI ends too, and a request cancelled before its headers leaves no task or connection behind.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest
from hostile_server import HostileServer
from transport_helpers import MESSAGES, SECRET, collect, last_finish

from operators import Code
from pipeline.client import ChatClient

pytestmark = pytest.mark.server  # tests/tiers.py


async def _failure_of(mode: str, **kwargs: float) -> tuple[str, str, float]:
    async with HostileServer(mode) as server:
        started = time.monotonic()
        chunks = await collect(server.base_url, "m", api_key=SECRET, **kwargs)  # type: ignore[arg-type]
        failure = last_finish(chunks).reason.failure
        assert failure is not None
        return failure.code, failure.message, time.monotonic() - started


async def test_a_server_that_never_answers_ends_with_timeout() -> None:
    code, message, took = await _failure_of("never-answers", idle_timeout=0.3)
    assert code == Code.TIMEOUT
    assert "0.3 s" in message
    assert "response headers" in message
    assert took < 5


async def test_a_server_that_sends_only_a_status_line_ends_with_timeout() -> None:
    code, message, took = await _failure_of("status-only", idle_timeout=0.3)
    assert code == Code.TIMEOUT
    assert "response headers" in message
    assert took < 5


async def test_headers_then_a_stall_ends_with_timeout() -> None:
    code, message, took = await _failure_of("headers-stall", idle_timeout=0.3)
    assert code == Code.TIMEOUT
    assert "response body" in message
    assert took < 5


async def test_a_500_whose_body_stalls_ends_with_timeout() -> None:
    code, message, took = await _failure_of("error-body-stalls", idle_timeout=0.3)
    assert code == Code.TIMEOUT
    assert "HTTP 500 error body" in message
    assert SECRET not in message
    assert took < 5


async def test_keepalive_comments_forever_end_at_the_total_timeout() -> None:
    code, message, took = await _failure_of("keepalive-forever", idle_timeout=0.3, total_timeout=0.6)
    assert code == Code.TIMEOUT
    assert "total_timeout=0.6 s" in message
    assert 0.5 < took < 5


async def test_the_idle_timeout_holds_with_a_callers_http_client_without_timeouts() -> None:
    """The request carries its own httpx.Timeout, so a caller's client with no timeouts at all cannot hang."""
    import httpx

    async with HostileServer("status-only") as server, httpx.AsyncClient(timeout=None) as http:
        client = ChatClient(server.base_url, model="m", http_client=http, idle_timeout=0.3)
        async with asyncio.timeout(10):
            chunks = [c async for c in client.stream(MESSAGES, retry=False)]
    assert last_finish(chunks).reason.code == Code.TIMEOUT


def _others() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


@pytest.mark.parametrize("mode", ["never-answers", "status-only", "headers-stall"])
async def test_cancelling_before_the_headers_closes_the_connection_and_leaves_no_task(mode: str) -> None:
    async with HostileServer(mode) as server, ChatClient(server.base_url, model="m", idle_timeout=30) as client:
        cancel = asyncio.Event()
        async def consume() -> list[object]:
            return [c async for c in client.stream(MESSAGES, retry=False, cancel=cancel)]
        task = asyncio.ensure_future(consume())
        while server.connections == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        cancel.set()
        chunks = await asyncio.wait_for(task, 5)
        assert chunks[-1].reason.code == Code.ABORTED  # type: ignore[attr-defined]
        await asyncio.wait_for(server.closed.wait(), 5)
    async with asyncio.timeout(5):
        while _others():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", ["never-answers", "headers-stall"])
async def test_disposing_before_the_headers_closes_the_connection_and_leaves_no_task(mode: str) -> None:
    async with HostileServer(mode) as server, ChatClient(server.base_url, model="m", idle_timeout=30) as client:
        subscription = client.chunks(client.request_body(MESSAGES), retry=False).subscribe(lambda _: None)
        while server.connections == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        subscription.dispose()
        await asyncio.wait_for(server.closed.wait(), 5)
    async with asyncio.timeout(5):
        while _others():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", ["never-answers", "status-only", "error-body-stalls", "keepalive-forever"])
async def test_llm_stream_chat_against_a_hanging_server_ends_with_a_timeout_finish(mode: str) -> None:
    async with HostileServer(mode, interval=0.2) as server:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pipeline.cli", "chat", "hi", "--json", "--base-url", server.base_url,
            "--model", "m", "--idle-timeout", "1", "--total-timeout", "2", "--max-retries", "0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 20)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 1, err  # chat exits 1 when the response ends in an error finish (docs/cli.md)
    last = json.loads(out.decode().strip().splitlines()[-1])
    assert last["type"] == "finish"
    assert last["reason"]["failure"]["code"] == Code.TIMEOUT
