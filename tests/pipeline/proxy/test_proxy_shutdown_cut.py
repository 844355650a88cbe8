"""The end of the SIGTERM grace period (issue 31), in-process: a Messages stream still in flight is cut with its
format's in-band error first (``event: error``), counted ``cut=shutdown`` in the metrics and the access log, and no
traceback is logged. (``test_proxy_as_operated.py`` does the same for a chat stream through the command.)"""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import generate_latest

from pipeline.proxy import Proxy

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


class _Slow(http.server.BaseHTTPRequestHandler):
    """A Messages stream: its opening, then a text delta every 0.2 s for 10 s."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
                   "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 0}}
        try:
            self.wfile.write(_event("message_start", {"message": message}))
            self.wfile.write(_event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
            for n in range(50):
                self.wfile.write(_event("content_block_delta", {"index": 0, "delta": {"type": "text_delta",
                                                                                      "text": f"t{n} "}}))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_messages_stream_cut_at_the_end_of_the_grace_period_gets_its_in_band_error_and_cut_shutdown(
    upstream: str
) -> None:
    lines = _Lines()
    watched = [logging.getLogger(name) for name in ("uvicorn.error", "llm_stream")]
    for logger in watched:
        logger.addHandler(lines)
    access = logging.getLogger("llm_stream.proxy.access")
    level, access.level = access.level, logging.INFO
    received: list[bytes] = []
    try:
        proxy = Proxy(upstream, grace_period=1)
        proxy.start()
        body = {"model": "m", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

        def read() -> None:
            with httpx.stream("POST", f"{proxy.base_url}/messages", json=body, timeout=20) as response:
                try:
                    for piece in response.iter_raw():
                        received.append(piece)
                except httpx.HTTPError:
                    pass  # cut: the body's end never came

        client = threading.Thread(target=read)
        client.start()
        while not received:
            time.sleep(0.05)
        server = proxy._server
        assert server is not None
        server.should_exit = True  # as SIGTERM: graceful, the grace period, then the proxy's own cut
        client.join(timeout=15)
        proxy._thread.join(timeout=15)  # type: ignore[union-attr]
    finally:
        for logger in watched:
            logger.removeHandler(lines)
        access.level = level
    text = b"".join(received)
    last = text.rstrip().split(b"\n\n")[-1]
    assert last.startswith(b"event: error\ndata: "), last
    assert json.loads(last.split(b"data: ", 1)[1])["error"]["type"]
    metrics = generate_latest(proxy.app.metrics.registry).decode()
    assert 'llm_stream_proxy_streams_cut_total{reason="shutdown"} 1.0' in metrics
    access_lines = [r.getMessage() for r in lines.records if r.name == "llm_stream.proxy.access"]
    (line,) = access_lines
    assert line.endswith(" cut=shutdown"), line
    assert not [r for r in lines.records if r.exc_info], [r.getMessage() for r in lines.records if r.exc_info]
