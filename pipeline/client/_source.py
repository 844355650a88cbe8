"""The HTTP byte source: one POST per subscription, its body's reads as an ``Observable[bytes]``.

- ``httpx_sse.aconnect_sse`` makes the connection (``Accept: text/event-stream``, ``Cache-Control: no-store``); the
  body is read with ``stream_reads`` (below) and fed to our own ``parse_sse``, because httpx-sse's decoder deviates
  from the SSE standard (a leading BOM drops the first event; blank lines after an ``id:`` give empty events;
  docs/decisions/0001-parse-sse.md).
- It is cold: each subscription sends the request again, so a retry is a re-subscription
  (docs/decisions/0006-retry-when-retryable.md). Disposing the subscription cancels the request task, which closes
  the HTTP response (and its connection, even before the headers arrived) at once.
- Deadlines (docs/decisions/0013-deadlines-and-bounded-reads.md): every request carries its own ``httpx.Timeout``
  (``read=idle_timeout`` bounds each socket read: the status line, the headers, an error body and every body read;
  connecting and pool waits are bounded by ``min(connect_timeout, idle_timeout)``), whatever timeouts the caller's
  ``http_client`` has; ``asyncio.timeout(total_timeout)`` bounds the whole attempt (time spent waiting for the
  consumer's ``pace`` is not counted), so keep-alive comments cannot hold an attempt open forever.
- Bounded reads: the stream is read in slices of at most 64 KiB (``stream_reads``: gzip and deflate inflated here
  a slice at a time, the event loop given a turn between slices, so the total deadline and a cancellation fire
  within a slice even when one network read inflates to a gigabyte; docs/decisions/0039-ignored-lines.md). An error
  body (and a 2xx body that is not an event stream) is read only up to
  ``limits.max_error_body_bytes`` after decompression (gzip and deflate are inflated here with a bounded output, so a
  compression bomb never expands past the limit); crossing it is ``LIMIT_EXCEEDED`` carrying the HTTP status.
- Failures never escape as exceptions: the source raises a ``StreamFailure`` through ``on_error`` and
  ``close_on_done`` turns it into an error finish (after any usage), with the codes of docs/protocol.md ("Error
  codes"): ``classify_http_error`` for non-2xx statuses, ``TRANSPORT`` for connection failures, ``TIMEOUT`` when no
  byte (not even a comment) arrives for ``idle_timeout`` seconds or the attempt outlives ``total_timeout``,
  ``EMPTY_RESPONSE`` for a 2xx with no body, and a 2xx that is not ``text/event-stream`` is classified from its body
  (an OpenAI-shaped error object like an in-band error, docs/decisions/0009-in-band-errors.md; anything else
  ``MALFORMED_RESPONSE``).
- The API key never appears in a failure message: every message built here is redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from operators import Code, Failure
from operators.extend import StreamFailure

from .._http import check_response, is_event_stream, reading, stream_reads
from .._http import redact as _redact_text
from ._config import ClientConfig

__all__ = ["Pace", "http_source", "request_timeout"]

Pace = Callable[[], Awaitable[None]]
"""Awaited after each read is pushed downstream: the consumer's pace (``ChatClient.stream`` waits for its caller)."""


def http_source(
    http: httpx.AsyncClient,
    config: ClientConfig,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    pace: Pace | None = None,
) -> Observable[bytes]:
    """A cold Observable of the reads of ``POST {config.url}`` (``{base_url}/chat/completions``, ``/messages`` or
    ``/responses``, as ``config.api`` says). Subscribe from within a running event
    loop; disposing the subscription closes the response."""

    def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        task = asyncio.get_running_loop().create_task(_pump(http, config, dict(body), dict(headers), observer, pace))

        def close() -> None:
            task.cancel()

        return Disposable(close)

    return Observable(subscribe)


def request_timeout(config: ClientConfig) -> httpx.Timeout:
    """The ``httpx.Timeout`` every request carries: ``read`` and ``write`` are the idle timeout (per socket read or
    write, so it covers the status line and the headers too); connecting and the pool wait are bounded by
    ``min(connect_timeout, idle_timeout)``."""
    idle = config.idle_timeout
    connect = min(config.connect_timeout, idle)
    return httpx.Timeout(connect=connect, read=idle, write=idle, pool=connect)


