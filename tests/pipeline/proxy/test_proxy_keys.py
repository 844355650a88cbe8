"""The proxy's keys stay where they belong (issue 31): the upstream key (``--upstream-key-env``) never reaches the
client, whatever the upstream echoes (a response header, a JSON or HTTP-error body, a stream with the key whole,
split across two reads or across two events), and the client's key never goes upstream, nor do the proxy's own keys
written by a client into the query or a forwarded header. Real servers on loopback: the proxy, an echoing upstream."""

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
from proxy_gateway import sse_text

from pipeline import _secrets
from pipeline.proxy import Proxy, ProxyConfig
from pipeline.proxy._config import LogFormat

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)

UPSTREAM_KEY = "sk-echoed-secret-0123456789"
CLIENT_KEY = "sk-client-own-key-abcdef"


def _event(text: str) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


_END = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers by the request's ``model`` with the key it received (``Authorization: Bearer K``) echoed."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, dict[str, str]]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        model = body.get("model", "")
        message = f"Incorrect API key provided: {key}"
        if model == "error":
            self._answer(401, "application/json", json.dumps({"error": {"message": message}}).encode(),
                         [("x-echo", key)])
        elif model == "json":
            self._answer(200, "application/json", json.dumps({"text": message}).encode(), [("x-echo", f"k={key}")])
        elif model.startswith("split-"):
            head, tail = message[:-20], message[-20:]  # the key cut in two
            events = [_event("before "), _event(head), _event(tail), _event(" after")]
            reads = [b"".join(events) + _END]
            if model == "split-reads":
                whole = _event(message)
                cut = len(whole) - 30
                reads = [_event("before "), whole[:cut], whole[cut:], _END]
            self._answer(200, "text/event-stream", b"", [], reads)
        else:
            self._answer(200, "application/json", b'{"ok": true}', [])

    def _answer(self, status: int, kind: str, body: bytes, headers: list[tuple[str, str]],
                reads: list[bytes] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        for name, value in headers:
            self.send_header(name, value)
        if reads is None:
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for read in reads:
            self.wfile.write(read)
            self.wfile.flush()
            time.sleep(0.05)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module", autouse=True)
def _registry() -> Iterator[None]:
    """The keys the proxies here register with the log filter are forgotten after this module (a key with
    "upstream" in it would redact that word from other modules' records)."""
    saved = dict(_secrets._patterns)
    yield
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Echo,), {"seen": seen}))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def proxy(echo: tuple[str, list[Any]]) -> Iterator[Proxy]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ECHO_UPSTREAM_KEY", UPSTREAM_KEY)
        patch.setenv("ECHO_CLIENT_KEY", CLIENT_KEY)
        config = ProxyConfig(upstream=echo[0], port=0, upstream_key_env="ECHO_UPSTREAM_KEY",
                             client_key_env="ECHO_CLIENT_KEY", forward_headers=("x-note",))
        with Proxy(config) as running:
            yield running


def _post(proxy: Proxy, model: str, stream: bool = False) -> httpx.Response:
    body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{proxy.base_url}/chat/completions", json=body, timeout=10,
                      headers={"authorization": f"Bearer {CLIENT_KEY}"})


def _no_key(response: httpx.Response) -> None:
    assert UPSTREAM_KEY not in response.text
    assert UPSTREAM_KEY not in str(response.headers.multi_items())


def test_an_http_error_echoing_the_upstream_key_reaches_the_client_redacted_in_body_and_headers(proxy: Proxy) -> None:
    response = _post(proxy, "error")
    assert response.status_code == 401
    _no_key(response)
    assert response.json()["error"]["message"] == "Incorrect API key provided: [redacted]"
    assert response.headers["x-echo"] == "[redacted]"


def test_a_non_streamed_body_echoing_the_upstream_key_reaches_the_client_redacted(proxy: Proxy) -> None:
    response = _post(proxy, "json")
    assert response.status_code == 200
    _no_key(response)
    assert response.json() == {"text": "Incorrect API key provided: [redacted]"}
    assert response.headers["x-echo"] == "k=[redacted]"


