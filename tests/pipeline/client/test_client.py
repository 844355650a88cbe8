"""``ChatClient`` over real loopback HTTP against the gateway emulator: retries work end to end
(docs/decisions/0006-retry-when-retryable.md), ``rules=`` replaces the rule chain of each attempt, processing after
the retry composes on ``chunks()`` with ordinary reactivex operators, disposal and cancellation close the server-side
stream, and a slow consumer paces the reads.

Retries over HTTP use tiny delays (1 to 5 ms); nothing here sleeps to test a delay.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncIterator

import attrs
import httpx
import pytest
import reactivex as rx
from reactivex import Observable, abc
from reactivex import operators as ops
from transport_helpers import (
    CLEAN,
    MESSAGES,
    TEST_TIMEOUT,
    collect,
    fast_policy,
    last_finish,
    make_client,
    open_client,
    types,
    unique,
)

import pipeline
from operators import Batch, Chunk, Code, Retry, RetryPolicy, Rule, Signal, TextDelta, UsageChunk
from operators.extend import map_items
from pipeline.compose import protocol_rules
from pipeline.emulator import Emulator

# --------------------------------------------------------------------------------------------------- retries


async def test_two_malformed_tool_calls_then_success(emu: Emulator) -> None:
    key = unique("never")
    headers = {"x-emulator-fail-first": "2", "x-emulator-then": "clean-tool", "x-emulator-key": key}
    chunks = await collect(emu.base_url, "never-identified", headers, retry=True)

    retries = [c for c in chunks if isinstance(c, Retry)]
    assert [(r.attempt, r.max_retries, r.failure.code) for r in retries] == [
        (1, 2, Code.MALFORMED_TOOL_CALL),
        (2, 2, Code.MALFORMED_TOOL_CALL),
    ]
    assert [r.delay_ms for r in retries] == [1, 2]
    assert emu.state.attempts[key] == 3

    usages = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert len(usages) == 3
    assert usages[0] == usages[1] == usages[2]  # same prompt, 6 completion tokens in each attempt
    one = usages[0]
    assert one.output_tokens == 6

    message = pipeline.assemble(chunks)
    assert message.ok
    assert message.finish.kind == "tool-calls"
    assert message.retries == 2
    (call,) = message.tool_calls
    assert call.name == "get_weather"
    assert call.id.startswith("call_emu0_")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert message.usage == one
    assert message.usage_total == one + one + one
    assert message.usage_total is not None
    assert one.input_tokens is not None
    assert message.usage_total.input_tokens == 3 * one.input_tokens
    assert message.usage_total.output_tokens == 18


async def test_a_dropped_stream_is_retried_and_the_partial_text_is_discarded(emu: Emulator) -> None:
    key = unique("drop")
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-key": key}
    chunks = await collect(emu.base_url, "drop-mid-stream", headers, retry=True)

    retries = [c for c in chunks if isinstance(c, Retry)]
    assert [r.failure.code for r in retries] == [Code.TRANSPORT]
    message = pipeline.assemble(chunks)
    assert message.text == CLEAN
    assert message.ok
    assert emu.state.attempts[key] == 2


async def test_exhausted_retries_give_the_last_error_finish(emu: Emulator) -> None:
    key = unique("exhaust")
    headers = {"x-emulator-fail-first": "5", "x-emulator-key": key}
    chunks = await collect(emu.base_url, "server-error", headers, retry=True, policy=fast_policy(max_retries=2))

    assert types(chunks) == ["retry", "retry", "finish"]
    finish = last_finish(chunks)
    assert finish.reason.code == Code.SERVER
    assert finish.reason.failure is not None
    assert finish.reason.failure.status == 500
    assert emu.state.attempts[key] == 3


async def test_a_non_retryable_code_is_not_retried(emu: Emulator) -> None:
    key = unique("auth")
    headers = {"x-emulator-fail-first": "3", "x-emulator-key": key}
    chunks = await collect(emu.base_url, "auth", headers, retry=True)

    assert types(chunks) == ["finish"]
    assert last_finish(chunks).reason.code == Code.AUTH
    assert emu.state.attempts[key] == 1


async def test_retry_after_is_honoured(emu: Emulator) -> None:
    key = unique("429")
    headers = {
        "x-emulator-fail-first": "1",
        "x-emulator-then": "clean",
        "x-emulator-retry-after": "0.05",
        "x-emulator-key": key,
    }
    policy = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=100, jitter_ratio=0)
    started = time.monotonic()
    chunks = await collect(emu.base_url, "rate-limit", headers, retry=True, policy=policy)
    elapsed = time.monotonic() - started

    (retry,) = [c for c in chunks if isinstance(c, Retry)]
    assert retry.delay_ms == 50
    assert retry.failure.code == Code.RATE_LIMIT
    assert retry.failure.retry_after_ms == 50
    assert pipeline.assemble(chunks).text == CLEAN
    assert emu.state.attempts[key] == 2
    assert elapsed >= 0.045  # the wait really happened (a lower bound only)


async def test_retry_after_over_the_cap_is_refused_in_normal_mode(emu: Emulator) -> None:
    key = unique("429cap")
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-key": key}
    chunks = await collect(emu.base_url, "rate-limit", headers, retry=True)  # Retry-After 2 s > max 5 ms

    assert types(chunks) == ["finish"]
    assert last_finish(chunks).reason.code == Code.RATE_LIMIT
    assert emu.state.attempts[key] == 1


async def test_complete_assembles_with_retries(emu: Emulator) -> None:
    key = unique("complete")
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-key": key}
    async with asyncio.timeout(TEST_TIMEOUT):
        async with make_client(emu.base_url, "empty-response", headers) as client:
            message = await client.complete(MESSAGES)

    assert message.text == CLEAN
    assert message.retries == 1
    assert message.usage_total is not None
    assert message.usage is not None
    assert message.usage_total.output_tokens == message.usage.output_tokens  # the empty attempt billed 0


# --------------------------------------------------------------------------------------------------- disposal


async def test_leaving_the_loop_early_closes_the_server_side_stream(fresh_emu: Emulator) -> None:
    before = fresh_emu.state.disconnects
    first: list[Chunk] = []
    async with asyncio.timeout(TEST_TIMEOUT):
        async with open_client(fresh_emu.base_url, "slow-drip", {"x-emulator-drip-ms": "100"}) as client:
            async for chunk in client.stream(MESSAGES):
                first.append(chunk)
                break
            seen = await asyncio.to_thread(fresh_emu.state.wait_for_disconnects, before + 1, 3.0)

    assert seen
    assert types(first) == ["block-start"]
    assert len(fresh_emu.state.requests) == 1


async def test_setting_cancel_mid_stream_aborts_and_disconnects(fresh_emu: Emulator) -> None:
    cancel = asyncio.Event()
    chunks: list[Chunk] = []
    async with asyncio.timeout(TEST_TIMEOUT):
        async with open_client(fresh_emu.base_url, "slow-drip", {"x-emulator-drip-ms": "100"}) as client:
            async for chunk in client.stream(MESSAGES, cancel=cancel):
                chunks.append(chunk)
                cancel.set()
            seen = await asyncio.to_thread(fresh_emu.state.wait_for_disconnects, 1, 3.0)

    assert seen
    finish = last_finish(chunks)
    assert finish.reason.kind == "aborted"
    assert finish.reason.code == Code.ABORTED
    assert pipeline.assemble(chunks).text != CLEAN  # it stopped before the end
    assert len(fresh_emu.state.requests) == 1


async def test_cancel_set_before_the_stream_starts_sends_no_request(fresh_emu: Emulator) -> None:
    cancel = asyncio.Event()
    cancel.set()
    async with asyncio.timeout(TEST_TIMEOUT):
        async with open_client(fresh_emu.base_url, "clean") as client:
            chunks = [chunk async for chunk in client.stream(MESSAGES, cancel=cancel)]
            # a request wrongly sent by the cancelled stream would reach the server before this one
            follow_up = [chunk async for chunk in client.stream(MESSAGES)]

    assert types(chunks) == ["finish"]
    assert last_finish(chunks).reason.code == Code.ABORTED
    assert pipeline.assemble(follow_up).text == CLEAN
    assert len(fresh_emu.state.requests) == 1


async def test_cancel_during_a_pending_retry_sends_no_further_request(emu: Emulator) -> None:
    key = unique("cancel-retry")
    headers = {"x-emulator-fail-first": "5", "x-emulator-key": key}
    policy = RetryPolicy.normal(initial_delay_ms=5_000, max_delay_ms=5_000, jitter_ratio=0)
    cancel = asyncio.Event()
    chunks: list[Chunk] = []
    async with asyncio.timeout(TEST_TIMEOUT):
        async with open_client(emu.base_url, "server-error", headers, policy=policy) as client:
            async for chunk in client.stream(MESSAGES, cancel=cancel):
                chunks.append(chunk)
                if isinstance(chunk, Retry):
                    cancel.set()

    assert types(chunks) == ["retry", "finish"]
    assert last_finish(chunks).reason.code == Code.ABORTED
    assert emu.state.attempts[key] == 1


# --------------------------------------------------------------------------------------------------- backpressure


class _CountingStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, counter: _CountingTransport) -> None:
        self._inner = inner
        self._counter = counter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._inner:
            self._counter.reads += 1
            self._counter.bytes += len(piece)
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CountingTransport(httpx.AsyncBaseTransport):
    """Counts the body pieces httpx pulls from the network, and their bytes."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.reads = 0
        self.bytes = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CountingStream(response.stream, self),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_slow_consumer_paces_the_reads(emu: Emulator) -> None:
    """While the consumer holds a chunk, nothing more is read from the network (at most one read ahead)."""
    transport = _CountingTransport()
    chunks: list[Chunk] = []
    ahead: list[tuple[int, int]] = []
    async with asyncio.timeout(TEST_TIMEOUT), httpx.AsyncClient(transport=transport) as http:
        client = make_client(emu.base_url, "slow-drip", {"x-emulator-drip-ms": "5"}, http_client=http)
        async for chunk in client.stream(MESSAGES):
            chunks.append(chunk)
            before = transport.reads
            await asyncio.sleep(0.03)  # the server keeps sending meanwhile
            ahead.append((before, transport.reads))

    assert pipeline.assemble(chunks).text == CLEAN
    assert all(before == after for before, after in ahead), ahead
    assert transport.reads >= 2


