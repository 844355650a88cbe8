"""One request to ``/v1/<path>``, forwarded (an ASGI handler over the sanitizing transport).

In order, each step answering at once when it refuses (docs/proxy.md): the client's key (401, nothing goes
upstream), the path (400 when it leaves the upstream's base path, or holds a ``#``), the body (413 past
``max_body_bytes``, told by ``Content-Length`` before a byte is read, else counted as it comes; 408 when the client
stops sending it or has not sent it all within ``body_timeout``; 400 when its JSON nests too deep to read), and only
then the cap on requests in flight (503 with ``Retry-After``): a client dripping its body holds no slot. Then the
request goes upstream while a watcher waits for the client to hang up: a hang-up at any point, before the first byte
too, cancels the upstream request, and so does the total deadline (504 before the response started; after it, the
response is cut). Every request, refused or not, ends with one ``Report`` handed to ``on_done`` (access log, metrics,
span).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx

from operators import Code, Failure, LlmStreamError

from ..sanitize import OBSERVER_EXTENSION, error_body
from ._config import ProxyConfig
from ._headers import Keys, OutsideBase, forwarded_headers, upstream_path
from ._log import Report
from ._metrics import TooDeep, Tracing, model_of
from ._relay import UpstreamCut, relay
from ._scrub import Scrubber, scrub_headers

__all__ = ["Forwarder", "Refused", "error_response"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_RESPONSE_DROPPED = frozenset({
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
    "content-length",
})


class Refused(LlmStreamError):
    """A request answered by the proxy itself, before (or instead of) the upstream."""

    def __init__(self, status: int, code: str, message: str, *, reason: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status, self.code, self.reason, self.headers = status, code, reason, headers


class _ClientGone(LlmStreamError):
    """The client hung up (while sending its body)."""


async def error_response(send: Send, status: int, code: str, message: str, headers: tuple[tuple[str, str], ...] = (),
                         *, path: str = "") -> int:
    """Our error, with our code, in the error shape of the API ``path`` belongs to (``pipeline.sanitize.error_body``:
    Anthropic's on ``/v1/messages``, OpenAI's elsewhere); returns its size."""
    body = error_body(path, Failure(code, message))
    out = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    out += [(k.encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    return len(body)


@attrs.define
class Forwarder:
    """What every forwarded request shares: the config, the keys, the upstream and the transport to it."""

    config: ProxyConfig
    keys: Keys
    base: httpx.URL
    transport: httpx.AsyncBaseTransport
    tracing: Tracing
    in_flight: int = 0
    on_in_flight: Callable[[int], None] = lambda count: None

    _exchanges: dict[asyncio.Future[None], tuple[_Progress, Report]] = attrs.field(factory=dict, init=False)

    def cut_all(self) -> int:
        """Cuts every response in flight (the end of the SIGTERM grace period): a repaired stream gets its format's
        in-band error first; each request's report says ``cut=shutdown``. Returns how many were cut."""
        failure = Failure(Code.SERVER, "the proxy shut down before the stream ended (its grace period passed); retry")
        for exchange, (progress, report) in list(self._exchanges.items()):
            progress.shutdown = True
            if progress.started:  # said now, between two of the repairer's steps, before the cancel disposes of it
                progress.last_words = report.fail_stream(failure)
            exchange.cancel()
        return len(self._exchanges)

    @staticmethod
    async def _last_words(send: Send, report: Report, progress: _Progress, scrub: Scrubber | None) -> None:
        tail = progress.last_words
        if scrub is not None:
            tail = scrub.feed(tail) + scrub.close() if tail else b""
        report.cut = "shutdown"
        if tail:
            report.bytes_out += len(tail)
            await send({"type": "http.response.body", "body": tail, "more_body": True})

    def _timeouts(self) -> dict[str, float]:
        c = self.config
        return {"connect": c.connect_timeout, "read": c.idle_timeout, "write": c.idle_timeout,
                "pool": c.connect_timeout}

    async def __call__(self, scope: Scope, receive: Receive, send: Send, report: Report) -> None:
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        relative = raw_path[len(b"/v1/"):]
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if not self.keys.admits(headers):
            raise Refused(401, Code.AUTH, "a key the proxy accepts is required (Authorization: Bearer <key>)",
                          reason="unauthorized", headers=(("www-authenticate", "Bearer"),))
        try:
            path = upstream_path(self.base.path, relative)
        except OutsideBase as exc:
            raise Refused(400, Code.INVALID_REQUEST, str(exc), reason="path") from None
        query = scope.get("query_string") or b""
        if query and (self.keys.client or self.keys.upstream):  # the proxy's own keys never go upstream
            query = self.keys.scrub(query.decode("latin-1"), "%5Bredacted%5D").encode("latin-1")
        try:  # no empty "?" added; a "#" (which h11 lets through) is no URL's path or query
            url = self.base.copy_with(raw_path=path.encode("latin-1") + (b"?" + query if query else b""))
        except httpx.InvalidURL:
            raise Refused(400, Code.INVALID_REQUEST, "the request target is not a URL path and query",
                          reason="path") from None
        deadline = time.monotonic() + self.config.total_timeout
        try:  # the body before a slot: a client dripping its body holds no slot (and /ready stays up)
            body = await self._body(receive, headers, min(deadline, time.monotonic() + self.config.body_timeout))
        except _ClientGone:
            report.cut = "client"
            return
        try:
            model_of(body)  # what the transport's reading of the body would trip on, refused here instead
        except TooDeep as exc:
            raise Refused(400, Code.INVALID_REQUEST, str(exc), reason="body_nesting") from None
        if self.in_flight >= self.config.max_streams:
            raise Refused(503, Code.SERVER, f"the proxy has {self.in_flight} requests in flight, its limit "
                          "(--max-streams); retry shortly", reason="max_streams", headers=(("retry-after", "1"),))
        self.in_flight += 1
        self.on_in_flight(self.in_flight)
        try:
            await self._forward(scope, receive, send, report, path, url, headers, body, deadline)
        finally:
            self.in_flight -= 1
            self.on_in_flight(self.in_flight)

    async def _forward(self, scope: Scope, receive: Receive, send: Send, report: Report, path: str, url: httpx.URL,
                       headers: list[tuple[bytes, bytes]], body: bytes, deadline: float) -> None:
        relative = path[len(self.base.path.rstrip("/")) + 1:]
        out_headers = forwarded_headers(headers, keys=self.keys, extra=self.config.forward_headers, relative=relative)
        span = self.tracing.start(scope["method"], relative, body, out_headers)
        as_sent = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers]  # httpx's str is ASCII only
        request = httpx.Request(scope["method"], url, headers=as_sent,
                                content=body, extensions={"timeout": self._timeouts(),
                                                          OBSERVER_EXTENSION: report.observe})
        try:
            await self._exchange(request, receive, send, report, deadline)
        finally:
            self.tracing.end(span, report)

    async def _body(self, receive: Receive, headers: list[tuple[bytes, bytes]], deadline: float) -> bytes:
        cap = self.config.max_body_bytes
        for name, value in headers:
            if name == b"content-length" and value.strip().isdigit() and int(value) > cap:
                raise Refused(413, Code.LIMIT_EXCEEDED, f"the request body is {int(value)} bytes, over the proxy's "
                              f"limit of {cap} (--max-body-bytes)", reason="body_too_large")
        parts: list[bytes] = []
        size = 0
        while True:
            wait = min(self.config.client_idle_timeout, max(0.0, deadline - time.monotonic()))
            try:
                message = await asyncio.wait_for(receive(), wait)
            except TimeoutError:
                late = time.monotonic() >= deadline
                raise Refused(408, Code.TIMEOUT, f"the client did not send its request body within "
                              f"{self.config.body_timeout:g} s (--body-timeout)" if late else
                              "the client stopped sending its request body", reason="body_timeout") from None
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                raise Refused(413, Code.LIMIT_EXCEEDED, f"the request body is over the proxy's limit of {cap} bytes "
                              "(--max-body-bytes)", reason="body_too_large")
            if chunk:
                parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    async def _exchange(self, request: httpx.Request, receive: Receive, send: Send, report: Report,
                        deadline: float) -> None:
        progress = _Progress()
        exchange = asyncio.ensure_future(self._send(request, send, report, progress))
        watcher = asyncio.ensure_future(_hang_up(receive))
        self._exchanges[exchange] = (progress, report)
        try:
            done, _ = await asyncio.wait({exchange, watcher}, timeout=max(0.0, deadline - time.monotonic()),
                                         return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # this request itself cancelled (the grace period ran out): its upstream request too
            exchange.cancel()
            raise
        finally:
            watcher.cancel()
            self._exchanges.pop(exchange, None)
        if progress.shutdown:  # cut at the end of the grace period (``cut_all``)
            try:
                await exchange
            except asyncio.CancelledError:
                if not progress.started:
                    raise Refused(503, Code.SERVER, "the proxy is shutting down; retry", reason="shutdown",
                                  headers=(("retry-after", "1"),)) from None
            report.cut = "shutdown"
            return
        if exchange in done or progress.complete:  # a complete response also ends the watcher
            await exchange
            return
        exchange.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await exchange
        report.cut = "client" if watcher in done else "deadline"
        if not progress.started and watcher not in done:
            raise Refused(504, Code.TIMEOUT, f"the upstream {self.base.host} did not answer within the proxy's "
                          f"total deadline of {self.config.total_timeout:g} s (--total-timeout)", reason="deadline")

    async def _send(self, request: httpx.Request, send: Send, report: Report, progress: _Progress) -> None:
        sent_at = time.perf_counter()
        try:
            response = await self.transport.handle_async_request(request)
        except httpx.TimeoutException as exc:
            raise Refused(504, Code.TIMEOUT, f"the upstream {self.base.host} did not answer in time: "
                          f"{type(exc).__name__}", reason="upstream_timeout") from None
        except httpx.HTTPError as exc:
            raise Refused(502, Code.TRANSPORT, f"the upstream {self.base.host} is unreachable: "
                          f"{type(exc).__name__}: {exc}", reason="upstream_unreachable") from None
        report.ttfb_s = time.perf_counter() - sent_at
        report.upstream_status = report.status = response.status_code
        try:
            named = {t.strip().lower() for t in response.headers.get("connection", "").split(",")}
            scrub = _scrubber(self.keys.upstream, response)  # the upstream key never reaches the client
            if scrub is not None:
                named.add("content-encoding")  # the body is scrubbed decoded
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.multi_items()
                       if k.lower() not in _RESPONSE_DROPPED and k.lower() not in named]
            if scrub is not None:
                headers = scrub_headers(headers, scrub.key)
            progress.started = report.responded = True  # from here on, a failure can only cut the response
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            try:
                async for piece in relay(response, decoded=scrub is not None):
                    if scrub is not None and not (piece := scrub.feed(piece)):
                        continue
                    report.bytes_out += len(piece)
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            except UpstreamCut:
                report.cut = "upstream"  # the response is left without its end: the client sees it was cut
                return
            except asyncio.CancelledError:
                if not progress.shutdown:
                    raise
                await self._last_words(send, report, progress, scrub)  # the format's in-band error, then no end
                return
            if scrub is not None and (piece := scrub.close()):
                report.bytes_out += len(piece)
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            progress.complete = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
            report.upstream_s = time.perf_counter() - sent_at


def _scrubber(key: str | None, response: httpx.Response) -> Scrubber | None:
    if key is None or len(key) < 8:  # as everywhere (decision 0015): a shorter key is no secret
        return None
    return Scrubber(key, events=response.headers.get("content-type", "").startswith("text/event-stream"))


@attrs.define
class _Progress:
    started: bool = False
    complete: bool = False
    shutdown: bool = False
    """Cut by ``cut_all``: the server's grace period ended."""
    last_words: bytes = b""
    """What a repaired stream says before that cut: its format's in-band error event."""


async def _hang_up(receive: Receive) -> None:
    """Returns when the client has gone (after the body, ``receive`` has nothing else to say)."""
    while (await receive())["type"] != "http.disconnect":
        pass
