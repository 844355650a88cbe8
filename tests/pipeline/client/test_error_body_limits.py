"""An error body (and a 2xx body that is not an event stream) is read only up to Limits.max_error_body_bytes, counted
after decompression: an endless 500 body and a gzip bomb end with LIMIT_EXCEEDED carrying the HTTP status."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hostile_server import HostileServer
from transport_helpers import collect, last_finish

from operators import Code, Limits

pytestmark = pytest.mark.server  # tests/tiers.py


async def test_an_endless_500_body_ends_with_limit_exceeded() -> None:
    async with HostileServer("endless-error-body") as server:
        started = time.monotonic()
        failure = last_finish(await collect(server.base_url, "m", idle_timeout=5)).reason.failure
    assert failure is not None
    assert failure.code == Code.LIMIT_EXCEEDED
    assert failure.status == 500
    assert "max_error_body_bytes=65536" in failure.message
    assert "the HTTP 500 error body" in failure.message
    assert time.monotonic() - started < 5


async def test_a_gzip_bombed_error_body_does_not_expand_beyond_the_limit() -> None:
    async with HostileServer("gzip-bomb", bomb_bytes=256 << 20) as server:
        tracemalloc.start()
        try:
            failure = last_finish(await collect(server.base_url, "m", idle_timeout=5)).reason.failure
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert failure is not None
    assert failure.code == Code.LIMIT_EXCEEDED
    assert failure.status == 500
    assert "reached 65537 bytes" in failure.message
    assert peak < 16 << 20  # 256 MiB inflated would be far above this


async def test_the_error_body_limit_is_the_configured_one() -> None:
    async with HostileServer("endless-error-body") as server:
        chunks = await collect(server.base_url, "m", limits=Limits(max_error_body_bytes=1000))
    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.code == Code.LIMIT_EXCEEDED
    assert "max_error_body_bytes=1000" in failure.message
