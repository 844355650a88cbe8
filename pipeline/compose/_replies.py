"""An HTTP response the caller already has, as byte pieces: ``httpx.Response`` and the openai SDK's raw responses.

``collect(response)``, ``translate(response)`` and ``stream(response)`` classify it as ``ChatClient`` does
(``pipeline._http``): a 429 is ``RATE_LIMIT`` with ``retry_after_ms``, an HTML 200 ``MALFORMED_RESPONSE``, a
2xx ``text/event-stream`` is read; a failure ends the response with its error finish (``StreamFailure``), never an
exception. The openai SDK's ``client.chat.completions.with_raw_response`` and ``with_streaming_response`` objects
(``LegacyAPIResponse``, ``APIResponse``) carry the ``httpx.Response`` as ``.http_response``; an ``openai.Stream`` as
``.response``: both are accepted, read from their raw bytes (the SDK must not have consumed them). openai>=3 builds
its responses with ``httpx2``, whose ``Response`` has the same API: an ``httpx2.Response`` is read the same way.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol, cast

import httpx

from operators import DEFAULT_LIMITS, Code, Failure, Limits
from operators.extend import StreamFailure

from .._http import (
    body_failure,
    check_response,
    check_response_sync,
    is_event_stream,
    stream_reads,
    stream_reads_sync,
)

__all__ = ["WrapsResponse", "aresponse_pieces", "http_response_of", "is_async_response", "response_pieces"]


class WrapsResponse(Protocol):
    """An object holding an HTTP response as ``.http_response`` (the openai SDK's raw and streaming responses)."""

    @property
    def http_response(self) -> Any: ...


def _modules() -> tuple[Any, ...]:
    """httpx, and httpx2 when something (openai>=3) has imported it: never imported here."""
    second = sys.modules.get("httpx2")
    return (httpx,) if second is None else (httpx, second)


def _classes(name: str) -> tuple[type[Any], ...]:
    return tuple(getattr(module, name) for module in _modules())


def http_response_of(source: object) -> httpx.Response | None:
    """The ``httpx.Response`` (or ``httpx2.Response``) that ``source`` is or wraps (openai ``APIResponse`` /
    ``LegacyAPIResponse``: ``.http_response``; ``openai.Stream``: ``.response``), else ``None``."""
    responses = _classes("Response")
    if isinstance(source, responses):
        return cast(httpx.Response, source)  # an httpx2.Response has the same API
    for name in ("http_response", "response"):
        inner = getattr(source, name, None)
        if isinstance(inner, responses):
            return cast(httpx.Response, inner)
    return None


def is_async_response(response: httpx.Response) -> bool:
    """Whether the body is read with ``aiter_bytes`` (a response of an ``httpx.AsyncClient`` not yet read)."""
    stream = response.stream
    return isinstance(stream, _classes("AsyncByteStream")) and not isinstance(stream, _classes("SyncByteStream"))


def _origin(response: httpx.Response) -> str:
    try:
        url = response.request.url
    except RuntimeError:  # a response built by hand has no request
        return "the server"
    return str(url.copy_with(query=None, fragment=None))


def _read_failure(response: httpx.Response, exc: Exception) -> StreamFailure:
    code = Code.TIMEOUT if isinstance(exc, _classes("TimeoutException")) else Code.TRANSPORT
    message = f"reading the response from {_origin(response)} failed: {type(exc).__name__}: {exc}"
    return StreamFailure(Failure(code, message, status=response.status_code))


def _empty(response: httpx.Response) -> StreamFailure:
    message = f"{_origin(response)} answered HTTP {response.status_code} with no body"
    return StreamFailure(Failure(Code.EMPTY_RESPONSE, message, status=response.status_code))


def _already_read(response: httpx.Response) -> bytes | None:
    try:
        return response.content
    except _classes("ResponseNotRead"):
        return None


def response_pieces(response: httpx.Response, limits: Limits | None = None) -> Iterator[bytes]:
    """The body's reads of a 2xx event stream; any other response raises its ``StreamFailure`` (a generator: nothing
    happens until it is iterated)."""
    limits = limits or DEFAULT_LIMITS
    content = _already_read(response)
    if content is not None:
        failure = _content_failure(response, content, limits)
        if failure is not None:
            raise failure
        yield content
        return
    checked = check_response_sync(response, limits=limits, origin=_origin(response))
    if checked is not None:
        raise StreamFailure(checked)
    received = False
    try:
        for piece in stream_reads_sync(response):
            if piece:
                received = True
                yield piece
    except _classes("HTTPError") as exc:
        raise _read_failure(response, exc) from exc
    finally:
        response.close()
    if not received:
        raise _empty(response)


async def aresponse_pieces(response: httpx.Response, limits: Limits | None = None) -> AsyncIterator[bytes]:
    """``response_pieces`` for a response of an ``httpx.AsyncClient``."""
    limits = limits or DEFAULT_LIMITS
    content = _already_read(response)
    if content is not None:
        failure = _content_failure(response, content, limits)
        if failure is not None:
            raise failure
        yield content
        return
    checked = await check_response(response, limits=limits, origin=_origin(response))
    if checked is not None:
        raise StreamFailure(checked)
    received = False
    try:
        async for piece in stream_reads(response):
            if piece:
                received = True
                yield piece
    except _classes("HTTPError") as exc:
        raise _read_failure(response, exc) from exc
    finally:
        await response.aclose()
    if not received:
        raise _empty(response)


def _content_failure(response: httpx.Response, content: bytes, limits: Limits) -> StreamFailure | None:
    """For a response whose body was already read: the same decisions, on the bytes it holds."""
    if is_event_stream(response):
        return None if content else _empty(response)
    raw: bytes | int = content if len(content) <= limits.max_error_body_bytes else len(content)
    return StreamFailure(body_failure(response, raw, limits=limits, origin=_origin(response)))
