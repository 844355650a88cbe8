"""The body of an upstream response, relayed to the proxy's client as it arrives.

One small module on its own: how a body is relayed (and what a cut upstream body does to the client's response) is
decided here and nowhere else. ``relay`` yields the bytes as they arrive (still encoded if the upstream compressed a
pass-through response); an exception it raises cuts the client's response (``_proxy_forward.py``: the connection is
closed without the body's end, so the client knows it did not get it all).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

__all__ = ["relay"]


async def relay(response: httpx.Response) -> AsyncIterator[bytes]:
    """The response's bytes as they arrive."""
    try:
        async for piece in response.aiter_raw():
            yield piece
    except httpx.HTTPError:
        return  # the upstream dropped a pass-through body: the client sees the body end, as it would directly
    finally:
        await response.aclose()