# --------------------------------------------------------------------------------------------------- rules= and after


def _shout(item: Signal) -> Signal:
    return attrs.evolve(item, text=item.text.upper()) if isinstance(item, TextDelta) else item


def _counting_subscriptions(count: list[int]) -> Rule:
    """A rule that passes everything on and counts its subscriptions (one per attempt)."""

    def operator(source: Observable[Batch[Signal]]) -> Observable[Batch[Signal]]:
        def factory(scheduler: abc.SchedulerBase | None) -> Observable[Batch[Signal]]:
            count.append(1)
            return source

        return rx.defer(factory)

    return operator


async def test_rules_replace_the_rule_chain_of_every_attempt(emu: Emulator) -> None:
    key = unique("rules")
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-key": key}
    subscriptions: list[int] = []
    rules = [*protocol_rules(), map_items(_shout), _counting_subscriptions(subscriptions)]
    async with asyncio.timeout(TEST_TIMEOUT), open_client(emu.base_url, "drop-mid-stream", headers) as client:
        chunks = [chunk async for chunk in client.stream(MESSAGES, rules=rules)]

    assert [c.failure.code for c in chunks if isinstance(c, Retry)] == [Code.TRANSPORT]
    assert pipeline.assemble(chunks).text == CLEAN.upper()
    assert len(subscriptions) == 2  # the rules run inside the retry: once per attempt
    assert emu.state.attempts[key] == 2


