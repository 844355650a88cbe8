"""The HTTP transport over real loopback HTTP against the gateway emulator: every failure maps to its code
(dsh-behaviour.md §4.3), retries work end to end (§5), the API key never leaks, disposal and cancellation close the
server-side stream, a slow consumer paces the reads, and ``ClientConfig.resolve`` reads its settings in order.

Retries over HTTP use tiny delays (1 to 5 ms); nothing here sleeps to test a delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import socket
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import pytest

import pipeline
from operators import Chunk, Code, Finish, Retry, RetryPolicy, ToolCallDelta, UsageChunk
from pipeline._emulator import Emulator
from pipeline._emulator_scripts import CLEAN_TEXT
from pipeline._transport import ChatClient, ClientConfig, ConfigError, is_loopback

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
CLEAN = "".join(CLEAN_TEXT)
SECRET = "sk-test-SECRET-123"
TEST_TIMEOUT = 10.0


def fast_policy(**overrides: Any) -> RetryPolicy:
    settings: dict[str, Any] = {"initial_delay_ms": 1, "max_delay_ms": 5, "jitter_ratio": 0}
    settings.update(overrides)
    return RetryPolicy.normal(**settings)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator() as emulator:
        yield emulator


@pytest.fixture
def fresh_emu() -> Iterator[Emulator]:
    """An emulator of its own, for counting disconnects without another test's late one."""
    with Emulator() as emulator:
        yield emulator


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


# --------------------------------------------------------------------------------------------------- failure codes


@pytest.mark.parametrize(
    ("profile", "code", "status"),
    [
        ("rate-limit", Code.RATE_LIMIT, 429),
        ("server-error", Code.SERVER, 500),
        ("unavailable", Code.SERVER, 503),
        ("auth", Code.AUTH, 401),
        ("quota", Code.QUOTA, 429),
        ("context", Code.CONTEXT_WINDOW_EXCEEDED, 400),
        ("html-200", Code.MALFORMED_RESPONSE, 200),
        ("empty-200", Code.EMPTY_RESPONSE, 200),
    ],
)
async def test_http_failures_map_to_their_codes(emu: Emulator, profile: str, code: str, status: int) -> None:
    chunks = await collect(emu.base_url, profile)

    assert types(chunks) == ["finish"]
    reason = last_finish(chunks).reason
    assert reason.kind == "error"
    assert reason.failure is not None
    assert reason.failure.code == code
    assert reason.failure.status == status
    assert reason.failure.message
    assert "\n" not in reason.failure.message


async def test_rate_limit_carries_retry_after_and_no_request_id(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "rate-limit")

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.retry_after_ms == 2000
    assert failure.request_id is None  # the emulator sends no x-request-id / request-id header
    assert failure.message.startswith("Rate limit reached")


async def test_html_200_message_shows_what_came_instead_of_a_stream(emu: Emulator) -> None:
    failure = last_finish(await collect(emu.base_url, "html-200")).reason.failure

    assert failure is not None
    assert "text/html" in failure.message
    assert "502 Bad Gateway" in failure.message


@pytest.mark.parametrize(
    ("profile", "code", "text"),
    [
        ("drop-mid-stream", Code.TRANSPORT, "Hello from the"),
        ("error-midstream", Code.SERVER, "Hello from"),
        ("event-error", Code.INVALID_REQUEST, "maybe"),
        ("malformed-json", Code.MALFORMED_RESPONSE, "Hello"),
        ("no-done-no-finish", Code.STREAM_CLOSED, CLEAN),
    ],
)
async def test_mid_stream_failures_keep_the_partial_text(emu: Emulator, profile: str, code: str, text: str) -> None:
    chunks = await collect(emu.base_url, profile)

    finish = last_finish(chunks)
    assert finish.reason.kind == "error"
    assert finish.reason.code == code
    assert "block-end" not in types(chunks)
    message = pipeline.assemble(chunks)
    assert message.text == text
    assert not message.ok


async def test_a_closed_port_is_transport(emu: Emulator) -> None:
    port = closed_port()
    chunks = await collect(f"http://127.0.0.1:{port}/v1", "clean")

    failure = last_finish(chunks).reason.failure
    assert types(chunks) == ["finish"]
    assert failure is not None
    assert failure.code == Code.TRANSPORT
    assert f"127.0.0.1:{port}" in failure.message


