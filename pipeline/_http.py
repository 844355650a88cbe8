"""What an HTTP response's status and content type say, and its body read within a bound (sync and async).

Shared by every place that holds an ``httpx.Response`` before its bytes reach ``parse_sse``: ``ChatClient``'s source
(``pipeline.client``), ``stream``/``collect`` given a response (``pipeline.compose``) and the sanitizing transport
(``pipeline.sanitize``), so all three classify a response the same way
(docs/decisions/0013-deadlines-and-bounded-reads.md):

- a status >= 300 is ``classify_http_error`` of its body (a 429 is ``RATE_LIMIT`` with ``retry_after_ms``);
- a 2xx ``text/event-stream`` is a stream (``None``: read it);
- any other 2xx is classified from its body: an OpenAI-shaped error object like an in-band error, an empty body
  ``EMPTY_RESPONSE``, anything else (an HTML gateway page) ``MALFORMED_RESPONSE``;
- a body is read only up to ``max_error_body_bytes`` after decompression (gzip and deflate are inflated here with a
  bounded output, so a compression bomb never expands past the limit); crossing it is ``LIMIT_EXCEEDED``;
- a stream's body is read in slices (``stream_reads``, ``stream_reads_sync``): gzip and deflate inflated here at
  most ``SLICE`` bytes at a time, every read cut into slices of at most ``SLICE`` bytes, and (async) the event loop
  given a turn between two slices of one read, so a deadline or a cancellation fires within a slice however much
  one network read expands to (docs/decisions/0039-ignored-lines.md).
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import attrs
import httpx

from operators import Code, Failure, Limits
from operators.extend import classify_http_error, classify_inband_error, limit_exceeded

__all__ = [
    "SLICE",
    "body_failure",
    "check_response",
    "check_response_sync",
    "content_type",
    "is_event_stream",
    "read_bounded",
    "read_bounded_sync",
    "reading",
    "redact",
    "stream_reads",
    "stream_reads_sync",
]

SLICE = 64 * 1024
"""The most bytes of a stream's body handed on at once (``stream_reads``)."""


def redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "[redacted]") if api_key else text


def content_type(response: httpx.Response) -> str:
    """The media type, lower case, without parameters (``""`` when absent)."""
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def is_event_stream(response: httpx.Response) -> bool:
    """A 2xx ``text/event-stream``: the body is to be read as a stream."""
    return response.status_code < 300 and content_type(response) == "text/event-stream"


def reading(response: httpx.Response) -> str:
    """What reading this response's body is, in a timeout message (``reading the HTTP 500 error body``)."""
    status = response.status_code
    if status >= 300:
        return f"reading the HTTP {status} error body"
    return f"reading the HTTP {status} {content_type(response) or 'no content type'} body"


def body_failure(
    response: httpx.Response, raw: bytes | int, *, limits: Limits, origin: str, api_key: str | None = None
) -> Failure:
    """The failure a response that is not a 2xx event stream means, from its bounded body (``raw``: the bytes, or
    the count reached when the bound was crossed). ``origin`` names the server in messages (its base URL)."""
    status = response.status_code
    limit = limits.max_error_body_bytes
    shown_type = content_type(response) or "no content type"
    what = f"the HTTP {status} error body" if status >= 300 else f"the HTTP {status} {shown_type} body"
    if isinstance(raw, int):
        return attrs.evolve(limit_exceeded("max_error_body_bytes", raw, limit, what), status=status)
    text = raw.decode("utf-8", errors="replace")
    if status >= 300:
        return classify_http_error(status, text, response.headers, api_key=api_key)
    if not raw.strip():
        message = redact(f"{origin} answered HTTP {status} with no body", api_key)
        return Failure(Code.EMPTY_RESPONSE, message, status=status)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read: shown as text
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed and not parsed.get("choices"):
        failure = classify_inband_error(parsed["error"])
        return attrs.evolve(failure, message=redact(failure.message, api_key))
    shown = " ".join(text.split())[:120]
    message = redact(f"expected text/event-stream, got {shown_type}: {shown}", api_key)
    return Failure(Code.MALFORMED_RESPONSE, message, status=status)


async def check_response(
    response: httpx.Response, *, limits: Limits, origin: str, api_key: str | None = None
) -> Failure | None:
    """``None`` for a 2xx event stream; otherwise the failure its status and (bounded) body say."""
    if is_event_stream(response):
        return None
    raw = await read_bounded(response, limits.max_error_body_bytes)
    return body_failure(response, raw, limits=limits, origin=origin, api_key=api_key)


