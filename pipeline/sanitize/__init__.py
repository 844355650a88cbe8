"""Sanitizing for clients the library does not own: ``SanitizingTransport`` (an httpx transport for the openai SDK,
LangChain, ... through their ``http_client``) and the OpenAI-compatible proxy (``Proxy``, ``create_proxy_app``,
``run_proxy``: ``llm-stream proxy``, configured by ``ProxyConfig``; these three need the ``proxy`` extra: uvicorn
and prometheus-client).

Both repair a streamed response in place (``ChatRepair`` for chat completions: each event forwarded as the upstream
sent it unless a rule must change it; docs/decisions/0032-repair-dont-rewrite.md; ``MessagesRepair`` and
``ResponsesRepair`` for the Messages and Responses APIs, decision 0036) and leave retrying to the client
(docs/decisions/0033-one-retry-layer.md); everything else passes through untouched.

Deprecated: ``Sanitizer`` and ``OpenAIEncoder``, the earlier re-encoding of the operators' chunks as OpenAI SSE (no
longer used by the transport or the proxy), still work but warn (``DeprecationWarning``) when taken from here, and
are out of ``__all__``: use ``SanitizingTransport``, or a ``StreamRepair`` repairer (``ChatRepair``,
``MessagesRepair``, ``ResponsesRepair``) to repair a body's bytes in place.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

from operators.extend import publish as _publish

from . import _encode, _sanitizer
from ._chat_repair import ChatRepair
from ._encode import usage_json
from ._proxy_config import ProxyConfig
from ._repair import StreamRepair
from ._transport import Mode, SanitizingTransport
from .messages import MessagesRepair
from .responses import ResponsesRepair

if TYPE_CHECKING:
    from ._proxy_app import create_proxy_app
    from ._proxy_server import Proxy, run_proxy

__all__ = ["ChatRepair", "MessagesRepair", "Mode", "Proxy", "ProxyConfig", "ResponsesRepair", "SanitizingTransport",
           "StreamRepair", "create_proxy_app", "run_proxy", "usage_json"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")

_DEPRECATED = {"Sanitizer": _sanitizer.Sanitizer, "OpenAIEncoder": _encode.OpenAIEncoder}
_INSTEAD = ("use SanitizingTransport, or a StreamRepair repairer (ChatRepair, MessagesRepair, ResponsesRepair), which "
            "repairs the upstream's own bytes in place instead of re-encoding chunks (docs/decisions/0032-repair-dont-"
            "rewrite.md)")
_publish({**globals(), **_DEPRECATED}, _DEPRECATED)  # still named by this face while they last

_SERVING = {"Proxy": "._proxy_server", "create_proxy_app": "._proxy_app", "run_proxy": "._proxy_server"}
_SERVER_PACKAGES = ("starlette", "uvicorn", "prometheus_client")


def __getattr__(name: str) -> object:
    """The proxy's names import uvicorn and prometheus-client on first use, not before; the deprecated names warn on
    every use."""
    if name in _DEPRECATED:
        warnings.warn(f"pipeline.sanitize.{name} is deprecated and will be removed: {_INSTEAD}", DeprecationWarning,
                      stacklevel=2)
        return _DEPRECATED[name]
    if name not in _SERVING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(_SERVING[name], __name__)
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in _SERVER_PACKAGES:
            raise
        raise ImportError(
            f"pipeline.sanitize.{name} serves HTTP with uvicorn and prometheus-client, which are not installed "
            f"({exc}). Install the proxy extra: pip install 'llm-stream-pipeline[proxy]'",
            name=exc.name,
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    _publish(globals(), [name])
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
