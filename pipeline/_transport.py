"""The HTTP transport: an OpenAI-compatible chat-completions client over ``httpx`` + ``httpx-sse``.

- ``httpx_sse.aconnect_sse`` makes the connection (``Accept: text/event-stream``, ``Cache-Control: no-store``); the
  body is read with ``response.aiter_bytes()`` and fed to our own ``parse_sse``, because httpx-sse's decoder deviates
  from the SSE standard (a leading BOM drops the first event; blank lines after an ``id:`` give empty events).
- The response is a cold source Observable: each subscription sends a new request, so a retry is a re-subscription
  (``retry_when_retryable``). Disposing the subscription cancels the request task, which closes the HTTP response at
  once.
- Failures never escape as exceptions: the source raises a ``StreamFailure`` through ``on_error`` and
  ``close_on_done`` turns it into an error finish (after any usage), with the anchor's codes (reference 4.3):
  ``classify_http_error`` for non-2xx statuses, ``TRANSPORT`` for connection failures, ``TIMEOUT`` when no byte (not
  even a comment) arrives for ``idle_timeout`` seconds, ``EMPTY_RESPONSE`` for a 2xx with no body, and a 2xx that is
  not ``text/event-stream`` is classified from its body (an OpenAI-shaped error object like an in-band error,
  anything else ``MALFORMED_RESPONSE``).
- ``stream()`` bridges Rx to ``async for`` without any scheduler thread: the request task pushes each read through
  the chain and then waits until the caller has taken what it produced, so the caller's loop paces the reads.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
from httpx_sse import aconnect_sse
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from operators import Chunk, Code, Failure, Finish, FinishReason, RetryPolicy, retry_when_retryable
from operators._stage import Operator
from operators.extend import StreamFailure, classify_http_error, classify_inband_error

from .compose import Assembler, AssistantMessage, apply, to_chunks, translate_batches

__all__ = ["DEFAULT_IDLE_TIMEOUT", "ChatClient", "ClientConfig", "ConfigError", "is_loopback"]

DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds without a byte (or a comment) before an attempt fails with ``TIMEOUT``."""

_KNOWN_HOSTS = {
    "api.deepseek.com": ("DEEPSEEK_API_KEY", "deepseek-chat"),
    "api.openai.com": ("OPENAI_API_KEY", "gpt-4o-mini"),
}


class ConfigError(ValueError):
    """The client cannot be configured: what is missing and how to give it."""