async def test_a_stall_is_timeout(emu: Emulator) -> None:
    started = time.monotonic()
    chunks = await collect(emu.base_url, "stall", idle_timeout=0.3)

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.code == Code.TIMEOUT
    assert "0.3 s" in failure.message
    assert pipeline.assemble(chunks).text == "Hello from"
    assert time.monotonic() - started < 5


async def test_no_done_is_a_clean_stop(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "no-done")

    assert last_finish(chunks).reason.kind == "stop"
    message = pipeline.assemble(chunks)
    assert message.text == CLEAN
    assert message.usage is not None


async def test_never_identified_is_malformed_tool_call_after_the_usage(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "never-identified")

    assert last_finish(chunks).reason.code == Code.MALFORMED_TOOL_CALL
    assert types(chunks)[-2:] == ["usage", "finish"]
    assert "block-end" not in types(chunks)
    assert all(c.id == "" for c in chunks if isinstance(c, ToolCallDelta))
    assert pipeline.assemble(chunks).tool_calls == ()


async def test_seed_bug_over_http_gives_clean_tool_calls(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "seed-bug")

    assert last_finish(chunks).reason.kind == "tool-calls"
    calls = pipeline.assemble(chunks).tool_calls
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Berlin"}),
    ]
    assert all(c.id for c in calls)
    assert calls[0].id.startswith("call_emu0_")
    assert calls[1].id.startswith("call_emu1_")
    assert all(c.id and c.name for c in chunks if isinstance(c, ToolCallDelta))


@pytest.mark.parametrize("profile", ["bom", "id-after-sse-id", "crlf", "keepalive", "usage-trailer"])
async def test_framing_deviations_give_the_same_message_as_clean(emu: Emulator, profile: str) -> None:
    clean = pipeline.assemble(await collect(emu.base_url, "clean"))
    other = pipeline.assemble(await collect(emu.base_url, profile))

    assert clean.text == CLEAN
    assert other.to_json() == clean.to_json()


async def test_the_request_asks_for_a_stream_with_usage(emu: Emulator) -> None:
    marker = unique("body")
    await collect(emu.base_url, "clean", {"x-test-id": marker})

    (recorded,) = [r for r in emu.state.requests if r.headers.get("x-test-id") == marker]
    assert recorded.body["stream"] is True
    assert recorded.body["stream_options"] == {"include_usage": True}
    assert recorded.body["model"] == "clean"
    assert recorded.body["messages"] == MESSAGES
    assert recorded.headers["accept"] == "text/event-stream"


# --------------------------------------------------------------------------------------------------- the API key


@pytest.mark.parametrize("profile", ["auth", "server-error", "rate-limit", "html-200", "drop-mid-stream", "clean"])
async def test_the_api_key_never_leaks(emu: Emulator, profile: str) -> None:
    marker = unique("key")
    chunks = await collect(emu.base_url, profile, {"x-test-id": marker}, api_key=SECRET)

    assert SECRET not in json.dumps([c.to_json() for c in chunks])
    failure = last_finish(chunks).reason.failure
    if failure is not None:
        assert SECRET not in failure.message
    (recorded,) = [r for r in emu.state.requests if r.headers.get("x-test-id") == marker]
    assert "authorization" not in recorded.headers
    assert SECRET not in json.dumps(dict(recorded.headers))
    assert SECRET not in json.dumps(recorded.body)


async def test_the_auth_profiles_message_does_not_echo_the_key(emu: Emulator) -> None:
    failure = last_finish(await collect(emu.base_url, "auth", api_key=SECRET)).reason.failure

    assert failure is not None
    assert failure.code == Code.AUTH
    assert "Incorrect API key" in failure.message
    assert SECRET not in failure.message


async def test_the_api_key_is_not_in_any_repr(emu: Emulator) -> None:
    async with make_client(emu.base_url, "clean", api_key=SECRET) as client:
        assert client.config.api_key == SECRET
        assert SECRET not in repr(client)
        assert SECRET not in str(client)
        assert SECRET not in repr(client.config)
        assert SECRET not in str(client.config)
        assert SECRET not in repr(client.request_body(MESSAGES))


