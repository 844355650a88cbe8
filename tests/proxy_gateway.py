"""A recording upstream for the proxy's tests, on loopback: it notes what reached it (the request line, the headers)
and answers by the request's ``model`` (the body is forwarded as it is, unlike headers off the proxy's allow-list):

- ``"events:N:S"``: a streamed chat completion of N text events, S seconds apart, then ``[DONE]``;
- ``"silent"``: no answer; it waits for the proxy to hang up and notes when (``released``);
- anything else, or no JSON body: ``{"ok": true}``.
"""

from __future__ import annotations

import http.server
import json
import select
import threading
import time
from types import TracebackType
from typing import Any, Self

__all__ = ["Gateway", "Seen", "sse_text"]


class Seen:
    """One request as the gateway saw it."""

    def __init__(self, method: str, target: str, headers: dict[str, str]) -> None:
        self.method, self.target, self.headers = method, target, headers


def _event(text: str) -> bytes:
    chunk = {"id": "chatcmpl-gw", "object": "chat.completion.chunk", "created": 1, "model": "gw",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def sse_text(body: bytes) -> str:
    """The text content of an OpenAI SSE body."""
    out = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                out.append(choice.get("delta", {}).get("content") or "")
    return "".join(out)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    gateway: Gateway

    def _any(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length) if length else b""
        self.gateway.seen.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        try:
            model = str(json.loads(body).get("model", ""))
        except (ValueError, AttributeError):
            model = ""
        if model == "silent":
            self._silent()
        elif model.startswith("events:"):
            _, count, pause = model.split(":")
            self._events(int(count), float(pause))
        else:
            self._json({"ok": True})

    def do_GET(self) -> None:
        self._any()

    def do_POST(self) -> None:
        self._any()

    def _json(self, value: Any) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _events(self, count: int, pause: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        done = {"id": "chatcmpl-gw", "object": "chat.completion.chunk", "created": 1, "model": "gw",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        try:
            for n in range(count):
                self.wfile.write(_event(f"t{n} "))
                self.wfile.flush()
                time.sleep(pause)
            self.wfile.write(b"data: " + json.dumps(done).encode() + b"\n\ndata: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            self.gateway.released.append(time.monotonic())  # the proxy hung up

    def _silent(self) -> None:
        while True:  # until the proxy hangs up
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, 0):
                self.gateway.released.append(time.monotonic())
                self.close_connection = True
                return

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Gateway:
    """``with Gateway() as gw:`` ``gw.base_url`` is ``http://127.0.0.1:<port>/v1``; ``gw.seen`` and ``gw.released``
    fill as requests come."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.released: list[float] = []
        handler = type("Handler", (_Handler,), {"gateway": self})
        server = type("Server", (http.server.ThreadingHTTPServer,), {"request_queue_size": 1024})
        self._server = server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