def is_loopback(base_url: str) -> bool:
    """True for ``localhost`` and loopback IP literals (127.0.0.0/8, ::1); a DNS name like 127.example.com is not."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class ClientConfig:
    """Where to send requests. ``api_key`` is never shown in a repr, a message or a log line."""

    base_url: str
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    connect_timeout: float = 30.0

    @classmethod
    def resolve(
        cls,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        idle_timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ClientConfig:
        """Arguments first, then ``LLM_STREAM_BASE_URL`` / ``LLM_STREAM_API_KEY`` / ``LLM_STREAM_MODEL``, then
        ``DEEPSEEK_API_KEY`` or ``OPENAI_API_KEY`` when the base URL is theirs. A non-loopback URL needs a key."""
        env = os.environ if env is None else env
        url = (base_url or env.get("LLM_STREAM_BASE_URL") or "https://api.deepseek.com/v1").rstrip("/")
        host = urlsplit(url).hostname or ""
        known = _KNOWN_HOSTS.get(host)
        key = api_key or env.get("LLM_STREAM_API_KEY") or (env.get(known[0]) if known else None)
        chosen_model = model or env.get("LLM_STREAM_MODEL") or (known[1] if known else None)
        if chosen_model is None:
            if not is_loopback(url):
                raise ConfigError(f"no model for {url}: pass --model or set LLM_STREAM_MODEL")
            chosen_model = "clean"
        if not key and not is_loopback(url):
            hint = f" or {known[0]}" if known else ""
            raise ConfigError(f"no API key for {url}: set LLM_STREAM_API_KEY{hint}")
        return cls(
            base_url=url,
            model=chosen_model,
            api_key=key or None,
            idle_timeout=DEFAULT_IDLE_TIMEOUT if idle_timeout is None else idle_timeout,
        )


class ChatClient:
    """Streams chat completions through the pipeline, with bounded retry.

        client = ChatClient(base_url="http://127.0.0.1:8808/v1", model="seed-bug")
        async for chunk in client.stream([{"role": "user", "content": "hi"}]):
            ...
        message = await client.complete(messages)
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        model: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = None,
        retry_policy: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        config: ClientConfig | None = None,
    ) -> None:
        self.config = config or ClientConfig.resolve(
            base_url=base_url, model=model, api_key=api_key, idle_timeout=idle_timeout
        )
        self.retry_policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.headers = dict(headers or {})
        self._own_client = http_client is None
        self._client = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=self.config.connect_timeout, read=None, write=30.0, pool=30.0)
        )

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.config.base_url!r}, model={self.config.model!r})"

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the request ----------------------------------------------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: str | Sequence[str] | None = None,
        model: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model or self.config.model,
            "messages": [dict(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stop is not None:
            body["stop"] = stop
        body.update(extra)
        return body

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return headers

    def _redact(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "[redacted]") if key else text

    def response(
        self, body: Mapping[str, Any], *, pace: Callable[[], Awaitable[None]] | None = None
    ) -> Observable[bytes]:
        """A cold Observable of the response's byte reads. Each subscription sends the request again; subscribe from
        within a running event loop. Disposing it closes the response."""

        def subscribe(
            observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            task = asyncio.get_running_loop().create_task(self._pump(dict(body), observer, pace))

            def close() -> None:
                task.cancel()

            return Disposable(close)

        return Observable(subscribe)

    async def _pump(
        self,
        body: dict[str, Any],
        observer: abc.ObserverBase[bytes],
        pace: Callable[[], Awaitable[None]] | None,
    ) -> None:
        url = f"{self.config.base_url}/chat/completions"
        try:
            async with aconnect_sse(self._client, "POST", url, json=body, headers=self._request_headers()) as source:
                response = source.response
                failure = await self._check_response(response)
                if failure is not None:
                    observer.on_error(StreamFailure(failure))
                    return
                received = False
                reads = response.aiter_bytes()
                while True:
                    try:
                        async with asyncio.timeout(self.config.idle_timeout):
                            piece = await anext(reads)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        observer.on_error(StreamFailure(Failure(
                            Code.TIMEOUT, f"no data from {self.config.base_url} for {self.config.idle_timeout:g} s",
                        )))
                        return
                    if not piece:
                        continue
                    received = True
                    observer.on_next(piece)
                    if pace is not None:
                        await pace()
                if not received:
                    observer.on_error(StreamFailure(Failure(
                        Code.EMPTY_RESPONSE,
                        f"{self.config.base_url} answered HTTP {response.status_code} with no body",
                        status=response.status_code,
                    )))
                    return
                observer.on_completed()
        except asyncio.CancelledError:
            raise
        except httpx.TimeoutException as exc:
            code = Code.TRANSPORT if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout) else Code.TIMEOUT
            observer.on_error(StreamFailure(Failure(code, self._redact(f"request to {url} timed out: {exc}"))))
        except (httpx.HTTPError, OSError) as exc:
            detail = str(exc) or type(exc).__name__
            observer.on_error(StreamFailure(Failure(
                Code.TRANSPORT, self._redact(f"request to {url} failed: {type(exc).__name__}: {detail}"),
            )))
        except Exception as exc:  # never escapes: the chain turns it into an UNKNOWN finish
            observer.on_error(exc)

    async def _check_response(self, response: httpx.Response) -> Failure | None:
        status = response.status_code
        if status >= 300:
            text = (await response.aread()).decode("utf-8", errors="replace")
            return classify_http_error(status, text, response.headers, api_key=self.config.api_key)
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type == "text/event-stream":
            return None
        raw = await response.aread()
        if not raw.strip():
            message = f"{self.config.base_url} answered HTTP {status} with no body"
            return Failure(Code.EMPTY_RESPONSE, message, status=status)
        text = raw.decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "error" in parsed and not parsed.get("choices"):
            failure = classify_inband_error(parsed["error"])
            return attrs.evolve(failure, message=self._redact(failure.message))
        shown = " ".join(text.split())[:120]
        return Failure(
            Code.MALFORMED_RESPONSE,
            self._redact(f"expected text/event-stream, got {content_type or 'no content type'}: {shown}"),
            status=status,
        )

    # -- the facades ----------------------------------------------------------------------------------------------

    def attempts(
        self, body: Mapping[str, Any], *, pace: Callable[[], Awaitable[None]] | None = None
    ) -> Observable[Any]:
        """One attempt per subscription, through the protocol operators (batches)."""
        return translate_batches(self.response(body, pace=pace))

    def chunks(
        self,
        body: Mapping[str, Any],
        *,
        retry: RetryPolicy | bool = True,
        anomalies: bool = False,
        scheduler: abc.SchedulerBase | None = None,
        operators: Sequence[Operator] = (),
        pace: Callable[[], Awaitable[None]] | None = None,
    ) -> Observable[Chunk]:
        """The whole chain as an Observable of chunks: attempts, ``retry_when_retryable``, extra operators."""
        chain: list[Operator] = []
        if retry is not False:
            policy = retry if isinstance(retry, RetryPolicy) else self.retry_policy
            chain.append(retry_when_retryable(policy, scheduler=scheduler))
        chain.extend(operators)
        chunks: Observable[Chunk] = to_chunks(anomalies=anomalies)(apply(self.attempts(body, pace=pace), chain))
        return chunks

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        retry: RetryPolicy | bool = True,
        anomalies: bool = False,
        cancel: asyncio.Event | None = None,
        operators: Sequence[Operator] = (),
        **request: Any,
    ) -> AsyncIterator[Chunk]:
        """``async for chunk in client.stream(messages, tools=...)``: chunks as they arrive, retries included.

        Setting ``cancel`` stops the request (or a pending retry) and ends with an ``aborted`` finish. Leaving the loop
        early closes the response.
        """
        body = self.request_body(messages, **request)
        ready: collections.deque[Chunk] = collections.deque()
        wake = asyncio.Event()
        drained = asyncio.Event()
        drained.set()
        ended = False

        def on_next(chunk: Chunk) -> None:
            ready.append(chunk)
            drained.clear()
            wake.set()

        def on_end(*_: Any) -> None:
            nonlocal ended
            ended = True
            wake.set()

        async def pace() -> None:
            await drained.wait()

        watcher: asyncio.Task[Any] | None = None
        if cancel is not None:
            watcher = asyncio.get_running_loop().create_task(cancel.wait())
            watcher.add_done_callback(lambda _: wake.set())

        subscription = self.chunks(body, retry=retry, anomalies=anomalies, operators=operators, pace=pace).subscribe(
            on_next=on_next, on_error=on_end, on_completed=on_end
        )
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    subscription.dispose()
                    yield Finish(FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")))
                    return
                while ready:
                    yield ready.popleft()
                drained.set()
                if ended:
                    return
                wake.clear()
                if ready or ended:
                    continue
                await wake.wait()
        finally:
            subscription.dispose()
            if watcher is not None:
                watcher.cancel()

    async def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> AssistantMessage:
        """Streams a response and returns it assembled."""
        assembler = Assembler()
        async for chunk in self.stream(messages, **kwargs):
            assembler.feed(chunk)
        return assembler.result()
