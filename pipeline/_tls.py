"""The TLS contexts of the connections the library opens itself, built once per process.

Building an ``ssl.SSLContext`` that verifies means loading a CA bundle: tens of milliseconds, which httpx and httpx2
pay in every ``HTTPTransport()`` they make. ``SanitizingTransport`` builds its inner transport on its first request,
so a transport per client or per request paid that on its first request every time. Here:

- ``verifying_context(hx)`` is what ``hx.create_ssl_context()`` gives (httpx: certifi's bundle; httpx2: the system's
  store; ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as each reads them), built on the first ``https://`` request and then
  shared by every transport that was given no ``verify`` of its own;
- ``plain_context()`` serves the transports for ``http://`` requests: no CA bundle loaded, never used for a TLS
  handshake (one attempted through it would fail for want of trust anchors, so it fails closed).

A transport given its own ``verify`` (an ``ssl.SSLContext``, ``False``) builds its own context, as before.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

__all__ = ["plain_context", "verifying_context"]

_lock = threading.Lock()
_verifying: dict[str, ssl.SSLContext] = {}
_plain: list[ssl.SSLContext] = []


def verifying_context(hx: Any) -> ssl.SSLContext:
    """``hx.create_ssl_context()`` (``hx``: the httpx or httpx2 module), built once per process and module."""
    with _lock:
        context = _verifying.get(hx.__name__)
        if context is None:
            context = _verifying[hx.__name__] = hx.create_ssl_context()
        return context


def plain_context() -> ssl.SSLContext:
    """The context of the transports for ``http://`` requests: one per process, with no CA bundle loaded."""
    with _lock:
        if not _plain:
            _plain.append(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))  # verifies, but trusts nothing: fails closed
        return _plain[0]
