"""The ``proxy`` target of ``scripts/fuzz.py``: the proxy's request side, the real ASGI app driven in-process.

One input is the raw bytes of one HTTP/1.1 request as a client sends it. ``h11`` parses it (the proxy's server
parses with llhttp since decision 0073, and gives the app the target split as h11's uvicorn protocol split it: the
scope's ``path``, ``raw_path`` and ``query_string`` are the same); an input h11 refuses is not a request. The ASGI
scope is built as uvicorn's ``h11_impl`` builds it, the app is ``create_proxy_app(config, transport=...)``, and its
upstream is an in-process transport that records the request it got and answers with one canned answer: no socket at
all. Everything else a run needs (the upstream's base path, the keys, ``--forward-headers``, a small
``max_body_bytes``, how the body is split into ``http.request`` messages, whether and when the client hangs up, the
canned answer) is drawn from a PRNG seeded with the input's CRC-32, so a crash file replays exactly. The oracle is
``fuzz_proxy_oracle.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import zlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote

import h11
import httpx

from pipeline.proxy import ProxyConfig, create_proxy_app
from scripts.fuzz_proxy_cases import (
    CLIENT_KEYS,
    HOP,
    JSON,
    ODD,
    PROXY_TOKENS,
    SSE,
    UPSTREAM_HOST,
    UPSTREAM_KEY,
    UPSTREAM_PORT,
    Answer,
    Client,
    Plan,
    Run,
    Sent,
    proxy_seeds,
)
from scripts.fuzz_proxy_oracle import check_run

__all__ = ["PROXY_TOKENS", "check_proxy", "parse_request", "plan_of", "proxy_seeds", "run_proxy"]

CLIENT_KEYS_ENV = "LLM_STREAM_FUZZ_CLIENT_KEYS"
UPSTREAM_KEY_ENV = "LLM_STREAM_FUZZ_UPSTREAM_KEY"
BASES = ("/v1", "/api/openai/v1", "/")
FORWARD_SETS = ((), ("x-request-id",), ("x-custom-*", "proxy-*"), ("x-forwarded-for", "cookie", "x-api-*"))
TIME_LIMIT_S = 20.0


def parse_request(data: bytes, *, completed: bool = False) -> Client | None:
    """The request h11 reads from ``data`` (``None``: not a request); its body as far as it came, and whether it
    came whole (an incomplete or malformed body is a client that went away after it). A head cut short is read
    with an empty line after it (most cut inputs are then a request still)."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data + b"\r\n\r\n" if completed else data)
    body: list[bytes] = []
    request: h11.Request | None = None
    complete = False
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            break  # uvicorn answers 400 itself and closes: the app sees a client gone
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            complete = True
            break
        elif event is h11.NEED_DATA and request is None and not completed:
            return parse_request(data, completed=True)
        else:
            break
    if request is None:
        return None
    headers = [(name.lower(), bytes(value)) for name, value in request.headers]
    return Client(request.method.decode("ascii"), bytes(request.target), headers, b"".join(body), complete,
                  request.http_version.decode("ascii"))


def scope_of(client: Client) -> dict[str, Any]:
    """The ASGI scope as uvicorn's h11 protocol builds it (``root_path`` empty)."""
    raw_path, _, query_string = client.target.partition(b"?")
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": client.http_version,
        "server": ("127.0.0.1", 8809), "client": ("127.0.0.1", 50000), "scheme": "http", "method": client.method,
        "root_path": "", "path": unquote(raw_path.decode("ascii")), "raw_path": raw_path,
        "query_string": query_string, "headers": client.headers, "state": {},
    }


