"""Every upstream event that arrives is progress for the transport's read deadline, held or forwarded (issue 31,
item 5): an upstream sending one event within each read timeout is read to its end through the transport as the
plain SDK reads it, even while the repairer holds those events (empty deltas before the answer, the arguments of a
call not yet identified); keep-alive comments alone still time out (``pipeline/sanitize/_bodies.py``)."""

from __future__ import annotations

import json
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

openai = pytest.importorskip("openai")

from pipeline import SanitizingTransport  # noqa: E402
from pipeline.sanitize._bodies import Deadline  # noqa: E402
from pipeline.sanitize.messages import MessagesRepair  # noqa: E402

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)

REQUEST: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
PAUSE = 0.5
TIMEOUT = 1.5


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class _Script(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, steps: list[tuple[bytes, float]]) -> None:
        self.steps = steps
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
            pass


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
def empty_deltas_first() -> Iterator[str]:
    """One empty delta every 0.5 s for 3 s (held: nothing to forward yet), then the answer."""
    steps = [(HEAD + _chunk({"role": "assistant"}), PAUSE)] + [(_chunk({}), PAUSE) for _ in range(6)]
    steps += [(_chunk({"content": "late"}) + _chunk({}, "stop") + b"data: [DONE]\n\n", 0.0)]
    yield from _serve(steps)


@pytest.fixture
def call_identified_late() -> Iterator[str]:
    """A call's arguments every 0.5 s for 3 s before its id and name, before any text (all held until then)."""
    first = {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}
    steps = [(HEAD + _chunk({"role": "assistant"}), PAUSE), (_chunk(first), PAUSE)]
    steps += [(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": " "}}]}), PAUSE) for _ in range(6)]
    last = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f",
                                                                                        "arguments": "}"}}]}
    steps += [(_chunk(last) + _chunk({}, "tool_calls") + b"data: [DONE]\n\n", 0.0)]
    yield from _serve(steps)


@pytest.fixture
def keepalives_only() -> Iterator[str]:
    """An answer started, then a keep-alive comment every 0.5 s for 3 s, then the rest."""
    steps = [(HEAD + _chunk({"role": "assistant", "content": "a"}), PAUSE)] + [(b": keep-alive\n\n", PAUSE)] * 6
    steps += [(_chunk({"content": "b"}) + _chunk({}, "stop") + b"data: [DONE]\n\n", 0.0)]
    yield from _serve(steps)


def _client(base_url: str, transport: Any = None) -> Any:
    http = httpx.Client(transport=transport) if transport is not None else httpx.Client()
    return openai.OpenAI(base_url=base_url, api_key="sk-test", timeout=TIMEOUT, max_retries=0, http_client=http)


def _read(base_url: str, transport: Any = None) -> tuple[str, str]:
    with _client(base_url, transport) as client:
        stream = client.chat.completions.create(stream=True, **REQUEST)
        text, calls = "", ""
        for chunk in stream:
            delta = chunk.choices[0].delta if chunk.choices else None
            text += (delta.content or "") if delta is not None else ""
            for call in (delta.tool_calls or []) if delta is not None else []:
                calls += call.function.arguments or "" if call.function is not None else ""
    return text, calls


@pytest.mark.parametrize("through", [False, True], ids=["plain", "transport"])
def test_held_empty_deltas_within_each_read_timeout_are_progress(through: bool, empty_deltas_first: str) -> None:
    started = time.monotonic()
    text, _ = _read(empty_deltas_first, SanitizingTransport() if through else None)
    assert text == "late"
    assert time.monotonic() - started > TIMEOUT  # it outlasted one read timeout, and was not cut for it


@pytest.mark.parametrize("through", [False, True], ids=["plain", "transport"])
def test_held_arguments_of_a_call_not_yet_identified_are_progress(through: bool, call_identified_late: str) -> None:
    _, calls = _read(call_identified_late, SanitizingTransport() if through else None)
    assert calls == "{      }"


def test_keepalive_comments_alone_still_time_out_through_the_transport(keepalives_only: str) -> None:
    with pytest.raises(openai.APIError):  # the in-band TIMEOUT error after the first byte
        _read(keepalives_only, SanitizingTransport())


def _messages_event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\n".encode() + b"data: " + json.dumps(payload).encode() + b"\n\n"


def test_messages_events_held_behind_an_unidentified_call_are_progress_and_pings_are_not() -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "model": "m"}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "", "name": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}}
    repair = MessagesRepair()
    deadline = Deadline(read_s=1.0)
    assert deadline.step(repair, _messages_event(start) + _messages_event(block)) == b""  # all held
    deadline.last -= 10  # a long wait, then one more held event: progress, not a timeout
    assert deadline.step(repair, _messages_event(delta)) == b""
    assert repair.failure is None
    deadline.last -= 10  # a long wait, then only a ping: a timeout
    deadline.step(repair, _messages_event({"type": "ping"}))
    assert repair.failure is not None
    assert repair.failure.code == "TIMEOUT"
