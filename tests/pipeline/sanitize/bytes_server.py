"""A loopback HTTP server that answers each request with the next body it was given, byte for byte: how the SDK
tests serve a stream as it came from upstream, and as a repairer passed it on.

    with BytesServer() as server:
        server.serve(body)                       # 200 text/event-stream
        server.serve(error, status=500, content_type="application/json")
        server.serve(body, headers=(("x-note", "café".encode()),))   # more headers, their values as bytes
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
"""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["BytesServer"]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.requests.append(self.path)
        status, content_type, body, extra = self.server.bodies.popleft()
        self.send_response(status)
        for name, value in extra:  # http.server writes a value as latin-1: these bytes, as given
            self.send_header(name, value.decode("latin-1"))
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: deque[tuple[int, str, bytes, tuple[tuple[str, bytes], ...]]] = deque()
        self.requests: list[str] = []


class BytesServer:
    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[str]:
        return self._server.requests

    def serve(self, body: bytes, *, status: int = 200, content_type: str = "text/event-stream",
              headers: tuple[tuple[str, bytes], ...] = ()) -> None:
        self._server.bodies.append((status, content_type, body, headers))

    def __enter__(self) -> BytesServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
