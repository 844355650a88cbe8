"""``SanitizingTransport``: an httpx transport (sync and async) that makes a streamed chat completion clean.

    client = openai.OpenAI(http_client=httpx.Client(transport=pipeline.SanitizingTransport()))
    client = openai.AsyncOpenAI(http_client=httpx.AsyncClient(transport=pipeline.SanitizingTransport()))

A ``POST .../chat/completions`` whose JSON body says ``"stream": true`` is sent with the wrapped transport, its
response classified (``pipeline._http``) and its body run through the library's operators, and the client receives
standard OpenAI SSE (``_encode.py``). Every other request passes through untouched.

Failures (docs/decisions/0022-sanitizing-transport.md): a failure the ``RetryPolicy`` retries that happens before any
byte has been handed to the client (an HTTP 429, a ``MALFORMED_TOOL_CALL`` refusal with no text before it, ...) is
retried here, so the client sees only the good attempt; the client receives the response only when its first clean
byte is ready. After that, a failure ends the stream with an in-band ``data: {"error": ...}`` event. With
``mode="buffered"`` the whole response is held until its finish, so every retryable failure is retried. A final
HTTP error (status >= 300) is passed on as it came (status, headers, the bounded body), so the SDK raises its own
``RateLimitError``, ``AuthenticationError``, ...
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx

from operators import DEFAULT_LIMITS, Code, Failure, Limits, RetryPolicy
from operators.extend import OWN_ERROR_TYPE

from .._http import body_failure, is_event_stream, read_bounded, read_bounded_sync
from ._bodies import DROPPED_HEADERS, AsyncBody, Bytes, SyncBody, sse_headers
from ._encode import error_event
from ._sanitizer import Attempts, Sanitizer

__all__ = ["OBSERVER_EXTENSION", "Mode", "SanitizingTransport"]

Mode = Literal["stream", "buffered"]
OBSERVER_EXTENSION = "llm_stream_observer"
"""A request extension: a callable given every chunk of a sanitized stream (the proxy's report of the request)."""


def _streamed_chat(request: httpx.Request) -> dict[str, Any] | None:
    """The JSON body of a streamed chat-completions request, else ``None`` (the request passes through)."""
    if request.method != "POST" or not request.url.path.rstrip("/").endswith("/chat/completions"):
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx.RequestNotRead):
        return None
    return body if isinstance(body, dict) and body.get("stream") is True else None


