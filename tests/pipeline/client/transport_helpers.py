"""Shared by the transport tests: clients on one SSL context, a ``collect`` over ``ChatClient.stream``, and small
helpers. The ``emu`` fixtures live in each test module (a module-scoped emulator per module).

Retries over HTTP use tiny delays (1 to 5 ms); nothing here sleeps to test a delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from operators import Chunk, Finish, RetryPolicy
from pipeline.client import ChatClient

__all__ = [
    "CLEAN",
    "MESSAGES",
    "SECRET",
    "TEST_TIMEOUT",
    "closed_port",
    "collect",
    "fast_policy",
    "last_finish",
    "make_client",
    "open_client",
    "types",
    "unique",
]

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
CLEAN = "Hello from the emulator."
"""The text of the emulator's ``clean`` profile."""
SECRET = "sk-test-SECRET-123"
TEST_TIMEOUT = 10.0


def fast_policy(**overrides: Any) -> RetryPolicy:
    settings: dict[str, Any] = {"initial_delay_ms": 1, "max_delay_ms": 5, "jitter_ratio": 0}
    settings.update(overrides)
    return RetryPolicy.normal(**settings)


def make_client(
    base_url: str,
    profile: str,
    headers: Mapping[str, str] | None = None,
    *,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> ChatClient:
    return ChatClient(
        base_url, model=profile, headers=dict(headers or {}), retry_policy=policy or fast_policy(), **kwargs
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context()


@contextlib.asynccontextmanager
async def open_client(
    base_url: str,
    profile: str,
    headers: Mapping[str, str] | None = None,
    *,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> AsyncIterator[ChatClient]:
    """A ChatClient on an ``httpx.AsyncClient`` that reuses one SSL context (building one per client costs ~0.15 s).

    The timeouts are the ones ChatClient gives its own client; ``make_client`` covers that default path."""
    timeout = httpx.Timeout(connect=30.0, read=None, write=30.0, pool=30.0)
    async with (
        httpx.AsyncClient(verify=_ssl_context(), timeout=timeout) as http,
        make_client(base_url, profile, headers, policy=policy, http_client=http, **kwargs) as client,
    ):
        yield client


async def collect(
    base_url: str,
    profile: str,
    headers: Mapping[str, str] | None = None,
    *,
    retry: RetryPolicy | bool = False,
    policy: RetryPolicy | None = None,
    anomalies: bool = False,
    **kwargs: Any,
) -> list[Chunk]:
    async with (
        asyncio.timeout(TEST_TIMEOUT),
        open_client(base_url, profile, headers, policy=policy, **kwargs) as client,
    ):
        return [chunk async for chunk in client.stream(MESSAGES, retry=retry, anomalies=anomalies)]


def last_finish(chunks: list[Chunk]) -> Finish:
    assert chunks, "no chunks at all"
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return finish


def types(chunks: list[Chunk]) -> list[str]:
    return [chunk.type for chunk in chunks]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
