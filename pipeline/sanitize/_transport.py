"""``SanitizingTransport``: an httpx / httpx2 transport (sync and async) that repairs streamed responses in place.

    client = openai.OpenAI(http_client=openai.DefaultHttpxClient(transport=pipeline.SanitizingTransport()))
    client = anthropic.AsyncAnthropic(http_client=anthropic.DefaultAsyncHttpxClient(transport=...))
    llm = ChatOpenAI(http_client=httpx.Client(transport=pipeline.SanitizingTransport()))

A request that asks for a stream by its wire-format record's rule (``.../chat/completions``, ``/messages``,
``/responses``: a ``POST`` whose JSON body says ``"stream": true``; ``_formats.py``) is sent with the wrapped
transport and its body repaired by the format's ``StreamRepair``: each event forwarded as the upstream sent it unless a
rule must change it. Every other request passes through untouched.

One retry layer, the client's (docs/decisions/0033-one-retry-layer.md): by default nothing is retried here. An HTTP
error passes as the upstream sent it; a stream-level failure found before any byte was forwarded (a never-identified
call, a cut, an in-band error) becomes an HTTP error in the API's own shape naming our code, with ``x-should-retry``
from the library's retry classification, so the client's ``max_retries``, backoff and timeout govern; a read timeout
before the first byte is the client's own ``ReadTimeout``. After the first byte a failure is an in-band error event.
``retry=RetryPolicy(...)`` turns on internal retries for clients with no retry loop of their own, every wait bounded
by the request's own timeout.
"""

from __future__ import annotations

import asyncio
import random as _random
import ssl
import time
from collections.abc import Callable
from typing import Any, Literal

from operators import DEFAULT_LIMITS, DEFAULT_RETRYABLE_CODES, Code, Failure, Limits, RetryPolicy

from .._http import body_failure, is_event_stream, read_bounded, read_bounded_sync
from .._secrets import redact_url_keys
from .._tls import plain_context, verifying_context
from ._bodies import AsyncBody, Bytes, Deadline, SyncBody, relay_headers
from ._flavours import TIMEOUTS, TRANSPORT_ERRORS, Transports, flavour
from ._formats import StreamFormat, streamed_format
from ._head_deadline import bound_head, head_deadline
from ._repair import error_response
from ._request_facts import Attempt, budget_s, needs_tls, request_key

__all__ = ["OBSERVER_EXTENSION", "Mode", "SanitizingTransport"]

Mode = Literal["stream", "buffered"]
OBSERVER_EXTENSION = "llm_stream_observer"
"""A request extension: a callable given each attempt's ``StreamRepair`` (the proxy's report of the request reads its
finish, failure and repairs)."""


