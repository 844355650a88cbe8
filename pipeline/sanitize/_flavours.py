"""httpx and httpx2, whichever is installed: the base classes a transport and a byte stream need to be accepted by
both ``httpx.Client`` and ``httpx2.Client`` (openai >= 3 and anthropic >= 2 build on httpx2, LangChain and older SDKs
on httpx), and ``flavour(request)``: the module whose ``Response``, errors and default transports answer a request.

httpx2 is an API-compatible fork of httpx with its own classes; a client checks ``isinstance`` against its own
``SyncByteStream``/``AsyncByteStream``, so our response bodies derive from both modules' bases. A transport's class is
checked by no client, but by SDKs: the anthropic SDK refuses one with an httpx class in its MRO, so at run time our
transport derives from httpx2's bases when httpx2 is installed (httpx's otherwise), and a type checker sees both.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import httpx

try:
    import httpx2 as _httpx2
    from httpx2 import AsyncBaseTransport as _AsyncTransport2
    from httpx2 import AsyncByteStream as _AsyncStream2
    from httpx2 import BaseTransport as _Transport2
    from httpx2 import SyncByteStream as _SyncStream2
except ImportError:  # httpx2 is optional: only httpx's clients are served then
    _httpx2 = None  # type: ignore[assignment]

    class _Transport2:  # type: ignore[no-redef]
        pass

    class _AsyncTransport2:  # type: ignore[no-redef]
        pass

    class _SyncStream2:  # type: ignore[no-redef]
        pass

    class _AsyncStream2:  # type: ignore[no-redef]
        pass


__all__ = ["HTTP_ERRORS", "TIMEOUTS", "TRANSPORT_ERRORS", "AsyncStream", "SyncStream", "Transports", "flavour"]

_SAME = _httpx2 is None or id(_httpx2.SyncByteStream) == id(httpx.SyncByteStream)  # httpx2.alias_httpx() makes them one


if TYPE_CHECKING:  # to a type checker, a transport of both modules: either client's ``transport=`` takes it
    class Transports(httpx.BaseTransport, httpx.AsyncBaseTransport, _Transport2, _AsyncTransport2):  # type: ignore[misc]
        """The transport bases of both modules (one class serves sync and async clients of either)."""
elif _httpx2 is not None:
    class Transports(_Transport2, _AsyncTransport2):
        """httpx2's transport bases alone at run time: the anthropic SDK's ``DefaultHttpxClient`` refuses a transport
        with any httpx class in its MRO, and google-genai picks its backend from the first one it finds there.
        httpx's clients never check a transport's class, so they take it too (``SyncStream``, which they do check,
        keeps both modules' bases)."""
else:
    class Transports(httpx.BaseTransport, httpx.AsyncBaseTransport):
        """httpx's transport bases (httpx2 is not installed)."""


if _SAME:
    class SyncStream(httpx.SyncByteStream):
        """A response body both modules' clients accept."""

    class AsyncStream(httpx.AsyncByteStream):
        """An async response body both modules' clients accept."""
else:
    class SyncStream(httpx.SyncByteStream, _SyncStream2):  # type: ignore[no-redef]
        """A response body both modules' clients accept."""

    class AsyncStream(httpx.AsyncByteStream, _AsyncStream2):  # type: ignore[no-redef]
        """An async response body both modules' clients accept."""


_MODULES: tuple[ModuleType, ...] = (httpx,) if _httpx2 is None else (httpx, _httpx2)
HTTP_ERRORS: tuple[type[Exception], ...] = tuple(m.HTTPError for m in _MODULES)
TRANSPORT_ERRORS: tuple[type[Exception], ...] = tuple(m.TransportError for m in _MODULES)
TIMEOUTS: tuple[type[Exception], ...] = tuple(m.TimeoutException for m in _MODULES)


def flavour(request: Any) -> Any:
    """The module (httpx or httpx2) of ``request``'s class: its ``Response``, errors and transports answer it."""
    if _httpx2 is not None and isinstance(request, _httpx2.Request):
        return _httpx2
    return httpx
