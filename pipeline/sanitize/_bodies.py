"""The client's side of a repaired response: its headers and its body, sync and async, for httpx and httpx2.

``start`` reads the upstream until the repairer releases bytes (``mode="stream"``) or until the finish
(``"buffered"``), and returns either the client's response or, when the attempt failed before a byte was forwarded,
the ``Failure`` (the transport answers it as an HTTP error or retries). The body then goes on reading the upstream as
the client reads it. After the first byte a failure is the in-band error event the repairer writes; a body the
upstream cut stays cut (the body raises the client's own ``RemoteProtocolError`` / ``ReadTimeout`` after that event).

A stream that finished (its ``[DONE]``, ``message_stop``, ...) is not read on for its content: what follows is only
the body's end (the last chunk), which ``_drain`` reads when it comes within ``DRAIN_S`` and ``DRAIN_BYTES``, so the
connection goes back to the pool instead of being closed (a new connection per request costs a TCP, and upstream a
TLS, handshake: decision 0073). Anything else after the finish is discarded unread, as before, and the connection
closed.

A read deadline counts from the last event the repairer read, forwarded or held (``held_events``: empty deltas
before the answer, the arguments of a call not yet identified), not from the last byte: keep-alive comments and pings
alone do not keep a request alive past the client's read timeout, and an upstream sending an event within each read
timeout is not cut while its events are held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs

from operators import Code, Failure

from ._flavours import HTTP_ERRORS, TIMEOUTS, AsyncStream, SyncStream
from ._repair import StreamRepair

__all__ = ["DROPPED_HEADERS", "AsyncBody", "Bytes", "Deadline", "SyncBody", "relay_headers"]

DROPPED_HEADERS = frozenset({b"content-length", b"content-encoding", b"transfer-encoding", b"connection"})
DRAIN_S = 0.02
"""Seconds a finished stream's body end may take to come before its connection is closed instead of reused."""
DRAIN_BYTES = 65536
"""Bytes after a finished stream read at most to reach its body end (more: the connection is closed)."""
_CUT_CODES = frozenset({Code.STREAM_CLOSED, Code.TRANSPORT, Code.TIMEOUT})


def relay_headers(upstream: Any) -> list[tuple[bytes, bytes]]:
    """The upstream's headers as the client gets them: the body is decoded and re-framed, so no length, encoding or
    framing header; everything else as sent, byte for byte (a repeated header stays repeated, a value that is not
    ASCII stays as it came: decoded to ``str``, httpx would refuse to encode it back)."""
    return [(name, value) for name, value in upstream.headers.raw if name.lower() not in DROPPED_HEADERS]


@attrs.define
class Deadline:
    """The client's read timeout applied to events: ``read_s`` without an event forwarded or held is a timeout."""

    read_s: float | None
    last: float = attrs.field(factory=time.monotonic)
    heard: int = 0
    """The repairer's ``held_events`` at the last step."""

    @classmethod
    def of(cls, request: Any) -> Deadline:
        timeout = request.extensions.get("timeout") or {}
        read = timeout.get("read")
        return cls(float(read) if isinstance(read, int | float) and read > 0 else None)

    def step(self, repair: StreamRepair, read: bytes) -> bytes:
        out = repair.feed(read)
        now = time.monotonic()
        heard = getattr(repair, "held_events", 0)  # a repairer of one's own may not count them
        if out or heard != self.heard:
            self.last, self.heard = now, heard
        elif self.read_s is not None and now - self.last > self.read_s and repair.finish is None:
            return repair.fail(Failure(Code.TIMEOUT, f"no content from the upstream for {self.read_s:g} s "
                                       "(only keep-alive bytes)"))
        return out


def _read_failure(exc: Exception) -> Failure:
    if isinstance(exc, TIMEOUTS):
        return Failure(Code.TIMEOUT, f"the upstream stopped sending: {type(exc).__name__}: {exc}")
    return Failure(Code.TRANSPORT, f"reading the upstream response failed: {type(exc).__name__}: {exc}")


Read = bytes | None | Exception
"""One upstream read: a piece, the end of the body (``None``), or the error that ended it."""


def _step(repair: StreamRepair, read: Read, deadline: Deadline) -> bytes:
    if isinstance(read, Exception):
        return repair.fail(_read_failure(read))
    return repair.close() if read is None else deadline.step(repair, read)


def _next(reads: Iterator[bytes]) -> Read:
    try:
        return next(reads, None)
    except HTTP_ERRORS as exc:
        return exc


async def _anext(reads: AsyncIterator[bytes]) -> Read:
    try:
        return await anext(reads, None)
    except HTTP_ERRORS as exc:
        return exc


def _cut(hx: Any, repair: StreamRepair) -> Exception | None:
    """The client's own error for a body the upstream cut (raised after the in-band error event), else ``None``."""
    failure = repair.failure
    if failure is None or failure.code not in _CUT_CODES:
        return None
    if failure.code == Code.TIMEOUT:
        return hx.ReadTimeout(failure.message)  # type: ignore[no-any-return]
    return hx.RemoteProtocolError(failure.message)  # type: ignore[no-any-return]


