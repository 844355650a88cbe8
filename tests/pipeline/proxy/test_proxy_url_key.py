"""A client that puts its key in the URL (``?key=``, Google's style) through the proxy: the query goes upstream as
sent, and neither the access log, any ``llm_stream`` log line nor the error the proxy writes shows the key (issue 32
items 2 and 4)."""

from __future__ import annotations

import http.server
import json
import logging
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pipeline import _secrets
from pipeline.proxy import Proxy, ProxyConfig

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)

KEY = "AIzaSyMv6Pt2Qz8Kx4Wr1Jd7Hn3Cs"


class _EchoQueryKey(http.server.BaseHTTPRequestHandler):
    """Answers a stream with an in-band error quoting the ``key`` of its query."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        key = parse_qs(urlsplit(self.path).query).get("key", [""])[0]
        error = {"error": {"message": f"API key {key} is not valid", "type": "server_error"}}
        body = f"data: {json.dumps(error)}\n\n".encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    saved = dict(_secrets._patterns)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoQueryKey)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_url_key_is_in_no_log_line_nor_the_error_the_proxy_writes(
    upstream: str, log_format: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    access = logging.getLogger("llm_stream.proxy.access")
    level = access.level
    access.setLevel(logging.INFO)
    try:
        with Proxy(ProxyConfig(upstream=upstream, port=0, log_format=log_format)) as running:  # type: ignore[arg-type]
            response = httpx.post(
                f"{running.base_url}/chat/completions?alt=sse&key={KEY}",
                json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                timeout=10,
            )
    finally:
        access.setLevel(level)
    assert "is not valid" in response.text  # the upstream's error came back, its key redacted
    assert KEY[:9] not in response.text
    lines = [record.getMessage() for record in caplog.records if record.name.startswith("llm_stream")]
    assert any("/v1/chat/completions" in line for line in lines)  # the access line was written
    assert not any(KEY[:9] in line for line in lines)
