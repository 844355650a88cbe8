"""The client's side of a sanitized response: its headers and its body, sync and async.

``start`` reads the upstream until clean bytes are ready (``mode="stream"``) or until the finish, and returns either
the client's response or, when the attempt failed before a byte was forwarded and may be retried, the delay before
the next attempt. The body then goes on reading the upstream as the client reads it. One step of either loop
(``_step``, ``_outcome``) is shared.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from operators import Code, Failure

from ._sanitizer import Attempts, Sanitizer

__all__ = ["DROPPED_HEADERS", "AsyncBody", "Bytes", "SyncBody", "sse_headers"]

DROPPED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding", "content-type", "connection"})


def sse_headers(upstream: httpx.Response | None) -> dict[str, str]:
    headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
    if upstream is not None:
        for name, value in upstream.headers.items():
            if name.lower() not in DROPPED_HEADERS:
                headers.setdefault(name.lower(), value)
    return headers


def _read_failure(exc: Exception) -> Failure:
    if isinstance(exc, httpx.TimeoutException):
        return Failure(Code.TIMEOUT, f"the upstream stopped sending: {type(exc).__name__}: {exc}")
    return Failure(Code.TRANSPORT, f"reading the upstream response failed: {type(exc).__name__}: {exc}")


Read = bytes | None | httpx.HTTPError
"""One upstream read: a piece, the end of the body (``None``), or the error that ended it."""


def _step(sanitizer: Sanitizer, read: Read) -> bytes:
    """What the sanitizer has ready after one upstream read."""
    if isinstance(read, httpx.HTTPError):
        return sanitizer.fail(_read_failure(read))
    return sanitizer.close() if read is None else sanitizer.feed(read)


def _outcome(
    sanitizer: Sanitizer, held: list[bytes], upstream: httpx.Response, attempts: Attempts
) -> httpx.Response | float:
    """The attempt ended before anything was forwarded: the delay before a retry, or the whole response."""
    failure = sanitizer.failure
    delay = attempts.delay_s(failure) if failure is not None else None
    if delay is not None:
        return delay
    return httpx.Response(200, headers=sse_headers(upstream), stream=Bytes(b"".join(held)))


def _next(reads: Iterator[bytes]) -> Read:
    try:
        return next(reads, None)
    except httpx.HTTPError as exc:
        return exc


async def _anext(reads: AsyncIterator[bytes]) -> Read:
    try:
        return await anext(reads, None)
    except httpx.HTTPError as exc:
        return exc


class Bytes(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A whole body, not yet read (``httpx.Response(content=...)`` would mark it read, and a client sending with
    ``stream=True`` could then not iterate it)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self._data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data


class SyncBody(httpx.SyncByteStream):
    """The client's body: what was ready when the response was handed over, then the rest as it is sanitized."""

    def __init__(self, upstream: httpx.Response, reads: Iterator[bytes], sanitizer: Sanitizer, first: bytes) -> None:
        self._upstream, self._reads, self._sanitizer, self._first = upstream, reads, sanitizer, first

    @classmethod
    def start(
        cls, upstream: httpx.Response, sanitizer: Sanitizer, buffered: bool, attempts: Attempts
    ) -> httpx.Response | float:
        reads = upstream.iter_bytes()
        held: list[bytes] = []
        while True:
            read = _next(reads)
            held.append(_step(sanitizer, read))
            if sanitizer.finish is not None or not isinstance(read, bytes):
                upstream.close()
                return _outcome(sanitizer, held, upstream, attempts)
            if held[-1] and not buffered:
                sanitizer.forwarded = True
                body = cls(upstream, reads, sanitizer, b"".join(held))
                return httpx.Response(200, headers=sse_headers(upstream), stream=body)

    def __iter__(self) -> Iterator[bytes]:
        yield self._first
        try:
            while self._sanitizer.finish is None:
                read = _next(self._reads)
                out = _step(self._sanitizer, read)
                if out:
                    yield out
                if not isinstance(read, bytes):
                    return
        finally:
            self.close()

    def close(self) -> None:
        self._sanitizer.dispose()
        self._upstream.close()


class AsyncBody(httpx.AsyncByteStream):
    """``SyncBody`` for an async client."""

    def __init__(
        self, upstream: httpx.Response, reads: AsyncIterator[bytes], sanitizer: Sanitizer, first: bytes
    ) -> None:
        self._upstream, self._reads, self._sanitizer, self._first = upstream, reads, sanitizer, first

    @classmethod
    async def start(
        cls, upstream: httpx.Response, sanitizer: Sanitizer, buffered: bool, attempts: Attempts
    ) -> httpx.Response | float:
        reads = upstream.aiter_bytes()
        held: list[bytes] = []
        while True:
            read = await _anext(reads)
            held.append(_step(sanitizer, read))
            if sanitizer.finish is not None or not isinstance(read, bytes):
                await upstream.aclose()
                return _outcome(sanitizer, held, upstream, attempts)
            if held[-1] and not buffered:
                sanitizer.forwarded = True
                body = cls(upstream, reads, sanitizer, b"".join(held))
                return httpx.Response(200, headers=sse_headers(upstream), stream=body)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._first
        try:
            while self._sanitizer.finish is None:
                read = await _anext(self._reads)
                out = _step(self._sanitizer, read)
                if out:
                    yield out
                if not isinstance(read, bytes):
                    return
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        self._sanitizer.dispose()
        await self._upstream.aclose()