class Bytes(SyncStream, AsyncStream):
    """A whole body, not yet read (``Response(content=...)`` would mark it read, and a client sending with
    ``stream=True`` could then not iterate it)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self._data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data


def _bound(repair: StreamRepair, size: int, buffered: int) -> int:
    """A buffered response holding more than ``buffered`` bytes ends ``LIMIT_EXCEEDED`` (an HTTP error: nothing was
    forwarded); ``size`` is what is held so far."""
    if buffered and size > buffered and repair.finish is None:
        repair.fail(Failure(Code.LIMIT_EXCEEDED, f"a buffered response held {size} bytes before its finish, over "
                            f"max_text_bytes={buffered}"))
    return size


def _held(hx: Any, upstream: Any, repair: StreamRepair, held: list[bytes]) -> Any:
    """The attempt ended (or the stream was buffered to its finish) before anything was forwarded."""
    if repair.failure is not None:
        return repair.failure
    repair.forwarded = True
    return hx.Response(upstream.status_code, headers=relay_headers(upstream), stream=Bytes(b"".join(held)))


class SyncBody(SyncStream):
    """The client's body: what was released when the response was handed over, then the rest as it is repaired."""

    def __init__(self, hx: Any, upstream: Any, reads: Iterator[bytes], repair: StreamRepair, first: bytes,
                 deadline: Deadline) -> None:
        self._hx, self._upstream, self._reads, self._repair = hx, upstream, reads, repair
        self._first, self._deadline = first, deadline

    @classmethod
    def start(cls, hx: Any, upstream: Any, repair: StreamRepair, buffered: int, deadline: Deadline) -> Any:
        """The client's response, or the ``Failure`` of an attempt that failed before a byte was forwarded.
        ``buffered``: 0 to forward from the first byte released, else the bytes held at most until the finish."""
        reads = upstream.iter_bytes()
        held: list[bytes] = []
        size = 0
        try:
            while True:
                read = _next(reads)
                held.append(_step(repair, read, deadline))
                size = _bound(repair, size + len(held[-1]), buffered)
                if repair.failure is not None or repair.finish is not None or not isinstance(read, bytes):
                    upstream.close()
                    return _held(hx, upstream, repair, held)
                if held[-1] and not buffered:
                    repair.forwarded = True
                    body = cls(hx, upstream, reads, repair, b"".join(held), deadline)
                    return hx.Response(upstream.status_code, headers=relay_headers(upstream), stream=body)
        except BaseException:  # interrupted (the client went away): release the upstream connection now
            upstream.close()
            raise

    def __iter__(self) -> Iterator[bytes]:
        yield self._first
        try:
            while self._repair.finish is None:
                out = _step(self._repair, _next(self._reads), self._deadline)
                if out:
                    yield out
            cut = _cut(self._hx, self._repair)
            if cut is not None:
                raise cut
        finally:
            self.close()

    def close(self) -> None:
        self._repair.dispose()
        self._upstream.close()


class AsyncBody(AsyncStream):
    """``SyncBody`` for an async client."""

    def __init__(self, hx: Any, upstream: Any, reads: AsyncIterator[bytes], repair: StreamRepair, first: bytes,
                 deadline: Deadline) -> None:
        self._hx, self._upstream, self._reads, self._repair = hx, upstream, reads, repair
        self._first, self._deadline = first, deadline

    @classmethod
    async def start(cls, hx: Any, upstream: Any, repair: StreamRepair, buffered: int, deadline: Deadline) -> Any:
        reads = upstream.aiter_bytes()
        held: list[bytes] = []
        size = 0
        try:
            while True:
                read = await _anext(reads)
                held.append(_step(repair, read, deadline))
                size = _bound(repair, size + len(held[-1]), buffered)
                if repair.failure is not None or repair.finish is not None or not isinstance(read, bytes):
                    if repair.failure is None and isinstance(read, bytes):
                        await _drain(reads)
                    await upstream.aclose()
                    return _held(hx, upstream, repair, held)
                if held[-1] and not buffered:
                    repair.forwarded = True
                    body = cls(hx, upstream, reads, repair, b"".join(held), deadline)
                    return hx.Response(upstream.status_code, headers=relay_headers(upstream), stream=body)
        except BaseException:  # cancelled (the client went away): release the upstream connection now
            await asyncio.shield(upstream.aclose())
            raise

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._first
        try:
            while self._repair.finish is None:
                out = _step(self._repair, await _anext(self._reads), self._deadline)
                if out:
                    yield out
            cut = _cut(self._hx, self._repair)
            if cut is not None:
                raise cut
            if self._repair.failure is None:
                await _drain(self._reads)
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        self._repair.dispose()
        await self._upstream.aclose()


async def _drain(reads: AsyncIterator[bytes]) -> None:
    """Reads what follows a finished stream until the body's end, if it comes within ``DRAIN_S`` and ``DRAIN_BYTES``
    (the connection is then reusable); otherwise gives up, and closing the response closes the connection."""
    size = 0
    try:
        async with asyncio.timeout(DRAIN_S):
            while isinstance(read := await _anext(reads), bytes):
                size += len(read)
                if size > DRAIN_BYTES:
                    return
    except TimeoutError:
        return