def check_response_sync(
    response: httpx.Response, *, limits: Limits, origin: str, api_key: str | None = None
) -> Failure | None:
    """``check_response`` for a synchronous response."""
    if is_event_stream(response):
        return None
    raw = read_bounded_sync(response, limits.max_error_body_bytes)
    return body_failure(response, raw, limits=limits, origin=origin, api_key=api_key)


def _raw_reads(response: httpx.Response) -> tuple[bool, _Inflate | None]:
    """Whether to read raw bytes (identity, gzip, deflate) and the bounded inflater, if any."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return True, _Inflate(encoding)
    return encoding in ("", "identity"), None


async def read_bounded(response: httpx.Response, limit: int) -> bytes | int:
    """The body, decompressed, if it holds at most ``limit`` bytes; else the count reached when it crossed (the rest
    is never read). ``gzip`` and ``deflate`` are inflated here with a bounded output; any other encoding is httpx's
    (each read then expands by at most what its decoder gives for one network read)."""
    raw, inflate = _raw_reads(response)
    reads: AsyncIterator[bytes] = response.aiter_raw() if raw else response.aiter_bytes()
    out = bytearray()
    async for piece in reads:
        out += inflate.decode(piece, limit + 1 - len(out)) if inflate is not None else piece
        if len(out) > limit:
            return len(out)
    return bytes(out)


def read_bounded_sync(response: httpx.Response, limit: int) -> bytes | int:
    """``read_bounded`` for a synchronous response."""
    raw, inflate = _raw_reads(response)
    reads: Iterator[bytes] = response.iter_raw() if raw else response.iter_bytes()
    out = bytearray()
    for piece in reads:
        out += inflate.decode(piece, limit + 1 - len(out)) if inflate is not None else piece
        if len(out) > limit:
            return len(out)
    return bytes(out)


def _sliced(piece: bytes, inflate: _Inflate | None, size: int) -> Iterator[bytes]:
    """One read, decompressed, as slices of at most ``size`` bytes (inflated at most ``size`` bytes at a time)."""
    if inflate is None:
        for start in range(0, len(piece), size):
            yield piece[start : start + size]
        return
    out = inflate.decode(piece, size)
    while True:
        if out:
            yield out
        if len(out) < size:  # the input is used up and nothing is left inside the inflater
            return
        out = inflate.decode(inflate.tail(), size)


async def stream_reads(response: httpx.Response, size: int = SLICE) -> AsyncGenerator[bytes, None]:
    """A stream's body, decompressed, in slices of at most ``size`` bytes, with a turn of the event loop between two
    slices of one network read. ``gzip`` and ``deflate`` are inflated here at most ``size`` bytes at a time (a
    compression bomb is never inflated whole); any other encoding is httpx's, then sliced."""
    raw, inflate = _raw_reads(response)
    reads: AsyncIterator[bytes] = response.aiter_raw() if raw else response.aiter_bytes()
    async for piece in reads:
        for count, part in enumerate(_sliced(piece, inflate, size)):
            if count:
                await asyncio.sleep(0)
            yield part


def stream_reads_sync(response: httpx.Response, size: int = SLICE) -> Iterator[bytes]:
    """``stream_reads`` for a synchronous response (no event loop to turn)."""
    raw, inflate = _raw_reads(response)
    reads: Iterator[bytes] = response.iter_raw() if raw else response.iter_bytes()
    for piece in reads:
        yield from _sliced(piece, inflate, size)


class _Inflate:
    """zlib inflation whose output per call is at most ``room`` bytes (``gzip``; ``deflate`` as zlib, else raw)."""

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"
        self._started = False
        self._z = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)

    def decode(self, data: bytes, room: int) -> bytes:
        try:
            out = self._z.decompress(data, room)
        except zlib.error as exc:
            if not (self._deflate and not self._started):
                raise httpx.DecodingError(f"cannot decode the body: {exc}") from exc
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            try:
                out = self._z.decompress(data, room)
            except zlib.error as raw_exc:
                raise httpx.DecodingError(f"cannot decode the body: {raw_exc}") from raw_exc
        self._started = True
        return out

    def tail(self) -> bytes:
        """The input a bounded ``decode`` left unused: to be decoded next."""
        tail: bytes = self._z.unconsumed_tail
        return tail
