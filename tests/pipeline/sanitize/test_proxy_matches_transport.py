"""The proxy gives a client the bytes the transport gives, for the same upstream bytes read in the same pieces,
mutated streams included (issue 30): the status, ``x-should-retry``, the body, and whether it ended cut.

Both run in-process against one upstream that answers with the given pieces (an httpx transport, so the pieces are
the reads the repairer gets): the transport under a sync ``httpx.Client``, the proxy's ASGI app driven as uvicorn
drives it (the app raising is uvicorn aborting the response: a cut)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.proxy import create_proxy_app
from pipeline.sanitize import SanitizingTransport
from scripts.fuzz_repair import repair_seeds
from scripts.fuzz_repair_mutate import mutate_stream

PATHS = {"chat": "/chat/completions", "messages": "/messages", "responses": "/responses"}
SEEDS = {format: [seed for seed in repair_seeds(format) if len(seed) < 12_000][:25] for format in PATHS}


class _Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


class Upstream(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answers every request with a 200 event stream of ``pieces``."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def _answer(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Pieces(self.pieces),
                              request=request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)


UPSTREAM = Upstream()
PROXY = create_proxy_app("http://127.0.0.1:9/v1", transport=UPSTREAM)
LOOP = asyncio.new_event_loop()


def _request() -> bytes:
    return json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()


def through_transport(format: str) -> tuple[Any, ...]:
    with httpx.Client(transport=SanitizingTransport(UPSTREAM)) as client, client.stream(
        "POST", "http://127.0.0.1:9/v1" + PATHS[format], content=_request(),
        headers={"content-type": "application/json"},
    ) as response:
        pieces: list[bytes] = []
        try:
            pieces.extend(response.iter_raw())
        except httpx.HTTPError:
            return response.status_code, response.headers.get("x-should-retry"), b"".join(pieces), True
        return response.status_code, response.headers.get("x-should-retry"), b"".join(pieces), False


def through_proxy(format: str) -> tuple[Any, ...]:
    body = _request()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1" + PATHS[format], "raw_path": ("/v1" + PATHS[format]).encode(), "query_string": b"",
             "root_path": "", "headers": [(b"host", b"proxy.test"), (b"content-type", b"application/json"),
                                          (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()
    requests = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()

    async def drive() -> bool:
        try:
            await PROXY(scope, receive, send)
        except Exception:
            return True
        return not done.is_set()

    cut = LOOP.run_until_complete(drive())
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers.get("x-should-retry"), data, cut


def _pieces(body: bytes, rng: random.Random) -> list[bytes]:
    size = rng.choice([1, 7, 64, 512, len(body) or 1])
    return [body[at : at + size] for at in range(0, len(body), size)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(format=st.sampled_from(sorted(PATHS)), seed=st.integers(min_value=0, max_value=2**32), mutated=st.booleans())
def test_the_proxy_gives_the_bytes_the_transport_gives_for_the_same_upstream_reads(
    format: str, seed: int, mutated: bool
) -> None:
    rng = random.Random(seed)
    body = rng.choice(SEEDS[format])
    if mutated:
        body = mutate_stream(rng, body)
    UPSTREAM.pieces = _pieces(body, rng)
    assert through_proxy(format) == through_transport(format)
