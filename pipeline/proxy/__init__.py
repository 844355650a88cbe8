"""The sanitizing proxy: an OpenAI-compatible HTTP server (``llm-stream proxy``) that forwards ``/v1/<path>`` to an
upstream and repairs its streamed responses in place with ``pipeline.sanitize``'s transport (docs/proxy.md).

    config = ProxyConfig(upstream="https://api.example.com/v1", max_streams=64)
    app = create_proxy_app(config)          # an ASGI app, to mount in an application's own server
    with Proxy(config) as proxy:            # or served by uvicorn from a background thread
        httpx.post(proxy.base_url + "/chat/completions", ...)
    run_proxy(config)                       # or in the foreground, as the command does

``ProxyConfig`` is a plain value and imports without the ``proxy`` extra; ``Proxy``, ``ProxyApp``,
``create_proxy_app`` and ``run_proxy`` serve HTTP with uvicorn, httptools and prometheus-client and import them on
first use: ``pip install 'llm-stream-pipeline[proxy]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from operators.extend import publish as _publish

from .._lazy import load_serving_name as _load_serving_name
from ._config import ProxyConfig

if TYPE_CHECKING:
    from ._app import ProxyApp, create_proxy_app
    from ._server import Proxy, run_proxy

__all__ = ["Proxy", "ProxyApp", "ProxyConfig", "create_proxy_app", "run_proxy"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")

_SERVING = {"Proxy": "._server", "ProxyApp": "._app", "create_proxy_app": "._app", "run_proxy": "._server"}
_SERVER_PACKAGES = frozenset({"starlette", "uvicorn", "httptools", "h11", "prometheus_client"})


def __getattr__(name: str) -> object:
    """The serving names import uvicorn and prometheus-client on first use, not before."""
    return _load_serving_name(globals(), name, _SERVING, _SERVER_PACKAGES, "serves HTTP with uvicorn, httptools and "
                              "prometheus-client", "Install the proxy extra: pip install 'llm-stream-pipeline[proxy]'")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
