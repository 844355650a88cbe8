"""The body of an upstream response, relayed to the proxy's client as it arrives.

One small module on its own: how a body is relayed (and what a cut upstream body does to the client's response) is
decided here and nowhere else. ``relay`` yields the bytes as they arrive (still encoded if the upstream compressed a
pass-through response). A body the upstream cut (a reset, chunked without its last chunk, a short Content-Length)
stays cut: ``relay`` raises ``UpstreamCut`` and the proxy aborts the client's response (the connection closes without
the body's end) on every path; a repaired stream has its in-band error event first
(docs/decisions/0033-one-retry-layer.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from operators import LlmStreamError

__all__ = ["UpstreamCut", "relay"]


class UpstreamCut(LlmStreamError):
    """The upstream body ended early: raised inside the response so the proxy aborts it (no terminating chunk)."""


async def relay(response: httpx.Response, *, decoded: bool = False) -> AsyncIterator[bytes]:
    """The response's bytes as they arrive (``decoded``: with its content-encoding undone); ``UpstreamCut`` when the
    upstream cut the body."""
    try:
        async for piece in (response.aiter_bytes() if decoded else response.aiter_raw()):
            yield piece
    except httpx.HTTPError as exc:
        raise UpstreamCut(f"the upstream body ended early: {type(exc).__name__}: {exc}") from None
    finally:
        await response.aclose()
