"""Issue 21: the transport's total deadline on the response head holds for sync clients too (httpx and httpx2), while
a body that takes longer than the timeout, content arriving within each read timeout, is not cut
(pipeline/sanitize/_head_deadline.py, docs/decisions/0033-one-retry-layer.md)."""

from __future__ import annotations

import json
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import openai
import pytest

from pipeline import SanitizingTransport
from pipeline.sanitize._head_deadline import HEAD_DEADLINE, bound_head, head_deadline

REQUEST: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\nx-padding: " + b"x" * 200


def _event(text: str) -> bytes:
    delta = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


_STOP = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


class _Script(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, steps: list[tuple[bytes, float]]) -> None:
        self.steps = steps
        self.gone = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Any = self.server
        data = b""
        while b"\r\n\r\n" not in data and (more := self.request.recv(65536)):
            data += more
        try:
            for piece, pause in server.steps:
                self.request.sendall(piece)
                time.sleep(pause)
        except OSError:  # the client went away
            server.gone.set()


def _serve(steps: list[tuple[bytes, float]]) -> Iterator[str]:
    server = _Script(steps)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dripped_head() -> Iterator[str]:
    """An upstream that sends its response head one byte every 0.2 s (about 50 s in all)."""
    yield from _serve([(bytes([b]), 0.2) for b in HEAD])


@pytest.fixture
def slow_body() -> Iterator[str]:
    """A prompt head, then one content event every 0.5 s for 3 s: longer than the 1.5 s timeout in total, but
    never 1.5 s without content."""
    steps = [(HEAD + b"\r\n\r\n", 0.0)] + [(_event(f"w{i} "), 0.5) for i in range(6)]
    steps += [(b"data: " + json.dumps(_STOP).encode() + b"\n\ndata: [DONE]\n\n", 0.0)]
    yield from _serve(steps)


def _client(module: Any, base_url: str, timeout: float, transport: Any = None) -> openai.OpenAI:
    http = module.Client(transport=transport or SanitizingTransport())
    return openai.OpenAI(base_url=base_url, api_key="sk-test", timeout=timeout, max_retries=0, http_client=http)


@pytest.mark.server
@pytest.mark.parametrize("module", [httpx2, httpx], ids=["httpx2", "httpx"])
def test_a_response_head_dripped_a_byte_at_a_time_does_not_hold_a_sync_sdk_past_its_timeout(
    module: Any, dripped_head: str
) -> None:
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError), _client(module, dripped_head, 2) as client:
        client.chat.completions.create(stream=True, **REQUEST)
    assert time.monotonic() - started < 6


@pytest.mark.server
@pytest.mark.parametrize("module", [httpx2, httpx], ids=["httpx2", "httpx"])
def test_a_given_sync_http_transport_gets_the_same_head_deadline(module: Any, dripped_head: str) -> None:
    transport = SanitizingTransport(module.HTTPTransport())
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError), _client(module, dripped_head, 2, transport) as client:
        client.chat.completions.create(stream=True, **REQUEST)
    assert time.monotonic() - started < 6


@pytest.mark.server
@pytest.mark.parametrize("module", [httpx2, httpx], ids=["httpx2", "httpx"])
def test_a_body_longer_than_the_timeout_in_total_is_read_to_its_end(module: Any, slow_body: str) -> None:
    started = time.monotonic()
    with _client(module, slow_body, 1.5) as client:
        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True,
                                                                                                 **REQUEST))
    assert text == "w0 w1 w2 w3 w4 w5 "
    assert time.monotonic() - started > 1.5  # it did outlast the timeout, and was not cut for it


def test_the_deadline_is_the_waiting_threads_own_and_ends_with_the_wait() -> None:
    transport = httpx2.HTTPTransport()
    assert bound_head(transport)
    wrapped = transport._pool._network_backend
    assert bound_head(transport)
    assert transport._pool._network_backend is wrapped  # idempotent: wrapped once
    seen: list[float | None] = []
    with head_deadline(5):
        assert HEAD_DEADLINE.get() is not None
        worker = threading.Thread(target=lambda: seen.append(HEAD_DEADLINE.get()))
        worker.start()
        worker.join()
    assert seen == [None]  # another thread's requests keep their own per-read timeouts
    assert HEAD_DEADLINE.get() is None


def test_a_transport_without_a_pool_is_left_as_it_is() -> None:
    class Custom(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"ok": True})

    custom = Custom()
    assert bound_head(custom) is False
    with httpx.Client(transport=SanitizingTransport(custom)) as client:
        assert client.post("http://127.0.0.1:9/v1/chat/completions", json={"stream": True}).json() == {"ok": True}
