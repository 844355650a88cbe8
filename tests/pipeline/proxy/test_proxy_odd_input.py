"""No exception escapes the proxy app (issue 31): a request body nested 200,000 levels deep is a 400 in the API's
shape before anything goes upstream, and upstream answers with odd JSON (nested past any decoder, a tool call's
``index`` that is an object or an array) become an HTTP error in the API's shape or a cut, never a 500 with a
traceback. Real servers on loopback: the proxy, an upstream answering by the request's ``model``."""

from __future__ import annotations

import http.server
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pipeline.proxy import Proxy

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)

DEEP = 200_000


def _sse(*chunks: object) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def _call(index: object) -> dict[str, Any]:
    call = {"index": index, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


ANSWERS: dict[str, tuple[int, str, bytes]] = {
    "deep-json": (200, "application/json", b'{"a":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    "deep-error": (503, "application/json", b'{"error":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    "deep-event": (200, "text/event-stream", b'data: {"error":' + b"[" * DEEP + b"]" * DEEP + b"}\n\n"),
    "index-object": (200, "text/event-stream", _sse(_call({"a": 1}))),
    "index-array": (200, "text/event-stream", _sse(_call([0]))),
    "index-string": (200, "text/event-stream", _sse(_call("0"))),
    "choices-string": (200, "text/event-stream", _sse({"id": "c", "choices": "x"})),
    "null-event": (200, "text/event-stream", b"data: null\n\ndata: 7\n\ndata: []\n\n"),
}


NOTE = "café €".encode()


class _Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str]

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        model = json.loads(raw).get("model", "") if raw.startswith(b'{"model"') else ""
        self.seen.append(model)
        status, kind, body = ANSWERS.get(model, (200, "application/json", b'{"ok":true}'))
        self.send_response(status)
        if model == "utf8-header":  # http.server writes a value as latin-1: these are the UTF-8 bytes of "café €"
            self.send_header("x-note", NOTE.decode("latin-1"))
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Upstream,), {"seen": seen}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    handler = _Records()
    names = ("uvicorn.error", "llm_stream", "asyncio")
    for name in names:
        logging.getLogger(name).addHandler(handler)
    yield handler.records
    for name in names:
        logging.getLogger(name).removeHandler(handler)


def _no_traceback(records: list[logging.LogRecord]) -> None:
    assert not [r for r in records if r.exc_info], [r.getMessage() for r in records if r.exc_info]


@pytest.mark.parametrize("retries", [0, 1])
def test_a_request_body_nested_200000_deep_is_a_400_in_the_apis_shape_and_never_goes_upstream(
    upstream: tuple[str, list[str]], records: list[logging.LogRecord], retries: int
) -> None:
    body = b'{"model":"m","stream":true,"messages":' + b"[" * DEEP + b"]" * DEEP + b"}"
    before = len(upstream[1])
    with Proxy(upstream[0], retries=retries) as proxy:
        response = httpx.post(f"{proxy.base_url}/chat/completions", content=body, timeout=30,
                              headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"
    assert len(upstream[1]) == before
    _no_traceback(records)


@pytest.mark.parametrize("model", sorted(ANSWERS))
@pytest.mark.parametrize("retries", [0, 1])
def test_an_upstream_answer_with_odd_json_is_never_a_500_nor_a_traceback(
    upstream: tuple[str, list[str]], records: list[logging.LogRecord], model: str, retries: int
) -> None:
    with Proxy(upstream[0], retries=retries) as proxy:
        try:
            response = httpx.post(f"{proxy.base_url}/chat/completions", timeout=30,
                                  json={"model": model, "stream": True, "messages": []})
        except httpx.RemoteProtocolError:  # cut after its first byte: the client sees the response end early
            response = None
    if response is not None:
        assert response.status_code != 500, response.text[:300]
        if response.status_code >= 400:  # the proxy's own answer, or the upstream's as it sent it
            assert response.text.startswith('{"error"'), response.text[:300]
    _no_traceback(records)


@pytest.mark.parametrize(
    ("path", "shape"),
    [("/messages", {"type": "error", "error": {"type": "invalid_request_error"}}),
     ("/chat/completions", {"error": {"type": "llm_stream_error"}}),
     ("/responses", {"error": {"type": "llm_stream_error"}})],
)
def test_the_proxys_own_refusal_comes_in_the_error_shape_of_the_api_the_path_belongs_to(
    upstream: tuple[str, list[str]], path: str, shape: dict[str, Any]
) -> None:
    body = b'{"model":"m","stream":true,"messages":' + b"[" * DEEP + b"]" * DEEP + b"}"
    with Proxy(upstream[0]) as proxy:
        response = httpx.post(f"{proxy.base_url}{path}", content=body, timeout=30,
                              headers={"content-type": "application/json"})

    assert response.status_code == 400
    answer = response.json()
    assert set(answer) == set(shape)
    assert {key: answer["error"][key] for key in shape["error"]} == shape["error"]
    assert answer["error"]["code"] == "INVALID_REQUEST"


def test_an_upstream_header_value_that_is_not_ascii_reaches_the_client_byte_for_byte(
    upstream: tuple[str, list[str]], records: list[logging.LogRecord]
) -> None:
    """The response's headers go to the client as the upstream sent their values (the names lower-cased): a UTF-8
    value was decoded and written back as latin-1 (a 502 for a character past U+00FF)."""
    with Proxy(upstream[0]) as proxy:
        response = httpx.post(f"{proxy.base_url}/chat/completions", timeout=30,
                              json={"model": "utf8-header", "stream": False, "messages": []})
    assert response.status_code == 200, response.text[:300]
    assert (b"x-note", NOTE) in [(name.lower(), value) for name, value in response.headers.raw]
    _no_traceback(records)
