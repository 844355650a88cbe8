"""Sanitizing for clients the library does not own: ``SanitizingTransport``, an httpx transport for the openai SDK,
LangChain, ... through their ``http_client``, and the one the proxy (``pipeline.proxy``, ``llm-stream proxy``) forwards
through.

It repairs a streamed response in place (``ChatRepair`` for chat completions: each event forwarded as the upstream
sent it unless a rule must change it; docs/decisions/0032-repair-dont-rewrite.md; ``MessagesRepair`` and
``ResponsesRepair`` for the Messages and Responses APIs, decision 0036; ``GeminiRepair`` for Google's Gemini
stream, decision 0071) and leave retrying to the client
(docs/decisions/0033-one-retry-layer.md); everything else passes through untouched.

Deprecated: ``Sanitizer`` and ``OpenAIEncoder``, the earlier re-encoding of the operators' chunks as OpenAI SSE (no
longer used by the transport or the proxy), still work but warn (``DeprecationWarning``) when taken from here, and
are out of ``__all__``: use ``SanitizingTransport``, or a ``StreamRepair`` repairer (``ChatRepair``,
``MessagesRepair``, ``ResponsesRepair``) to repair a body's bytes in place. ``ProxyConfig``, ``Proxy``,
``create_proxy_app`` and ``run_proxy`` moved to ``pipeline.proxy``; taken from here they still work for one minor
version and warn (``DeprecationWarning``) naming the new path.

``OBSERVER_EXTENSION`` is the request extension under which a caller (the proxy) hands the transport a callable
that receives each attempt's ``StreamRepair``.
"""

from __future__ import annotations

import types
import warnings

from operators.extend import publish as _publish

from . import _encode, _sanitizer
from ._chat_repair import ChatRepair
from ._encode import usage_json
from ._formats import error_body
from ._repair import StreamRepair
from ._transport import OBSERVER_EXTENSION, Mode, SanitizingTransport
from .gemini import GeminiRepair
from .messages import MessagesRepair
from .responses import ResponsesRepair

__all__ = ["OBSERVER_EXTENSION", "ChatRepair", "GeminiRepair", "MessagesRepair", "Mode", "ResponsesRepair",
           "SanitizingTransport", "StreamRepair", "error_body", "usage_json"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")

_DEPRECATED = {"Sanitizer": _sanitizer.Sanitizer, "OpenAIEncoder": _encode.OpenAIEncoder}
_INSTEAD = ("use SanitizingTransport, or a StreamRepair repairer (ChatRepair, MessagesRepair, ResponsesRepair), which "
            "repairs the upstream's own bytes in place instead of re-encoding chunks (docs/decisions/0032-repair-dont-"
            "rewrite.md)")
_publish({**globals(), **_DEPRECATED}, _DEPRECATED)  # still named by this face while they last

_MOVED = ("ProxyConfig", "Proxy", "create_proxy_app", "run_proxy")  # to pipeline.proxy; removed in the next minor
_moved_to: types.ModuleType | None = None
"""``pipeline.proxy``, handed here by ``pipeline/__init__.py`` (the face above both, which always runs first): this
face never imports the proxy, so no import runs from the transport up to the proxy, not even a lazy one."""


def __getattr__(name: str) -> object:
    """The deprecated names warn on every use. The moved proxy names are read from ``pipeline.proxy``, which the
    package's face hands this one (``_moved_to``), so the transport never imports the proxy that imports it."""
    if name in _DEPRECATED:
        warnings.warn(f"pipeline.sanitize.{name} is deprecated and will be removed: {_INSTEAD}", DeprecationWarning,
                      stacklevel=2)
        return _DEPRECATED[name]
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"pipeline.sanitize.{name} is deprecated and will be removed in the next minor version: use "
                  f"pipeline.proxy.{name}", DeprecationWarning, stacklevel=2)
    if _moved_to is None:  # pragma: no cover - pipeline/__init__.py always runs before this face
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: use pipeline.proxy.{name}")
    value: object = getattr(_moved_to, name)  # the proxy extra's hint comes from there
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
