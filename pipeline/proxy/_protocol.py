"""uvicorn's h11 protocol as the proxy serves it: a deadline on each request's headers, and a lingering close.

- The header deadline (``header_timeout``): uvicorn has none, so a client dripping a request's headers one byte a
  second would hold its connection forever; the deadline counts from the connection (or the end of the previous
  response) to the headers' end, and closes the connection when it passes.
- The lingering close (docs/proxy.md, "A body over the limit"): the proxy answers some requests before it has read
  their body (413 past ``--max-body-bytes``, 401, 400, 503, 404). Most clients send their whole body before they read
  the answer; a socket closed with their unread bytes in its receive queue answers them with a reset (RST), which
  throws away the answer they have not read yet. uvicorn closes at once after such an answer when the client asked
  for ``Connection: close`` (or spoke HTTP/1.0), and its deadlines close a connection still receiving a body. So, as
  nginx's ``lingering_close``: once the answer is complete and the request's body is still coming, the proxy sends its
  end of the connection (``write_eof``: FIN after the answer) and reads and discards what the client still sends,
  never holding it, until the client closes its side, or ``linger_bytes`` more bytes came, or ``linger_timeout``
  seconds passed (or ``LINGER_IDLE`` without a byte); then it closes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["LINGER_IDLE", "protocol"]

LINGER_IDLE = 5.0
"""Seconds a lingering connection may stay silent before it is closed (nginx's ``lingering_timeout``)."""


class _Transport:
    """The connection's transport as uvicorn sees it: ``close`` while a request's body is still coming lingers."""

    def __init__(self, transport: asyncio.Transport, owner: Any) -> None:
        self._transport = transport
        self._owner = owner
        self.write = transport.write  # the hot path, bound once rather than looked up through __getattr__

    def close(self) -> None:
        self._owner.close_or_linger()

    def is_closing(self) -> bool:
        return bool(self._owner.lingering) or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def protocol(header_timeout: float, linger_timeout: float, linger_bytes: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the proxy's header deadline and lingering close."""

    class ProxyProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _linger_timers: tuple[asyncio.TimerHandle, ...] = ()
        lingering = False
        _shutting_down = False
        _discarded = 0
        _raw: asyncio.Transport

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._raw = transport
            wrapped: Any = _Transport(transport, self)
            super().connection_made(wrapped)
            self._arm()

        # -- the header deadline ----------------------------------------------------------------------------

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout, self._header_deadline)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_deadline(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a request's headers arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.conn.their_state is h11.SEND_BODY:  # answered before its body ended: no keep-alive after it
                self.close_or_linger()
            else:
                self._arm()

        # -- the lingering close ----------------------------------------------------------------------------

        def close_or_linger(self) -> None:
            if self.lingering:
                return  # its own bounds close it
            if (self._raw.is_closing() or self._shutting_down or self.conn.their_state is not h11.SEND_BODY
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
                super().data_received(data)
                return
            self._discarded += len(data)  # counted and dropped, never held
            if self._discarded > linger_bytes:
                self._raw.close()
                return
            total, idle = self._linger_timers
            idle.cancel()
            self._linger_timers = (total, self.loop.call_later(min(LINGER_IDLE, linger_timeout), self._raw.close))

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
            for timer in self._linger_timers:
                timer.cancel()
            super().connection_lost(exc)

    return ProxyProtocol
