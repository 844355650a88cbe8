"""The proxy as an ASGI app (``create_proxy_app``): its routes, its keys and its records.

- ``/v1/<path>`` (any method) is forwarded to ``<upstream>/<path>`` (``_forward.py``); so are ``/v1beta/<path>`` and
  ``/v1beta1/<path>``, Google's SDK's version segments (``_headers.API_PREFIXES``);
- ``GET /health`` and ``/healthz``: liveness, ``{"status": "ok"}``, never touching the upstream;
- ``GET /ready``: 200 while the proxy accepts work, 503 when it is draining (SIGTERM) or at its cap of requests in
  flight;
- ``GET /metrics``: the Prometheus text format (``_metrics.py``);
- anything else: 404 with an OpenAI-shaped error.

Every request ends with one access-log line (``llm_stream.proxy.access``); the metrics count the forwarded ones
(``/v1/...``), not the probes and scrapes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

import httpx
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from operators import Code

from .._logging import VALUES_REDACTED, get_logger, register_secret
from ..sanitize import SanitizingTransport
from ._asgi import Receive, Refused, Scope, Send, error_response
from ._config import ProxyConfig
from ._forward import Forwarder
from ._headers import Keys, api_relative
from ._log import Report, access_line
from ._metrics import Metrics, Tracing
from ._upstream import Upstream

__all__ = ["ACCESS_LOG", "ProxyApp", "create_proxy_app"]

ACCESS_LOG = "proxy.access"
"""The access log's logger, ``llm_stream.proxy.access`` (``run_proxy`` sends it to stderr)."""


def _keys(config: ProxyConfig, environ: Mapping[str, str]) -> Keys:
    def read(variable: str | None, flag: str) -> list[str]:
        if variable is None:
            return []
        keys = [key.strip() for key in environ.get(variable, "").split(",") if key.strip()]
        if not keys:
            raise ValueError(f"{flag} names {variable}, which holds no key")
        for key in keys:
            register_secret(key)
        return keys

    upstream = read(config.upstream_key_env, "--upstream-key-env")
    if len(upstream) > 1:
        raise ValueError(f"--upstream-key-env names {config.upstream_key_env}, which holds more than one key")
    return Keys(client=tuple(read(config.client_key_env, "--client-key-env")), upstream=next(iter(upstream), None))


class ProxyApp:
    """The ASGI app; ``config``, ``metrics`` and ``draining`` (set by the server on SIGTERM) are public."""

    def __init__(
        self,
        config: ProxyConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.metrics = Metrics()
        self.draining = False
        base = httpx.URL(config.upstream.rstrip("/"))
        inner = transport or Upstream()
        self.transport = SanitizingTransport(inner, retry=config.policy(), limits=config.limits,
                                             mode=config.mode)
        self._forward = Forwarder(
            config, _keys(config, os.environ if environ is None else environ), base, self.transport,
            Tracing(base.host, base.port), on_in_flight=self.metrics.in_flight.set,
        )
        self._log = get_logger(ACCESS_LOG)

    @property
    def in_flight(self) -> int:
        return self._forward.in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if api_relative(scope.get("raw_path") or path.encode()) is not None:  # as sent: "/v1%2F..." is no /v1/ path
            await self._proxied(scope, receive, send)
            return
        report = Report(scope["method"], path)
        if path in ("/health", "/healthz"):
            report.status, body = 200, b'{"status":"ok"}'
        elif path == "/ready":
            ready = not self.draining and self.in_flight < self.config.max_streams
            state = "ready" if ready else "draining" if self.draining else "full"
            report.status, body = (200 if ready else 503), b'{"status":"%s"}' % state.encode()
        elif path == "/metrics":
            report.status, body = 200, generate_latest(self.metrics.registry)
        else:
            report.status = 404
            report.bytes_out = await error_response(send, 404, Code.INVALID_REQUEST, "the proxy serves /v1/<path> (and "
                                                    "/v1beta/, /v1beta1/), "
                                                    "/health, /ready and /metrics")
            self._access(report)
            return
        kind = CONTENT_TYPE_LATEST if path == "/metrics" else "application/json"
        await send({"type": "http.response.start", "status": report.status,
                    "headers": [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        report.bytes_out = len(body)
        self._access(report)  # logged, not counted: the metrics count the requests the proxy forwards

    def _access(self, report: Report) -> None:
        if self.config.log_format != "off" and self._log.isEnabledFor(logging.INFO):
            self._log.info("%s", access_line(report, self.config.log_format), extra={VALUES_REDACTED: True})

    async def _proxied(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw: bytes = scope.get("raw_path") or scope["path"].encode()
        report = Report(scope["method"], raw.decode("latin-1"))
        try:
            await self._forward(scope, receive, send, report)
        except Refused as refused:
            self.metrics.refused.labels(refused.reason).inc()
            report.status = refused.status
            report.finish = report.finish or refused.code
            report.bytes_out += await error_response(send, refused.status, refused.code, str(refused),
                                                     refused.headers, path=scope["path"])
        except Exception as exc:  # the last resort: no exception escapes the app (no 500 with a traceback)
            await self._failed(exc, report, send)
        except asyncio.CancelledError:  # cancelled by the server itself, past the proxy's own cut at shutdown
            report.cut = report.cut or "shutdown"
            raise
        finally:
            report.settle()
            if report.status == 0 and report.cut == "client":
                report.status = 499  # the client closed the request before an answer (as nginx logs it)
            self.metrics.record(report)
            self._access(report)

    async def _failed(self, exc: Exception, report: Report, send: Send) -> None:
        """An unexpected error: one line in the proxy's log (no traceback); a 502 in the API's shape if the response
        had not begun, else the response is cut (``cut=error``: the client sees it end without its end)."""
        get_logger("proxy").error("%s %s failed in the proxy: %s: %s", report.method, report.path,
                                  type(exc).__name__, str(exc)[:200])
        if report.responded:
            report.cut = "error"
            return
        report.status, report.finish = 502, Code.UNKNOWN
        report.bytes_out += await error_response(send, 502, Code.UNKNOWN, "the proxy could not relay the upstream's "
                                                 f"answer: {type(exc).__name__}", path=report.path)

    def cut_all(self) -> int:
        """Cuts every response in flight, each with its format's in-band error when it is a repaired stream
        (``cut=shutdown``): what the server does when the SIGTERM grace period ends."""
        return self._forward.cut_all()

    async def aclose(self) -> None:
        await self.transport.aclose()


def create_proxy_app(
    upstream: str | ProxyConfig, *, transport: httpx.AsyncBaseTransport | None = None, **options: Any
) -> ProxyApp:
    """The proxy as an ASGI app forwarding ``/v1/*`` to the upstream: ``create_proxy_app(config)``, or
    ``create_proxy_app("https://host/v1", max_streams=10, ...)`` with ``ProxyConfig``'s fields as keywords.
    ``ValueError`` for a bad setting, or a key variable that holds no key."""
    config = upstream if isinstance(upstream, ProxyConfig) else ProxyConfig(upstream=upstream, **options)
    return ProxyApp(config, transport=transport)