def plan_of(data: bytes, client: Client) -> Plan:
    rng = random.Random(zlib.crc32(data))
    body = client.body
    cuts = sorted(rng.randint(0, len(body)) for _ in range(rng.randint(0, 3)))
    edges = [0, *cuts, len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    streamed_chat = client.method == "POST" and client.target.split(b"?")[0].rstrip(b"/").endswith(
        b"/chat/completions") and b'"stream":true' in body.replace(b" ", b"")
    answers: list[Answer] = ["json", "429", "connect", "cut", "odd"]
    answers += ["sse", "sse", "odd"] if streamed_chat else []
    return Plan(
        base=rng.choice(BASES), client_keys=rng.random() < 0.5, upstream_key=rng.random() < 0.5,
        forward=rng.choice(FORWARD_SETS), max_body=rng.choice([64, 1024, 64 << 20]), pieces=pieces,
        hang_up=rng.choice(["none", "none", "none", "body", "wait", "response"]),
        hang_at=rng.randint(0, len(pieces) - 1),
        answer=rng.choice(answers), mode=rng.choice(["stream", "buffered"]), log_format=rng.choice(["text", "json"]),
        odd=rng.randrange(len(ODD)),
    )


class _Body(httpx.AsyncByteStream):
    """A canned body, in pieces (``cut``: a reset after them); closing it marks its request ``closed``."""

    def __init__(self, pieces: list[bytes], cut: bool, sent: Sent) -> None:
        self.pieces, self.cut, self.sent = pieces, cut, sent

    async def aclose(self) -> None:
        self.sent.closed = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            await asyncio.sleep(0)  # a point where a cancellation lands, as on a socket
            yield piece
        if self.cut:
            raise httpx.ReadError("the upstream reset the connection")


class Upstream(httpx.AsyncBaseTransport):
    """The upstream in-process: records each request and answers with the canned answer of the current run."""

    def __init__(self) -> None:
        self.answer: Answer = "json"
        self.odd = 0
        self.sent: list[Sent] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = Sent(request.url.scheme, request.url.host, request.url.port, request.url.raw_path,
                    [(bytes(k).lower(), bytes(v)) for k, v in request.headers.raw], await request.aread())
        self.sent.append(sent)
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            sent.cancelled = True
            raise
        if self.answer == "connect":
            raise httpx.ConnectError("connection refused", request=request)
        if self.answer == "odd":
            status, kind, odd = ODD[self.odd]
            return httpx.Response(status, headers=[("content-type", kind.decode())],
                                  stream=_Body([odd[:40], odd[40:]], False, sent), request=request)
        if self.answer == "sse":
            return httpx.Response(200, headers=[("content-type", "text/event-stream")],
                                  stream=_Body([SSE[:40], SSE[40:]], False, sent), request=request)
        status, headers = (429, [("retry-after", "1")]) if self.answer == "429" else (200, [])
        headers = [("content-type", "application/json"), *headers, *HOP]
        half = len(JSON) // 2
        body = _Body([JSON[:half], JSON[half:]], self.answer == "cut", sent)
        return httpx.Response(status, headers=headers, stream=body, request=request)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.run: Run | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.run is not None:
            self.run.logs.append(record.getMessage() + (record.exc_text or ""))
            self.run.access += record.name == "llm_stream.proxy.access"


_apps: dict[tuple[Any, ...], tuple[Any, Upstream]] = {}
_loop: asyncio.AbstractEventLoop | None = None
_records = _Records()


def _app(plan: Plan) -> tuple[Any, Upstream]:
    key = (plan.base, plan.client_keys, plan.upstream_key, plan.forward, plan.max_body, plan.mode, plan.log_format)
    if key not in _apps:
        os.environ.setdefault(CLIENT_KEYS_ENV, ",".join(CLIENT_KEYS))
        os.environ.setdefault(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
        config = ProxyConfig(
            upstream=f"http://{UPSTREAM_HOST}:{UPSTREAM_PORT}{plan.base}", forward_headers=plan.forward,
            client_key_env=CLIENT_KEYS_ENV if plan.client_keys else None, max_body_bytes=plan.max_body,
            upstream_key_env=UPSTREAM_KEY_ENV if plan.upstream_key else None, mode=plan.mode,
            log_format=plan.log_format,
        )
        upstream = Upstream()
        _apps[key] = (create_proxy_app(config, transport=upstream), upstream)
    return _apps[key]


async def _drive(app: Any, client: Client, plan: Plan, run: Run) -> None:
    """One request through the app as uvicorn's cycle would carry it: the body in ``plan.pieces`` messages, then
    ``http.disconnect`` once the response is complete (or when the client hangs up)."""
    gone = asyncio.Event()
    messages = [{"type": "http.request", "body": piece, "more_body": at < len(plan.pieces) - 1 or not client.complete}
                for at, piece in enumerate(plan.pieces)]
    if plan.hang_up == "body":
        messages = messages[: plan.hang_at]
    body_ends = plan.hang_up != "body" and client.complete

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        if not body_ends or plan.hang_up == "wait":
            run.hung_up = True
            gone.set()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        (run.late if run.hung_up else run.messages).append(message)  # after its end too: uvicorn raises then
        if message.get("type") == "http.response.start" and plan.hang_up == "response":
            run.hung_up = True
            gone.set()
        elif message.get("type") == "http.response.body" and not message.get("more_body", False):
            gone.set()

    await app(scope_of(client), receive, send)


def run_proxy(data: bytes, plan: Plan | None = None) -> Run | None:
    """One input through the app: what the client and the upstream saw, and the records of the ``llm_stream``
    loggers at every level (``None``: not a request). ``plan``: instead of the one the input draws (tests)."""
    global _loop
    client = parse_request(data)
    if client is None:
        return None
    plan = plan or plan_of(data, client)
    app, upstream = _app(plan)
    upstream.answer, upstream.odd, upstream.sent = plan.answer, plan.odd, []
    run = Run(client, plan)
    _loop = _loop or asyncio.new_event_loop()  # one loop for every input: a new one per input costs more than it
    logger = logging.getLogger("llm_stream")
    level, _records.run = logger.level, run
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_records)
    try:
        _loop.run_until_complete(asyncio.wait_for(_drive(app, client, plan, run), TIME_LIMIT_S))
    finally:
        logger.removeHandler(_records)
        _records.run = None
        logger.setLevel(level)
    run.upstream = upstream.sent
    return run


def check_proxy(data: bytes) -> None:
    """The proxy's promises for one request (``OracleFailure`` naming the check), or the app's own exception."""
    run = run_proxy(data)
    if run is not None:
        check_run(run)

