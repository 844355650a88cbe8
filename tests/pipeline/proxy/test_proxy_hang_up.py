"""A client's hang-up cancels the upstream request at any point (decision 0047), however the proxy's app is served:
under its own protocol the connection's end is a future (``HANG_UP``, decision 0073; tested with the real server in
test_proxy_under_attack.py), under any other ASGI server a task reads ``receive`` for ``http.disconnect``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from pipeline.proxy import create_proxy_app


class _Silent(httpx.AsyncBaseTransport):
    """An upstream that never answers, and says when its request was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("not cancelled")


async def test_under_another_asgi_server_a_hang_up_before_the_first_byte_cancels_the_upstream_request() -> None:
    upstream = _Silent()
    app = create_proxy_app("http://127.0.0.1:9/v1", transport=upstream, log_format="off")
    messages = [{"type": "http.request", "body": b'{"model":"m","stream":true,"messages":[]}', "more_body": False}]
    gone = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
             "query_string": b"", "headers": [(b"content-type", b"application/json")]}  # no "extensions"
    served = asyncio.ensure_future(app(scope, receive, send))
    await asyncio.wait_for(upstream.started.wait(), 3)
    assert not served.done()
    gone.set()
    await asyncio.wait_for(served, 3)
    assert upstream.cancelled.is_set()
    assert sent == []  # nothing answered to a client that left
    await app.aclose()
