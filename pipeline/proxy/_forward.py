"""One request to ``/v1/<path>``, forwarded (an ASGI handler over the sanitizing transport).

In order, each step answering at once when it refuses (docs/proxy.md): the client's key (401, nothing goes
upstream), the path (400 when it leaves the upstream's base path, or holds a ``#``), the body (413 past
``max_body_bytes``, told by ``Content-Length`` before a byte is read, else counted as it comes; 408 when the client
stops sending it or has not sent it all within ``body_timeout``; 400 when its JSON nests too deep to read), and only
then the cap on requests in flight (503 with ``Retry-After``): a client dripping its body holds no slot. Then the
request goes upstream in the request's own task: a hang-up at any point (the protocol's ``HANG_UP`` future, else a
task reading ``receive``), before the first byte too, cancels it, and so does the total deadline (504 before the
response started; after it, the response is cut). Every request, refused or not, ends with one ``Report`` handed
to ``on_done`` (access log, metrics, span).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import attrs
import httpx

from operators import Code, Failure, LlmStreamError

from ..sanitize import OBSERVER_EXTENSION
from ._asgi import HANG_UP, Receive, Refused, Scope, Send, error_response
from ._config import ProxyConfig
from ._headers import Keys, OutsideBase, UpstreamUrls, api_relative, forwarded_headers, upstream_path, upstream_request
from ._log import Report
from ._metrics import TooDeep, Tracing, model_of
from ._relay import UpstreamCut, relay
from ._scrub import Scrubber, scrub_headers

__all__ = ["HANG_UP", "Forwarder", "Receive", "Refused", "Scope", "Send", "error_response"]

_RESPONSE_DROPPED = frozenset({
    b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te", b"trailer", b"upgrade",
    b"content-length",
})


class _ClientGone(LlmStreamError):
    """The client hung up (while sending its body)."""


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

    _exchanges: dict[asyncio.Task[Any], tuple[_Progress, Report]] = attrs.field(factory=dict, init=False)
    _urls: UpstreamUrls = attrs.field(factory=UpstreamUrls, init=False)

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

    async def __call__(self, scope: Scope, receive: Receive, send: Send, report: Report) -> None:
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        relative = api_relative(raw_path) or b""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if not self.keys.admits(headers):
            raise Refused(401, Code.AUTH, f"a key the proxy accepts is required ({self.keys.accepted()})",
                          reason="unauthorized", headers=(("www-authenticate", "Bearer"),))
        try:
            path = upstream_path(self.base.path, relative)
        except OutsideBase as exc:
            raise Refused(400, Code.INVALID_REQUEST, str(exc), reason="path") from None
        query = scope.get("query_string") or b""
        if query and (self.keys.client or self.keys.upstream):  # the proxy's own keys never go upstream
            query = self.keys.scrub(query.decode("latin-1"), "%5Bredacted%5D").encode("latin-1")
        target = path.encode("latin-1") + (b"?" + query if query else b"")  # no empty "?" added
        try:  # a "#" (which the HTTP parser lets through) is no URL's path or query
            url = self._urls.get(self.base, target)
        except httpx.InvalidURL:
            raise Refused(400, Code.INVALID_REQUEST, "the request target is not a URL path and query",
                          reason="path") from None
        relative_path = path[len(self.base.path.rstrip("/")) + 1:]
        out_headers = forwarded_headers(headers, keys=self.keys, extra=self.config.forward_headers,
                                        relative=relative_path)  # while the body may still be on its way
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
            await self._forward(scope, receive, send, report, relative_path, url, out_headers, body, deadline)
        finally:
            self.in_flight -= 1
            self.on_in_flight(self.in_flight)

    async def _forward(self, scope: Scope, receive: Receive, send: Send, report: Report, relative: str,
                       url: httpx.URL, out_headers: list[tuple[str, str]], body: bytes, deadline: float) -> None:
        span = self.tracing.start(scope["method"], relative, body, out_headers)
        as_sent = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers]  # httpx's str is ASCII only
        request = upstream_request(scope["method"], url, as_sent, body,
                                   {"timeout": self.config.timeouts(), OBSERVER_EXTENSION: report.observe})
        try:
            await self._exchange(scope, request, receive, send, report, deadline)
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
            remaining = max(0.0, deadline - time.monotonic())
            # which bound this wait has, decided now: uvloop's timers run on libuv's clock and can fire a little
            # before time.monotonic() reaches a deadline taken from it
            late = remaining <= self.config.client_idle_timeout
            try:
                async with asyncio.timeout(min(self.config.client_idle_timeout, remaining)):  # no task per read
                    message = await receive()
            except TimeoutError:
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

    async def _exchange(self, scope: Scope, request: httpx.Request, receive: Receive, send: Send, report: Report,
                        deadline: float) -> None:
        """The upstream request in this task (no task of its own): the client's hang-up, the total deadline and
        ``cut_all`` each cancel it, saying why in ``progress`` (told apart from the server's own cancel)."""
        task, progress = asyncio.current_task(), _Progress()
        assert task is not None

        def stop(reason: str) -> None:
            if progress.stop is None and not progress.complete and not progress.shutdown:
                progress.stop = reason
                task.cancel()

        gone = scope.get("extensions", {}).get(HANG_UP, {}).get("gone")  # else (another server) a task on receive
        watcher: asyncio.Future[None] = gone() if gone is not None else asyncio.ensure_future(_hang_up(receive))
        if watcher.done():
            report.cut = "client"
            return
        watcher.add_done_callback(on_gone := lambda _: stop("client"))
        timer = asyncio.get_running_loop().call_later(max(0.0, deadline - time.monotonic()), stop, "deadline")
        self._exchanges[task] = (progress, report)
        try:
            await self._send(request, send, report, progress)
        except asyncio.CancelledError:
            if (progress.stop is None and not progress.shutdown) or task.uncancel() > 0:
                raise  # the server's own cancel (its grace period ran out): the upstream request went with it
            if progress.shutdown and not progress.started:
                raise Refused(503, Code.SERVER, "the proxy is shutting down; retry", reason="shutdown",
                              headers=(("retry-after", "1"),)) from None
            report.cut = "shutdown" if progress.shutdown else progress.stop
            if not progress.started and progress.stop == "deadline":
                raise Refused(504, Code.TIMEOUT, f"the upstream {self.base.host} did not answer within the proxy's "
                              f"total deadline of {self.config.total_timeout:g} s (--total-timeout)",
                              reason="deadline") from None
        finally:
            progress.stop = progress.stop or "over"  # a hang-up's callback already queued does nothing now
            timer.cancel()
            watcher.remove_done_callback(on_gone)
            if gone is None:  # the connection's own future is the protocol's, not this request's to cancel
                watcher.cancel()
            self._exchanges.pop(task, None)
        if progress.shutdown and task.cancelling():  # cut while saying its last words (``_send`` returned)
            task.uncancel()
            report.cut = "shutdown"

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
            raw = response.headers.raw
            dropped = _RESPONSE_DROPPED.union(token.strip().lower() for name, value in raw
                                              if name.lower() == b"connection" for token in value.split(b","))
            scrub = _scrubber(self.keys.upstream, response)  # the upstream key never reaches the client
            if scrub is not None:
                dropped |= {b"content-encoding"}  # the body is scrubbed decoded
            headers = [(lowered, value) for name, value in raw  # the values as sent, the names lowered
                       if (lowered := name.lower()) not in dropped]
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
    stop: str | None = None
    """Cancelled by the client's hang-up (``"client"``) or the total deadline (``"deadline"``)."""
    last_words: bytes = b""
    """What a repaired stream says before that cut: its format's in-band error event."""


async def _hang_up(receive: Receive) -> None:
    """Returns when the client has gone (after the body, ``receive`` has nothing else to say)."""
    while (await receive())["type"] != "http.disconnect":
        pass