def _redact(config: ClientConfig, text: str) -> str:
    return _redact_text(text, config.api_key)


class _Where:
    """What the attempt is waiting for, named in a timeout's message."""

    def __init__(self) -> None:
        self.now = "connecting"


async def _pump(
    http: httpx.AsyncClient,
    config: ClientConfig,
    body: dict[str, Any],
    headers: dict[str, str],
    observer: abc.ObserverBase[bytes],
    pace: Pace | None,
) -> None:
    url = config.url
    where = _Where()
    deadline = asyncio.timeout(config.total_timeout)
    failure: Failure | None
    try:
        async with deadline:
            failure = await _attempt(http, config, url, body, headers, observer, pace, deadline, where)
    except asyncio.CancelledError:
        raise
    except TimeoutError as exc:
        if deadline.expired():
            failure = Failure(Code.TIMEOUT, _redact(config, (
                f"{config.base_url} did not finish within total_timeout={config.total_timeout:g} s "
                f"(while {where.now})"
            )))
        else:
            failure = _transport_failure(config, url, exc)
    except httpx.TimeoutException as exc:
        failure = _timeout_failure(config, url, exc, where)
    except (httpx.HTTPError, OSError) as exc:
        failure = _transport_failure(config, url, exc)
    except Exception as exc:  # never escapes: the chain turns it into an UNKNOWN finish
        observer.on_error(exc)
        return
    if failure is None:
        observer.on_completed()
    else:
        observer.on_error(StreamFailure(failure))


async def _attempt(
    http: httpx.AsyncClient,
    config: ClientConfig,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    observer: abc.ObserverBase[bytes],
    pace: Pace | None,
    deadline: asyncio.Timeout,
    where: _Where,
) -> Failure | None:
    """One request: ``None`` when the body ended after at least one byte, else the failure (exceptions propagate)."""
    where.now = "waiting for the response headers"
    timeout = request_timeout(config)
    async with aconnect_sse(http, "POST", url, json=body, headers=headers, timeout=timeout) as source:
        response = source.response
        if not is_event_stream(response):
            where.now = reading(response)
            return await check_response(response, limits=config.limits, origin=config.base_url, api_key=config.api_key)
        where.now = "reading the response body"
        loop = asyncio.get_running_loop()
        received = False
        async with contextlib.aclosing(stream_reads(response)) as reads:
            while True:
                try:
                    async with asyncio.timeout(config.idle_timeout):
                        piece = await anext(reads)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    return Failure(Code.TIMEOUT, _redact(
                        config, f"no data from {config.base_url} for {config.idle_timeout:g} s (while {where.now})",
                    ))
                if not piece:
                    continue
                received = True
                observer.on_next(piece)
                if pace is not None:
                    paused = loop.time()
                    await pace()
                    when = deadline.when()
                    if when is not None:  # the consumer's time is not the server's: it does not count
                        deadline.reschedule(when + loop.time() - paused)
        if not received:
            message = f"{config.base_url} answered HTTP {response.status_code} with no body"
            return Failure(Code.EMPTY_RESPONSE, _redact(config, message), status=response.status_code)
        return None


def _timeout_failure(config: ClientConfig, url: str, exc: httpx.TimeoutException, where: _Where) -> Failure:
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure(Code.TRANSPORT, _redact(config, f"request to {url} timed out {where.now}: {exc}"))
    if isinstance(exc, httpx.WriteTimeout):
        message = f"{config.base_url} took no request data for {config.idle_timeout:g} s (while sending the request)"
    else:
        message = f"no data from {config.base_url} for {config.idle_timeout:g} s (while {where.now})"
    return Failure(Code.TIMEOUT, _redact(config, message))


def _transport_failure(config: ClientConfig, url: str, exc: BaseException) -> Failure:
    detail = str(exc) or type(exc).__name__
    return Failure(Code.TRANSPORT, _redact(config, f"request to {url} failed: {type(exc).__name__}: {detail}"))
