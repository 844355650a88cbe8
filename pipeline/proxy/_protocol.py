"""uvicorn's httptools protocol as the proxy serves it: a compiled request parser (llhttp), a deadline on each
request's headers and a bound on their size, a lingering close, the request target as h11 reads it, and the writes of
one turn of the event loop sent together.

- httptools, not h11 (decision 0073): h11 read a request in ~100 us of the proxy's CPU and wrote a response head in
  ~40 us, in pure Python, before the first event; llhttp reads one in a few.
- The request target as h11 gave it to the app (``scope``'s ``path``, ``raw_path``, ``query_string``): split at the
  first ``?`` and nothing else, so a ``#`` or an absolute URL reaches the app as sent (and is refused there: 400,
  404), where httptools' URL parser would drop a fragment or a scheme and host.
- The header deadline (``header_timeout``): uvicorn has none, so a client dripping a request's headers one byte a
  second would hold its connection forever; the deadline counts from the connection (or the end of the previous
  response) to the headers' end, and closes the connection when it passes. The headers' size is bounded by
  ``max_head`` (h11's bound before: llhttp has none): past it, uvicorn's 400 and the connection closed.
- The lingering close (docs/proxy.md, "A body over the limit"): the proxy answers some requests before it has read
  their body (413 past ``--max-body-bytes``, 401, 400, 503, 404). Most clients send their whole body before they read
  the answer; a socket closed with their unread bytes in its receive queue answers them with a reset (RST), which
  throws away the answer they have not read yet. So, as nginx's ``lingering_close``: once the answer is complete and
  the request's body is still coming, the proxy sends its end of the connection (``write_eof``: FIN after the
  answer) and reads and discards what the client still sends, never holding it, until the client closes its side,
  or ``linger_bytes`` more bytes came, or ``linger_timeout`` seconds passed (or ``LINGER_IDLE`` without a byte).
- The hang-up as a future (``HANG_UP`` in the scope's ``extensions``): the connection's end, resolved when it is
  lost, so the proxy learns a client hung up without a task per request waiting on ``receive`` (decision 0073).
- One write per turn of the event loop (``_Transport``): the response's head and its first event, or an event, the
  ``[DONE]`` after it and the body's last chunk, leave in one ``send`` (one packet, one wake-up of the client)
  instead of one each; each ``send`` to a loopback socket cost ~15-20 us of the proxy's CPU (decision 0073).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ._asgi import HANG_UP

__all__ = ["LINGER_IDLE", "MAX_HEAD", "protocol"]

LINGER_IDLE = 5.0
"""Seconds a lingering connection may stay silent before it is closed (nginx's ``lingering_timeout``)."""
MAX_HEAD = 16 * 1024
"""Bytes a request's line and headers may take (h11's default bound, which the proxy had before)."""


class _Transport:
    """The connection's transport as uvicorn sees it: ``close`` while a request's body is still coming lingers, and
    the writes of one turn of the event loop go out as one (``flush``, called soon after the first of them)."""

    def __init__(self, transport: asyncio.Transport, owner: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._owner = owner
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if data:
            if not self._pending:
                self._loop.call_soon(self.flush)
            self._pending.append(data)

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            if not self._transport.is_closing():
                self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self._pending)) + self._transport.get_write_buffer_size()

    def close(self) -> None:
        self._owner.close_or_linger()

    def is_closing(self) -> bool:
        return bool(self._owner.lingering) or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def protocol(header_timeout: float, linger_timeout: float, linger_bytes: int) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with the proxy's header deadline, head bound, target and lingering close."""

    class ProxyProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _linger_timers: tuple[asyncio.TimerHandle, ...] = ()
        lingering = False
        _shutting_down = False
        _discarded = 0
        _head_bytes = 0
        _in_head = True
        _raw: asyncio.Transport
        _wrapped: _Transport
        _gone: asyncio.Future[None]

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._raw = transport
            self._gone = self.loop.create_future()
            self._wrapped = _Transport(transport, self, self.loop)
            super().connection_made(self._wrapped)  # type: ignore[arg-type]  # a transport in all that uvicorn uses
            self._arm()

        # -- the header deadline and bound, the target -------------------------------------------------------

        def _arm(self) -> None:
            self._disarm()
            self._in_head, self._head_bytes = True, 0
            self._header_timer = self.loop.call_later(header_timeout, self._header_deadline)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_deadline(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._disarm()
            raw_path, _, query = self.url.partition(b"?")  # as h11's uvicorn protocol split it
            path = raw_path.decode("ascii")  # not ASCII: a parser error, uvicorn's 400, before any task starts
            super().on_headers_complete()
            self.scope["path"] = self.root_path + (unquote(path) if "%" in path else path)
            self.scope["raw_path"] = self.root_path.encode("ascii") + raw_path
            self.scope["query_string"] = query
            self.scope["extensions"] = {HANG_UP: {"gone": self._hang_up}}

        def _hang_up(self) -> asyncio.Future[None]:
            """The connection's end as a future (the request's hang-up, without a task reading ``receive``)."""
            self.flow.resume_reading()  # as ``receive`` does: a paused connection would not see the client go
            return self._gone

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self._body_coming():  # answered before its body ended: no keep-alive after it
                self.close_or_linger()
            else:
                self._arm()

        def _body_coming(self) -> bool:
            return self.cycle is not None and self.cycle.more_body

        # -- the lingering close ----------------------------------------------------------------------------

        def close_or_linger(self) -> None:
            self._wrapped.flush()  # what was written before the close goes first
            if self.lingering:
                return  # its own bounds close it
            if (self._raw.is_closing() or self._shutting_down or not self._body_coming()
                    or not self._raw.can_write_eof()):
                self._raw.close()
                return
            self.lingering = True
            self._disarm()
            self._unset_keepalive_if_required()
            self._raw.write_eof()  # the answer, then FIN: the client can read it to its end
            self._raw.resume_reading()
            self._linger_timers = (self.loop.call_later(linger_timeout, self._raw.close),
                                   self.loop.call_later(min(LINGER_IDLE, linger_timeout), self._raw.close))

        def data_received(self, data: bytes) -> None:
            if not self.lingering:
                if self._in_head:
                    self._head_bytes += len(data)
                    if self._head_bytes > MAX_HEAD and self._over_head(data):
                        return
                super().data_received(data)
                return
            self._discarded += len(data)  # counted and dropped, never held
            if self._discarded > linger_bytes:
                self._raw.close()
                return
            total, idle = self._linger_timers
            idle.cancel()
            self._linger_timers = (total, self.loop.call_later(min(LINGER_IDLE, linger_timeout), self._raw.close))

        def _over_head(self, data: bytes) -> bool:
            """Past the bound: the head's bytes in this read are parsed (a head that ends within them is served),
            and a head still open after them is refused."""
            super().data_received(data)
            if self._in_head and not self._raw.is_closing():
                self.send_400_response("Invalid HTTP request received.")
            return True

        def eof_received(self) -> None:
            if self.lingering:
                self._raw.close()  # the client sent all it had: nothing is left unread

        def shutdown(self) -> None:
            self._shutting_down = True  # the server stops: no lingering holds it up
            if self.lingering:
                self._raw.close()
                return
            super().shutdown()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if not self._gone.done():
                self._gone.set_result(None)
            for timer in self._linger_timers:
                timer.cancel()
            super().connection_lost(exc)

    return ProxyProtocol