def _bearer(request: httpx.Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _passthrough(upstream: httpx.Response, raw: bytes | int, failure: Failure) -> httpx.Response:
    """A final HTTP error as it came; a body past the bound is replaced by an OpenAI-shaped error naming the bound."""
    if isinstance(raw, int):
        error = {"message": failure.message, "type": OWN_ERROR_TYPE, "code": failure.code}
        raw = json.dumps({"error": error}).encode()
    headers = {k: v for k, v in upstream.headers.items() if k.lower() not in DROPPED_HEADERS}
    headers["content-type"] = upstream.headers.get("content-type", "application/json")
    return httpx.Response(upstream.status_code, headers=headers, stream=Bytes(raw))


class SanitizingTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Wraps ``transport`` (default: httpx's own, sync or async as used) and sanitizes streamed chat completions.

    ``retry_policy`` (default ``RetryPolicy()``) decides which failures are retried before the client sees a byte;
    ``limits`` bounds each response as in ``pipeline.translate``; ``mode`` is ``"stream"`` (forward as soon as
    clean bytes are ready) or ``"buffered"`` (hold the response until its finish); ``random`` is the backoff's
    jitter source (inject a fixed one in tests). The same instance serves an ``httpx.Client`` and an
    ``httpx.AsyncClient``.
    """

    def __init__(
        self,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        limits: Limits | None = None,
        mode: Mode = "stream",
        random: Callable[[], float] | None = None,
    ) -> None:
        if mode not in ("stream", "buffered"):
            raise ValueError(f"mode is 'stream' or 'buffered', got {mode!r}")
        self.retry_policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.limits = limits
        self.mode: Mode = mode
        self._random = random
        self._sync = transport if isinstance(transport, httpx.BaseTransport) else None
        self._async = transport if isinstance(transport, httpx.AsyncBaseTransport) else None
        self._own_sync = self._own_async = transport is None

    def __repr__(self) -> str:
        return f"SanitizingTransport(mode={self.mode!r})"

    def _attempts(self) -> Attempts:
        if self._random is None:
            return Attempts(self.retry_policy)
        return Attempts(self.retry_policy, self._random)

    # -- sync -----------------------------------------------------------------------------------------------------

    def _inner_sync(self) -> httpx.BaseTransport:
        if self._sync is None:
            if not self._own_sync:
                raise TypeError("this SanitizingTransport wraps an async transport: use it with httpx.AsyncClient")
            self._sync = httpx.HTTPTransport()
        return self._sync

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._inner_sync()
        if not isinstance(request.stream, httpx.ByteStream):
            request.read()
        body = _streamed_chat(request)
        if body is None:
            return inner.handle_request(request)
        attempts = self._attempts()
        limits = self.limits or DEFAULT_LIMITS
        buffered = self.mode == "buffered"
        while True:
            try:
                upstream = inner.handle_request(request)
            except httpx.TransportError as exc:
                delay = attempts.delay_s(_connect_failure(request, exc))
                if delay is None:
                    raise  # the client's own error (the SDK's APIConnectionError), as without the transport
                time.sleep(delay)
                continue
            if is_event_stream(upstream):
                result = SyncBody.start(upstream, self._sanitizer(request, body), buffered, attempts)
                if isinstance(result, httpx.Response):
                    return result
                time.sleep(result)
                continue
            raw = read_bounded_sync(upstream, limits.max_error_body_bytes)
            upstream.close()
            failure = body_failure(upstream, raw, limits=limits, origin=str(request.url.host), api_key=_bearer(request))
            delay = attempts.delay_s(failure)
            if delay is not None:
                time.sleep(delay)
                continue
            return _final(upstream, raw, failure)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()

    # -- async ----------------------------------------------------------------------------------------------------

    def _inner_async(self) -> httpx.AsyncBaseTransport:
        if self._async is None:
            if not self._own_async:
                raise TypeError("this SanitizingTransport wraps a sync transport: use it with httpx.Client")
            self._async = httpx.AsyncHTTPTransport()
        return self._async

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._inner_async()
        if not isinstance(request.stream, httpx.ByteStream):
            await request.aread()
        body = _streamed_chat(request)
        if body is None:
            return await inner.handle_async_request(request)
        attempts = self._attempts()
        limits = self.limits or DEFAULT_LIMITS
        buffered = self.mode == "buffered"
        while True:
            try:
                upstream = await inner.handle_async_request(request)
            except httpx.TransportError as exc:
                delay = attempts.delay_s(_connect_failure(request, exc))
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            if is_event_stream(upstream):
                result = await AsyncBody.start(upstream, self._sanitizer(request, body), buffered, attempts)
                if isinstance(result, httpx.Response):
                    return result
                await asyncio.sleep(result)
                continue
            raw = await read_bounded(upstream, limits.max_error_body_bytes)
            await upstream.aclose()
            failure = body_failure(upstream, raw, limits=limits, origin=str(request.url.host), api_key=_bearer(request))
            delay = attempts.delay_s(failure)
            if delay is not None:
                await asyncio.sleep(delay)
                continue
            return _final(upstream, raw, failure)

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()

    def _sanitizer(self, request: httpx.Request, body: dict[str, Any]) -> Sanitizer:
        model = body.get("model")
        return Sanitizer(
            model=model if isinstance(model, str) else "unknown",
            limits=self.limits,
            api_key=_bearer(request),
            observer=request.extensions.get(OBSERVER_EXTENSION),
        )


def _connect_failure(request: httpx.Request, exc: httpx.TransportError) -> Failure:
    """A request that got no response: ``TIMEOUT`` for a timeout, ``TRANSPORT`` otherwise (both retryable)."""
    code = Code.TIMEOUT if isinstance(exc, httpx.TimeoutException) else Code.TRANSPORT
    return Failure(code, f"request to {request.url.host} failed: {type(exc).__name__}: {exc}")


def _final(upstream: httpx.Response, raw: bytes | int, failure: Failure) -> httpx.Response:
    """The response for a final failure before any byte: an HTTP error as it came, any other (a 2xx that is not an
    event stream) as an event stream ending in the error event."""
    if upstream.status_code >= 300:
        return _passthrough(upstream, raw, failure)
    return httpx.Response(200, headers=sse_headers(upstream), stream=Bytes(error_event(failure)))
