"""``llm-stream proxy``: the sanitizing transport as an OpenAI-compatible HTTP server, for clients in any language.

    llm-stream proxy --upstream https://api.deepseek.com/v1       # then point any client at http://127.0.0.1:8809/v1

- ``/v1/<path>`` (any method) is sent to ``<upstream>/<path>`` through one ``SanitizingTransport``: a streamed chat
  completion comes back clean, everything else (non-streaming requests, ``/v1/models``, ...) as it came.
- The client's ``Authorization`` is forwarded to the upstream and nowhere else (never logged, never echoed);
  hop-by-hop headers and ``Host`` are not forwarded.
- ``GET /healthz`` answers ``{"status": "ok"}`` without touching the upstream.
- It keeps no state between requests (no session, no cache, no counters): run N replicas behind any load balancer
  (docs/proxy.md).
- The upstream unreachable is a ``502`` and an upstream that stops answering a ``504``, each with an OpenAI-shaped
  error body carrying our code (``TRANSPORT``, ``TIMEOUT``).
- Nothing is retried unless ``retry_policy`` (``--retries N``) says so: the client's own retry loop governs; a body
  the upstream cut is aborted, never ended cleanly (docs/decisions/0033-one-retry-layer.md).

Needs the ``emulator`` extra (starlette and uvicorn).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from operators import Code, Limits, LlmStreamError, RetryPolicy
from operators.extend import OWN_ERROR_TYPE

from .._serve import BackgroundServer, bind, serve, url_of, uvicorn_config
from ._transport import Mode, SanitizingTransport

__all__ = ["Proxy", "create_proxy_app", "run_proxy"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=60.0)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": OWN_ERROR_TYPE, "code": code}}, status_code=status)


def create_proxy_app(
    upstream: str,
    *,
    retry_policy: RetryPolicy | None = None,
    limits: Limits | None = None,
    mode: Mode = "stream",
    timeout: httpx.Timeout | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Starlette:
    """The proxy as an ASGI app forwarding ``/v1/*`` to ``upstream`` (a base URL such as ``https://host/v1``)."""
    base = httpx.URL(upstream.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.host:
        raise ValueError(f"--upstream must be an http(s) URL such as https://api.example.com/v1, got {upstream!r}")
    sanitizing = SanitizingTransport(transport, retry_policy=retry_policy, limits=limits, mode=mode)
    client = httpx.AsyncClient(transport=sanitizing, timeout=timeout or _DEFAULT_TIMEOUT)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def forward(request: Request) -> Response:
        path = request.path_params["path"]
        url = base.copy_with(path=f"{base.path.rstrip('/')}/{path}", query=request.url.query.encode())
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        outgoing = client.build_request(request.method, url, headers=headers, content=await request.body())
        try:
            upstream_response = await client.send(outgoing, stream=True)
        except httpx.TimeoutException as exc:
            return _error(504, Code.TIMEOUT, f"the upstream {base.host} did not answer in time: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return _error(502, Code.TRANSPORT, f"the upstream {base.host} is unreachable: {type(exc).__name__}: {exc}")
        out_headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in _HOP_BY_HOP}
        return StreamingResponse(
            _relay(upstream_response),
            status_code=upstream_response.status_code,
            headers=out_headers,
            background=BackgroundTask(upstream_response.aclose),
        )

    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/v1/{path:path}", forward, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]),
        ],
    )
    app.state.upstream = client
    return app


class _ProxyServer(uvicorn.Server):
    """Closes the upstream client's connections when the server shuts down."""

    def __init__(self, app: Starlette, *, embedded: bool) -> None:
        super().__init__(uvicorn_config(app, embedded=embedded))
        self._client: httpx.AsyncClient = app.state.upstream

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        await self._client.aclose()


class UpstreamCut(LlmStreamError):
    """The upstream body ended early: raised inside the response so the server aborts it (no terminating chunk)."""


async def _relay(response: httpx.Response) -> AsyncIterator[bytes]:
    """The response's bytes as they arrive (still encoded if the upstream compressed a pass-through response).

    A body the upstream cut (a reset, chunked without its last chunk, a short Content-Length) stays cut: the
    client's response is aborted, not ended, on every path (a repaired stream has its in-band error event first)."""
    try:
        async for piece in response.aiter_raw():
            yield piece
    except httpx.HTTPError as exc:
        raise UpstreamCut(f"the upstream body ended early: {type(exc).__name__}: {exc}") from None
    finally:
        await response.aclose()


class Proxy(BackgroundServer):
    """The proxy on a loopback port, served from a background thread (tests, notebooks, benchmarks)::

    with Proxy(upstream=emulator.base_url) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key=...)
    """

    name = "proxy"

    def __init__(
        self,
        upstream: str,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        mode: Mode = "stream",
        retry_policy: RetryPolicy | None = None,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(host, port)
        self.app = create_proxy_app(upstream, retry_policy=retry_policy, limits=limits, mode=mode)

    def make_server(self) -> uvicorn.Server:
        return _ProxyServer(self.app, embedded=True)


def run_proxy(
    upstream: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8809,
    mode: Mode = "stream",
    retry_policy: RetryPolicy | None = None,
    limits: Limits | None = None,
) -> None:
    """Serve the proxy in the foreground until Ctrl-C; ``OSError`` if the port cannot be bound, ``ValueError`` for a
    bad upstream URL."""
    app = create_proxy_app(upstream, retry_policy=retry_policy, limits=limits, mode=mode)
    sock = bind(host, port)
    print(f"llm-stream proxy: base_url {url_of(host, sock.getsockname()[1])}/v1 -> {upstream}. Ctrl-C stops it.")
    serve(_ProxyServer(app, embedded=False), sock)