@pytest.mark.parametrize("model", ["split-events", "split-reads"])
def test_a_streamed_echo_of_the_upstream_key_split_across_events_or_reads_is_redacted(proxy: Proxy, model: str
                                                                                     ) -> None:
    response = _post(proxy, model, stream=True)
    assert response.status_code == 200
    _no_key(response)
    text = sse_text(response.content)
    assert "Incorrect API key provided: [redacted]" in text
    assert text.startswith("before ")
    assert response.content.rstrip().endswith(b"data: [DONE]")


def test_the_client_key_never_goes_upstream_nor_the_proxys_keys_written_into_query_or_header(
    proxy: Proxy, echo: tuple[str, list[tuple[str, dict[str, str]]]]
) -> None:
    seen = echo[1]
    response = httpx.post(f"{proxy.base_url}/chat/completions?note={CLIENT_KEY}&up={UPSTREAM_KEY}&x=1",
                          json={"model": "plain"}, timeout=10,
                          headers={"authorization": f"Bearer {CLIENT_KEY}", "x-note": f"mine is {CLIENT_KEY}",
                                   "user-agent": f"ua {UPSTREAM_KEY}"})
    assert response.status_code == 200
    target, headers = seen[-1]
    assert CLIENT_KEY not in target
    assert CLIENT_KEY not in str(headers)
    assert UPSTREAM_KEY not in target
    assert target.endswith("?note=%5Bredacted%5D&up=%5Bredacted%5D&x=1")
    assert headers["x-note"] == "mine is [redacted]"
    assert headers["user-agent"] == "ua [redacted]"
    assert headers["authorization"] == f"Bearer {UPSTREAM_KEY}"  # the one place the upstream key belongs


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_log_redaction_changes_values_only_never_the_access_logs_field_names(
    echo: tuple[str, list[Any]], log_format: LogFormat
) -> None:
    key = "sk-upstream-status-key-0123"  # shares "upstream" (and "_status") with the line's own words
    handler = _Lines()
    access = logging.getLogger("llm_stream.proxy.access")
    access.addHandler(handler)
    level = access.level
    access.setLevel(logging.INFO)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("STATUS_KEY", key)
            config = ProxyConfig(upstream=echo[0], port=0, upstream_key_env="STATUS_KEY", log_format=log_format)
            with Proxy(config) as running:
                assert httpx.post(f"{running.base_url}/logcheck", json={"model": "plain"}).status_code == 200
                httpx.post(f"{running.base_url}/logcheck/{key[:12]}/{key}", json={"model": "plain"})
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    plain, keyed = [line for line in handler.lines if "/v1/logcheck" in line]  # (other proxies may still log)
    assert "[redacted]" not in plain
    if log_format == "json":
        assert json.loads(plain)["upstream_status"] == 200
        assert json.loads(keyed)["path"].startswith("/v1/logcheck/[redacted]/[redacted]")
        assert set(json.loads(keyed)) == set(json.loads(plain))
    else:
        assert " upstream=200 " in plain
        assert keyed.startswith('"POST /v1/logcheck/[redacted]/[redacted]')
        assert " upstream=200 " in keyed
    path = json.loads(keyed)["path"] if log_format == "json" else keyed.split('"')[1]
    assert not any(key[at:at + 8] in path for at in range(len(key) - 7))  # the values lose every cut of the key


def test_the_scrubber_redacts_the_key_split_at_any_point_across_events_in_any_reads() -> None:
    from pipeline.proxy._scrub import Scrubber

    for split in range(1, len(UPSTREAM_KEY)):
        events = [_event("key: " + UPSTREAM_KEY[:split]), _event(UPSTREAM_KEY[split:] + " ok"), _END]
        body = b"".join(events)
        for size in (1, 7, 64, len(body)):
            scrubber = Scrubber(UPSTREAM_KEY, events=True)
            out = b"".join(scrubber.feed(body[at:at + size]) for at in range(0, len(body), size)) + scrubber.close()
            assert UPSTREAM_KEY.encode() not in out
            assert sse_text(out) == "key: [redacted] ok", (split, size)
