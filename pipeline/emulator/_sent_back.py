"""What a tool loop must send back with its tool result, and the emulator's check that it did, as the providers check:
the parts every format's check shares. Each format's own values and check are in its package
(``messages/_sent_back.py``: ``thinking-tool``; ``responses/_sent_back.py``: ``reasoning-tool``), and its
``ApiFormat`` record (``_formats.py``) names the profile whose follow-up is checked.

Every value is fixed (the same on every request), so tests can compare. Extra keys (``cache_control``, ``status``)
are ignored. A request that fails a check is a ``RequestError`` 400 whose message names the missing piece (see
docs/emulator-formats.md for the exact messages).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from ._errors import RequestError

__all__ = ["difference", "opaque", "refused"]


def opaque(seed: str, size: int) -> bytes:
    """``size`` bytes that look random and are the same on every run."""
    out = b""
    while len(out) < size:
        out += hashlib.sha256(f"{seed}/{len(out)}".encode()).digest()
    return out[:size]


def refused(message: str, param: str) -> RequestError:
    return RequestError(400, message, None, param)


def difference(block: object, expected: Mapping[str, str]) -> str | None:
    """Why ``block`` is not ``expected`` (its keys compared, others ignored), or ``None`` when it is."""
    if block is None:
        return "found no block there"
    if not isinstance(block, dict):
        return f"found a {type(block).__name__} instead of a block"
    if block.get("type") != expected["type"]:
        return f"found a {block.get('type')!r} block"
    for key, value in expected.items():
        if key not in block:
            return f"its {key} is missing"
        if block[key] != value:
            return f"its {key} differs"
    return None