async def test_rules_without_the_protocol_rules_leave_them_out(emu: Emulator) -> None:
    """``rules=`` replaces the chain: without ``close_on_done`` nothing closes a block, so there is no block-end."""
    rules = protocol_rules()[:2]
    async with asyncio.timeout(TEST_TIMEOUT), open_client(emu.base_url, "clean") as client:
        chunks = [chunk async for chunk in client.stream(MESSAGES, retry=False, rules=rules)]

    assert "block-end" not in types(chunks)
    assert "text-delta" in types(chunks)


async def test_processing_after_the_retry_composes_on_the_chunk_observable(emu: Emulator) -> None:
    """What used to be ``operators=`` appended after the retry: ordinary reactivex operators on ``chunks()``, which
    see the ``retry`` chunks and every attempt's public chunks."""
    key = unique("after")
    headers = {"x-emulator-fail-first": "2", "x-emulator-then": "clean-tool", "x-emulator-key": key}
    seen: list[str] = []
    retries: list[Retry] = []

    def chunk_type(chunk: Chunk) -> str:
        return chunk.type

    ended = asyncio.Event()
    async with asyncio.timeout(TEST_TIMEOUT), open_client(emu.base_url, "never-identified", headers) as client:
        observable = client.chunks(client.request_body(MESSAGES)).pipe(
            ops.do_action(on_next=lambda c: retries.append(c) if isinstance(c, Retry) else None),
            ops.filter(lambda c: not isinstance(c, Retry | UsageChunk)),
            ops.map(chunk_type),
        )
        subscription = observable.subscribe(on_next=seen.append, on_completed=ended.set)
        try:
            await ended.wait()
        finally:
            subscription.dispose()

    assert [r.failure.code for r in retries] == [Code.MALFORMED_TOOL_CALL, Code.MALFORMED_TOOL_CALL]
    assert "retry" not in seen
    assert "usage" not in seen
    assert seen[-2:] == ["block-end", "finish"]
    assert emu.state.attempts[key] == 3


async def test_operators_is_refused_with_the_new_names(emu: Emulator) -> None:
    async with open_client(emu.base_url, "clean") as client:
        with pytest.raises(TypeError, match="rules="):
            async for _ in client.stream(MESSAGES, operators=[]):
                pass

    assert "operators" not in inspect.signature(client.chunks).parameters
