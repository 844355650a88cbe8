"""The proxy's connections to its upstream (``Upstream``): HTTP/1.1 over asyncio, kept alive, each body decoded a read
at a time.

Why not httpx's own transport (decision 0073): a relayed stream comes one chunk per event, and httpcore hands each
chunk through h11's state machine, an anyio deadline and five iterator layers; here a read's chunks are found with a
few byte searches and handed on, one piece per chunk (the repairs do not depend on how TCP cut the bytes). Requests
and response heads: ``_wire.py``; the body's framing: ``_framing.py``.

- Connections: an idle list per origin, at most ``IDLE_PER_ORIGIN`` idle, each closed past ``KEEPALIVE_S`` idle or
  when the upstream closes it; no cap on connections in use (``--max-streams`` bounds the requests in flight, 503
  past it). A connection is reused only after a response read to its end with nothing after it, over HTTP/1.1,
  without ``Connection: close`` either way.
- Timeouts from httpx's ``timeout`` extension: ``connect`` (TLS included), ``read`` (each wait), ``write``. Errors
  are httpx's (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``, ``ReadError``,
  ``RemoteProtocolError``, ``LocalProtocolError``): the transport's retries and the proxy's 502, 504, cuts as before.
- Bounded memory: reading pauses while more than ``READ_AHEAD`` bytes wait for the client (TCP back-pressure).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ._framing import Decoder, decoder_for
from ._wire import Head, LocalError, RemoteError, keeps_alive, read_head, request_bytes

__all__ = ["IDLE_PER_ORIGIN", "KEEPALIVE_S", "READ_AHEAD", "Upstream"]

IDLE_PER_ORIGIN = 128
KEEPALIVE_S = 5.0
READ_AHEAD = 256 * 1024
_TIMED_OUT = object()

Origin = tuple[bytes, str, int]


class _Connection(asyncio.Protocol):
    """One connection: the bytes received and not yet taken, whether it ended, a waiter for more."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer: list[bytes] = []  # the reads not yet taken, as they came: one read is taken without a copy
        self._buffered = 0
        self.ended = False
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self._waiter: asyncio.Future[object] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._reading = True
        self._timer: asyncio.TimerHandle | None = None  # the read timeout's, moved on lazily (``wait``)
        self._deadline = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer.append(data)
        self._buffered += len(data)
        if self._buffered > READ_AHEAD and self._reading and self.transport is not None:
            self._reading = False
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended, self.error = True, exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def take(self) -> bytes:
        buffer = self.buffer
        data = buffer[0] if len(buffer) == 1 else b"".join(buffer)
        buffer.clear()
        self._buffered = 0
        if not self._reading and self.transport is not None and not self.ended:
            self._reading = True
            self.transport.resume_reading()
        return data

    async def wait(self, timeout: float | None, request: httpx.Request) -> None:
        """Until bytes wait to be taken or the connection ended; ``ReadTimeout`` after ``timeout`` seconds (one timer
        per connection, not one per wait: a relayed stream waits once per event)."""
        if self.buffer or self.ended:
            return
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        if timeout is not None:
            self._deadline = loop.time() + timeout
            if self._timer is None or self._timer.when() > self._deadline:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(self._deadline, self._check)
        try:
            if await waiter is _TIMED_OUT:
                raise httpx.ReadTimeout(f"no bytes from the upstream within {timeout:g} s", request=request)
        finally:
            self._waiter = None

    def _check(self) -> None:
        """The timer: the wait in progress times out at its deadline, a later one is waited for; none, it lapses."""
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        loop = asyncio.get_running_loop()
        if loop.time() >= self._deadline:
            waiter.set_result(_TIMED_OUT)
        else:
            self._timer = loop.call_at(self._deadline, self._check)

    async def send(self, data: bytes, timeout: float | None, request: httpx.Request) -> None:
        if self.ended or self.transport is None or self.transport.is_closing():
            raise httpx.WriteError("the upstream closed the connection", request=request)
        self.transport.write(data)
        if self._writable is not None:
            try:
                async with asyncio.timeout(timeout):
                    await self._writable
            except TimeoutError:
                raise httpx.WriteTimeout("the upstream did not take the request in time", request=request) from None

    def close(self) -> None:
        self.ended = True
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None:
            self.transport.close()