async def test_a_transport_message_redacts_the_key() -> None:
    """Even a base URL that happens to contain the key does not carry it into a failure message."""
    base_url = f"http://127.0.0.1:{closed_port()}/{SECRET}/v1"
    chunks = await collect(base_url, "clean", api_key=SECRET)

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.code == Code.TRANSPORT
    assert SECRET not in failure.message
    assert "[redacted]" in failure.message


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


# --------------------------------------------------------------------------------------------------- configuration


def test_resolve_arguments_win_over_the_environment() -> None:
    env = {
        "LLM_STREAM_BASE_URL": "https://env.example.com/v1",
        "LLM_STREAM_API_KEY": "env-key",
        "LLM_STREAM_MODEL": "env-model",
    }
    config = ClientConfig.resolve(base_url="https://arg.example.com/v1/", model="arg-model", api_key="arg-key", env=env)

    assert (config.base_url, config.model, config.api_key) == ("https://arg.example.com/v1", "arg-model", "arg-key")


def test_resolve_reads_the_llm_stream_variables() -> None:
    env = {
        "LLM_STREAM_BASE_URL": "https://env.example.com/v1",
        "LLM_STREAM_API_KEY": "env-key",
        "LLM_STREAM_MODEL": "env-model",
    }
    config = ClientConfig.resolve(env=env)

    assert (config.base_url, config.model, config.api_key) == ("https://env.example.com/v1", "env-model", "env-key")


def test_resolve_defaults_to_deepseek_with_its_key() -> None:
    config = ClientConfig.resolve(env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"})

    assert (config.base_url, config.model, config.api_key) == ("https://api.deepseek.com/v1", "deepseek-chat", "ds-key")


def test_resolve_uses_the_openai_key_for_openai() -> None:
    config = ClientConfig.resolve(
        base_url="https://api.openai.com/v1", env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"}
    )

    assert (config.model, config.api_key) == ("gpt-4o-mini", "oa-key")


def test_resolve_prefers_llm_stream_api_key_over_the_providers_key() -> None:
    config = ClientConfig.resolve(env={"DEEPSEEK_API_KEY": "ds-key", "LLM_STREAM_API_KEY": "generic"})

    assert config.api_key == "generic"


def test_resolve_does_not_send_a_providers_key_elsewhere() -> None:
    with pytest.raises(ConfigError):
        ClientConfig.resolve(
            base_url="https://gateway.example.com/v1",
            model="m",
            env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"},
        )


@pytest.mark.parametrize(
    ("base_url", "hint"),
    [
        (None, "DEEPSEEK_API_KEY"),
        ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        ("https://api.openai.com/v1", "OPENAI_API_KEY"),
        ("https://gateway.example.com/v1", "LLM_STREAM_API_KEY"),
    ],
)
def test_a_missing_key_for_a_remote_url_is_a_one_line_config_error(base_url: str | None, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig.resolve(base_url=base_url, model="m", env={})

    message = str(caught.value)
    assert "\n" not in message
    assert "LLM_STREAM_API_KEY" in message
    assert hint in message


def test_a_remote_url_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="LLM_STREAM_MODEL"):
        ClientConfig.resolve(base_url="https://gateway.example.com/v1", api_key="k", env={})


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8808/v1", "http://localhost:1234/v1", "http://[::1]:8808/v1", "http://127.1.2.3/v1"]
)
def test_loopback_needs_no_key(base_url: str) -> None:
    config = ClientConfig.resolve(base_url=base_url, env={})

    assert config.api_key is None
    assert config.model == "clean"
    assert is_loopback(base_url)


def test_an_empty_key_counts_as_missing() -> None:
    with pytest.raises(ConfigError):
        ClientConfig.resolve(base_url="https://gateway.example.com/v1", model="m", env={"LLM_STREAM_API_KEY": ""})


def test_the_resolved_idle_timeout() -> None:
    assert ClientConfig.resolve(base_url="http://127.0.0.1/v1", env={}).idle_timeout == 300
    assert ClientConfig.resolve(base_url="http://127.0.0.1/v1", idle_timeout=0.5, env={}).idle_timeout == 0.5


@pytest.mark.parametrize("base_url", ["https://api.deepseek.com/v1", "http://10.0.0.1/v1", "http://0.0.0.0:8808/v1"])
def test_remote_urls_are_not_loopback(base_url: str) -> None:
    assert not is_loopback(base_url)


def test_a_dns_name_starting_with_127_is_not_loopback() -> None:
    assert not is_loopback("https://127.example.com/v1")
