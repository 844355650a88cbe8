"""A scripted gateway on 127.0.0.1: each request is answered with the next raw HTTP response of a script (the last
one repeats), then the connection is closed. Raw bytes, so a response can be cut anywhere: a close-delimited body that
stops early, chunked encoding without its last chunk, a short Content-Length.

    with Gateway(sse([...]), sse([...], cut="chunked")) as gateway:
        openai.OpenAI(base_url=gateway.base_url, ...)
        assert gateway.count == 2
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal

__all__ = ["Gateway", "chunk", "http_json", "sse", "sse_event"]

Cut = Literal["close", "chunked", "length"] | None


def sse_event(payload: Any) -> bytes:
    """One ``data:`` event (a JSON payload, or a string as it is, e.g. ``[DONE]``)."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse(events: Iterable[Any], *, cut: Cut = None, framing: Literal["chunked", "close"] = "chunked") -> bytes:
    """A 200 event stream of ``events`` (payloads or raw ``bytes``); ``cut`` ends it early: ``"close"`` a
    close-delimited body simply stops, ``"chunked"`` chunked encoding without its last chunk."""
    body = [e if isinstance(e, bytes) else sse_event(e) for e in events]
    if cut == "close" or framing == "close":
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        return head + b"".join(body)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + b"".join(chunk(b) for b in body) + (b"" if cut == "chunked" else b"0\r\n\r\n")


def http_json(status: int, payload: Any, headers: dict[str, str] | None = None, *, cut: Cut = None) -> bytes:
    """A JSON response; ``cut="length"`` declares a Content-Length longer than the body it sends."""
    body = json.dumps(payload).encode()
    length = len(body) + (100 if cut == "length" else 0)
    lines = [f"HTTP/1.1 {status} X", "content-type: application/json", f"content-length: {length}",
             "connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                return
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            more = sock.recv(65536)
            if not more:
                break
            body += more
        gateway = self.server.gateway
        gateway.record(head, body)
        try:
            sock.sendall(gateway.route(head, body) if gateway.route is not None else gateway.next_response())
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    gateway: Gateway


class Gateway:
    """``responses`` answer the requests in turn (the last one repeats); or ``route(head, body)`` picks each answer
    from the request (one gateway serving a whole corpus, say by the body's ``model``)."""

    def __init__(self, *responses: bytes, route: Callable[[bytes, bytes], bytes] | None = None) -> None:
        assert responses or route is not None
        self.responses = list(responses)
        self.route = route
        self.requests: list[tuple[bytes, bytes]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.gateway = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def record(self, head: bytes, body: bytes) -> None:
        with self._lock:
            self.requests.append((head, body))

    def next_response(self) -> bytes:
        with self._lock:
            index = min(len(self.requests) - 1, len(self.responses) - 1)
            return self.responses[index]

    def __enter__(self) -> Gateway:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