class Upstream(httpx.AsyncBaseTransport):
    """HTTP/1.1 to the proxy's upstream, kept alive; see the module's notes."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._idle: dict[Origin, list[_Connection]] = {}
        self._busy: set[_Connection] = set()

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = httpx.create_ssl_context()  # httpx's trust store and its SSL_CERT_FILE / _DIR
            self._tls.set_alpn_protocols(["http/1.1"])
        return self._tls

    def _reuse(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.ended and not conn.buffer and now - conn.idle_since < KEEPALIVE_S:
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin, timeout: float | None, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        tls = self._context() if scheme == b"https" else None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(_Connection, host, port, ssl=tls,
                                                       server_hostname=host if tls else None)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g} s",
                                       request=request) from None
        except OSError as exc:  # refused, unreachable, a name that does not resolve, a TLS failure
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}", request=request) from None
        return conn

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = url.raw_host.decode("ascii")  # an international name as its IDNA form, an IPv6 address unbracketed
        origin = (url.raw_scheme, host, url.port or (443 if url.raw_scheme == b"https" else 80))
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        try:
            body = [part async for part in request.stream]  # type: ignore[union-attr]
            wire = request_bytes(request.method.encode("ascii"), url.raw_path, request.headers.raw, body)
        except LocalError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from None
        conn = self._reuse(origin) or await self._connect(origin, timeouts.get("connect"), request)
        self._busy.add(conn)
        try:
            await conn.send(wire, timeouts.get("write"), request)
            response, first = await _head(conn, timeouts.get("read"), request)
        except BaseException:
            self._release(origin, conn, reusable=False)
            raise
        decoder = decoder_for(request.method.encode("ascii"), response)
        reusable = (response.http_version == b"1.1" and request.method != "CONNECT" and not decoder.to_close
                    and keeps_alive(request.headers.raw) and keeps_alive(response.lowered))
        stream = _Body(self, origin, conn, decoder, first, timeouts.get("read"), request, reusable)
        return httpx.Response(response.status_code, headers=response.headers, stream=stream,
                              extensions={"http_version": b"HTTP/" + response.http_version,
                                          "reason_phrase": response.reason})

    def _release(self, origin: Origin, conn: _Connection, *, reusable: bool) -> None:
        self._busy.discard(conn)
        idle = self._idle.setdefault(origin, [])
        if reusable and not conn.ended and not conn.buffer and len(idle) < IDLE_PER_ORIGIN:
            conn.idle_since = time.monotonic()
            idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        for conn in [*self._busy, *(c for idle in self._idle.values() for c in idle)]:
            conn.close()
        self._busy.clear()
        self._idle.clear()


async def _head(conn: _Connection, timeout: float | None, request: httpx.Request) -> tuple[Head, bytes]:
    """The response's head (1xx responses skipped) and the body's first bytes, what came after it."""
    data = b""
    while True:
        try:
            head, end = read_head(data)
            while head is not None and head.status_code < 200:  # 1xx: an interim response, then the real one
                data = data[end:]
                head, end = read_head(data)
        except RemoteError as exc:
            raise httpx.RemoteProtocolError(f"the upstream's response head is malformed: {exc}",
                                            request=request) from None
        if head is not None:
            return head, data[end:]
        await conn.wait(timeout, request)
        if conn.buffer:
            data += conn.take()
        elif conn.ended:
            if conn.error is not None and not isinstance(conn.error, ConnectionResetError):
                raise httpx.ReadError(str(conn.error), request=request)
            raise httpx.RemoteProtocolError("the upstream closed the connection without sending a response",
                                            request=request)


class _Body(httpx.AsyncByteStream):
    """A response's body: each read's decoded bytes as one piece; the connection back to the pool once the body
    ended with nothing after it, else closed."""

    def __init__(self, owner: Upstream, origin: Origin, conn: _Connection, decoder: Decoder, first: bytes,
                 timeout: float | None, request: httpx.Request, reusable: bool) -> None:
        self._owner, self._origin, self._conn, self._decoder = owner, origin, conn, decoder
        self._first, self._timeout, self._request, self._reusable = first, timeout, request, reusable
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn, decoder = self._conn, self._decoder
        data, self._first = self._first, b""
        try:
            while True:
                if data:
                    for piece in decoder.feed(data):
                        yield piece
                if decoder.done:
                    break
                if not conn.buffer and conn.ended:
                    if decoder.to_close and conn.error is None:  # a body to the close ends with a clean close only
                        decoder.done = True
                        break
                    raise httpx.RemoteProtocolError("the upstream closed the connection before the body's end",
                                                    request=self._request)
                await conn.wait(self._timeout, self._request)
                data = conn.take()
        except httpx.RemoteProtocolError:
            raise
        except ValueError as exc:  # the body's framing is malformed (_framing.py)
            raise httpx.RemoteProtocolError(str(exc), request=self._request) from None
        finally:
            self._release()

    def _release(self) -> None:
        if not self._released:
            self._released = True
            decoder = self._decoder
            self._owner._release(self._origin, self._conn,
                                 reusable=self._reusable and decoder.done and not decoder.extra)

    async def aclose(self) -> None:
        self._release()