class SanitizingTransport(Transports):
    """Wraps ``transport`` (default: the client's own module's default transport, sync or async as used) and repairs
    streamed responses. One instance serves ``httpx.Client``, ``httpx.AsyncClient``, ``httpx2.Client`` and
    ``httpx2.AsyncClient``.

    ``retry`` (default ``None``: no internal retries) is a ``RetryPolicy`` for clients with no retry loop;
    ``retry_policy`` is its older name. ``limits`` bound what the repairers hold (``RepairFactory``; a forwarded
    answer is not cut at ``max_text_bytes``). ``mode`` is ``"stream"`` (forward as soon as repaired bytes are ready)
    or ``"buffered"`` (hold the response until its finish, at most ``max_text_bytes`` of it). ``strict=True`` adds
    the library's outcome policy: a refusal is ``REFUSAL``, an answer with nothing in it ``EMPTY_RESPONSE`` (both
    answered with ``x-should-retry: true``); by default those reach the client as the upstream sent them.
    ``random`` is the backoff's jitter source (inject a fixed one in tests).

    ``verify`` (default ``True``) is the TLS verification of the transport it builds when given none: ``True`` shares
    one context per process, built on the first ``https://`` request (``pipeline/_tls.py``; an ``http://`` request
    builds none), so a transport per client or per request costs no CA-bundle load; an ``ssl.SSLContext`` (with
    ``load_cert_chain`` for a client certificate) or ``False`` is this transport's own. A client's own ``verify=``
    applies only to a transport the client builds, never to this one: give it here, or wrap your own transport.
    """

    def __init__(
        self,
        transport: Any = None,
        *,
        retry: RetryPolicy | None = None,
        retry_policy: RetryPolicy | None = None,
        limits: Limits | None = None,
        mode: Mode = "stream",
        strict: bool = False,
        random: Callable[[], float] | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        if mode not in ("stream", "buffered"):
            raise ValueError(f"mode is 'stream' or 'buffered', got {mode!r}")
        self.retry = retry if retry is not None else retry_policy
        self.limits = limits
        self.mode: Mode = mode
        self.strict = strict
        self._random = random or _random.random
        self._given = transport
        self._verify = verify
        self._inner: dict[tuple[str, bool, bool], Any] = {}

    def __repr__(self) -> str:
        return f"SanitizingTransport(mode={self.mode!r})"

    def _transport(self, hx: Any, sync: bool, tls: bool) -> Any:
        if self._given is not None:
            wanted = hx.BaseTransport if sync else hx.AsyncBaseTransport
            if not isinstance(self._given, wanted):
                kind = "a sync" if sync else "an async"
                raise TypeError(f"this SanitizingTransport wraps {type(self._given).__name__}, which is not {kind} "
                                f"{hx.__name__} transport: use it with the matching client")
            if sync:
                bound_head(self._given)  # inert but for our own requests' heads (_head_deadline.py)
            return self._given
        own = self._verify is not True  # a verify of its own: one inner transport (and context) for both schemes
        key = (hx.__name__, sync, tls or own)
        if key not in self._inner:
            verify = self._verify if own else verifying_context(hx) if tls else plain_context()
            self._inner[key] = hx.HTTPTransport(verify=verify) if sync else hx.AsyncHTTPTransport(verify=verify)
            if sync:
                bound_head(self._inner[key])
        return self._inner[key]

    def _prepare(self, request: Any) -> tuple[StreamFormat | None, Attempt]:
        query = request.url.query
        found = streamed_format(request.method, request.url.path, request.content,
                                query.decode("latin-1") if isinstance(query, bytes) else str(query))
        return found, Attempt(self.retry, request, self._random)

    def _repair(self, found: StreamFormat, request: Any) -> Any:
        repair = found.repair(limits=self.limits, api_key=request_key(request), strict=self.strict)
        observer = request.extensions.get(OBSERVER_EXTENSION)
        if observer is not None:
            observer(repair)
        return repair

    def _answer(self, hx: Any, request: Any, found: StreamFormat, failure: Failure) -> Any:
        """A failure before any byte: the client's own ``ReadTimeout`` for a timeout, else an HTTP error."""
        if failure.code == Code.TIMEOUT:
            raise hx.ReadTimeout(failure.message, request=request)
        answer = error_response(failure, found.error_body, self._classification(), found.error_status)
        return hx.Response(answer.status, headers=answer.headers, stream=Bytes(answer.body))

    def _settle(
        self, hx: Any, request: Any, found: StreamFormat, attempt: Attempt, result: Any
    ) -> tuple[Any, float | None]:
        """An attempt's outcome: the client's response (and ``None``), or the delay before the next attempt."""
        if not isinstance(result, Failure):
            return result, None
        delay = attempt.delay_s(result)
        return (self._answer(hx, request, found, result) if delay is None else None), delay

    def _buffered(self) -> int:
        """The bytes a buffered response may hold until its finish (``max_text_bytes``); 0 in stream mode."""
        return (self.limits or DEFAULT_LIMITS).max_text_bytes if self.mode == "buffered" else 0

    def _classification(self) -> RetryPolicy | None:
        """Which failures ``x-should-retry`` calls retryable: the opt-in policy's, else the library's default
        (``strict`` adds ``REFUSAL``, which an agent harness retries)."""
        if self.retry is not None or not self.strict:
            return self.retry
        return RetryPolicy(retryable_codes=(*DEFAULT_RETRYABLE_CODES, Code.REFUSAL))

    # -- sync -----------------------------------------------------------------------------------------------------

    def handle_request(self, request: Any) -> Any:
        hx = flavour(request)
        inner = self._transport(hx, True, needs_tls(request))
        if not isinstance(request.stream, hx.ByteStream):
            request.read()
        found, attempt = self._prepare(request)
        if found is None:
            return inner.handle_request(request)
        while True:
            try:
                with head_deadline(budget_s(request)):  # the head within the request's timeout in total
                    upstream = inner.handle_request(request)
            except TRANSPORT_ERRORS as exc:
                delay = attempt.delay_s(_connect_failure(request, exc))
                if delay is None:
                    raise  # the client's own error (the SDK's APIConnectionError), as without the transport
                time.sleep(delay)
                continue
            if not is_event_stream(upstream):
                if self.retry is None:
                    return upstream  # as the upstream sent it
                raw = read_bounded_sync(upstream, (self.limits or DEFAULT_LIMITS).max_error_body_bytes)
                upstream.close()
                failure = self._body_failure(request, upstream, raw)
                delay = attempt.delay_s(failure)
                if delay is None:
                    return _as_sent(hx, upstream, raw if isinstance(raw, bytes) else found.error_body(failure))
                time.sleep(delay)
                continue
            result = SyncBody.start(hx, upstream, self._repair(found, request), self._buffered(),
                                    Deadline.of(request))
            response, delay = self._settle(hx, request, found, attempt, result)
            if delay is None:
                return response
            time.sleep(delay)

    def close(self) -> None:
        for (_, sync, _), inner in self._inner.items():
            if sync:
                inner.close()
        if self._given is not None and hasattr(self._given, "handle_request"):
            self._given.close()

    # -- async ----------------------------------------------------------------------------------------------------

    async def handle_async_request(self, request: Any) -> Any:
        hx = flavour(request)
        inner = self._transport(hx, False, needs_tls(request))
        if not isinstance(request.stream, hx.ByteStream):
            await request.aread()
        found, attempt = self._prepare(request)
        if found is None:
            return await inner.handle_async_request(request)
        while True:
            try:
                upstream = await _head(inner, request, hx)
            except TRANSPORT_ERRORS as exc:
                delay = attempt.delay_s(_connect_failure(request, exc))
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            if not is_event_stream(upstream):
                if self.retry is None:
                    return upstream
                raw = await read_bounded(upstream, (self.limits or DEFAULT_LIMITS).max_error_body_bytes)
                await upstream.aclose()
                failure = self._body_failure(request, upstream, raw)
                delay = attempt.delay_s(failure)
                if delay is None:
                    return _as_sent(hx, upstream, raw if isinstance(raw, bytes) else found.error_body(failure))
                await asyncio.sleep(delay)
                continue
            result = await AsyncBody.start(hx, upstream, self._repair(found, request), self._buffered(),
                                           Deadline.of(request))
            response, delay = self._settle(hx, request, found, attempt, result)
            if delay is None:
                return response
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        for (_, sync, _), inner in self._inner.items():
            if not sync:
                await inner.aclose()
        if self._given is not None and hasattr(self._given, "handle_async_request"):
            await self._given.aclose()

    def _body_failure(self, request: Any, upstream: Any, raw: bytes | int) -> Failure:
        return body_failure(upstream, raw, limits=self.limits or DEFAULT_LIMITS, origin=str(request.url.host),
                            api_key=request_key(request))


async def _head(inner: Any, request: Any, hx: Any) -> Any:
    """The upstream's response head within the request's own timeout in total: a head dripped a byte at a time
    resets the per-read timeout and would otherwise never time out (the client's ``ReadTimeout`` then)."""
    budget = budget_s(request)
    if budget is None:
        return await inner.handle_async_request(request)
    try:
        async with asyncio.timeout(budget):  # not wait_for: no task (and no turn of the loop) per request
            return await inner.handle_async_request(request)
    except TimeoutError:
        raise hx.ReadTimeout(f"no response head within the request's timeout ({budget:g} s)", request=request) from None


def _connect_failure(request: Any, exc: Exception) -> Failure:
    """A request that got no response: ``TIMEOUT`` for a timeout, ``TRANSPORT`` otherwise (both retryable)."""
    code = Code.TIMEOUT if isinstance(exc, TIMEOUTS) else Code.TRANSPORT
    return Failure(code, redact_url_keys(f"request to {request.url.host} failed: {type(exc).__name__}: {exc}"))


def _as_sent(hx: Any, upstream: Any, body: bytes) -> Any:
    """A response read to classify it (internal retries on), given back as it came (a body past the bound replaced
    by an error in the API's shape naming the bound)."""
    return hx.Response(upstream.status_code, headers=relay_headers(upstream), stream=Bytes(body))
