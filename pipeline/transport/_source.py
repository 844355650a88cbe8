"""The HTTP byte source: one POST per subscription, its body's reads as an ``Observable[bytes]``.

- ``httpx_sse.aconnect_sse`` makes the connection (``Accept: text/event-stream``, ``Cache-Control: no-store``); the
  body is read with ``response.aiter_bytes()`` and fed to our own ``parse_sse``, because httpx-sse's decoder deviates
  from the SSE standard (a leading BOM drops the first event; blank lines after an ``id:`` give empty events;
  docs/decisions/0001-parse-sse.md).
- It is cold: each subscription sends the request again, so a retry is a re-subscription
  (docs/decisions/0006-retry-when-retryable.md). Disposing the subscription cancels the request task, which closes
  the HTTP response at once.
- Failures never escape as exceptions: the source raises a ``StreamFailure`` through ``on_error`` and
  ``close_on_done`` turns it into an error finish (after any usage), with the codes of docs/protocol.md ("Error
  codes"): ``classify_http_error`` for non-2xx statuses, ``TRANSPORT`` for connection failures, ``TIMEOUT`` when no
  byte (not even a comment) arrives for ``idle_timeout`` seconds, ``EMPTY_RESPONSE`` for a 2xx with no body, and a
  2xx that is not ``text/event-stream`` is classified from its body (an OpenAI-shaped error object like an in-band
  error, docs/decisions/0009-in-band-errors.md; anything else ``MALFORMED_RESPONSE``).
- The API key never appears in a failure message: every message built here is redacted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import httpx
from httpx_sse import aconnect_sse
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from operators import Code, Failure
from operators.extend import StreamFailure, classify_http_error, classify_inband_error

from ._config import ClientConfig

__all__ = ["Pace", "http_source"]

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
    """A cold Observable of the reads of ``POST {base_url}/chat/completions``. Subscribe from within a running event
    loop; disposing the subscription closes the response."""

    def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        task = asyncio.get_running_loop().create_task(_pump(http, config, dict(body), dict(headers), observer, pace))

        def close() -> None:
            task.cancel()

        return Disposable(close)

    return Observable(subscribe)


def _redact(config: ClientConfig, text: str) -> str:
    key = config.api_key
    return text.replace(key, "[redacted]") if key else text


async def _pump(
    http: httpx.AsyncClient,
    config: ClientConfig,
    body: dict[str, Any],
    headers: dict[str, str],
    observer: abc.ObserverBase[bytes],
    pace: Pace | None,
) -> None:
    url = f"{config.base_url}/chat/completions"
    try:
        async with aconnect_sse(http, "POST", url, json=body, headers=headers) as source:
            response = source.response
            failure = await _check_response(config, response)
            if failure is not None:
                observer.on_error(StreamFailure(failure))
                return
            received = False
            reads = response.aiter_bytes()
            while True:
                try:
                    async with asyncio.timeout(config.idle_timeout):
                        piece = await anext(reads)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    observer.on_error(StreamFailure(Failure(
                        Code.TIMEOUT, f"no data from {config.base_url} for {config.idle_timeout:g} s",
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
                    f"{config.base_url} answered HTTP {response.status_code} with no body",
                    status=response.status_code,
                )))
                return
            observer.on_completed()
    except asyncio.CancelledError:
        raise
    except httpx.TimeoutException as exc:
        code = Code.TRANSPORT if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout) else Code.TIMEOUT
        observer.on_error(StreamFailure(Failure(code, _redact(config, f"request to {url} timed out: {exc}"))))
    except (httpx.HTTPError, OSError) as exc:
        detail = str(exc) or type(exc).__name__
        observer.on_error(StreamFailure(Failure(
            Code.TRANSPORT, _redact(config, f"request to {url} failed: {type(exc).__name__}: {detail}"),
        )))
    except Exception as exc:  # never escapes: the chain turns it into an UNKNOWN finish
        observer.on_error(exc)


async def _check_response(config: ClientConfig, response: httpx.Response) -> Failure | None:
    """``None`` for a 2xx event stream; otherwise the failure the response's status and body say."""
    status = response.status_code
    if status >= 300:
        text = (await response.aread()).decode("utf-8", errors="replace")
        return classify_http_error(status, text, response.headers, api_key=config.api_key)
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type == "text/event-stream":
        return None
    raw = await response.aread()
    if not raw.strip():
        message = f"{config.base_url} answered HTTP {status} with no body"
        return Failure(Code.EMPTY_RESPONSE, message, status=status)
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed and not parsed.get("choices"):
        failure = classify_inband_error(parsed["error"])
        return attrs.evolve(failure, message=_redact(config, failure.message))
    shown = " ".join(text.split())[:120]
    return Failure(
        Code.MALFORMED_RESPONSE,
        _redact(config, f"expected text/event-stream, got {content_type or 'no content type'}: {shown}"),
        status=status,
    )
