"""What ``thinking-tool``'s tool loop must send back with its tool result, and the emulator's check that it did, as
the Messages API checks (the parts every format's check shares: ``../_sent_back.py``).

``thinking-tool`` (Messages) answers first with a ``thinking`` block (``THINKING``, signed ``SIGNATURE``), a
``redacted_thinking`` block (``REDACTED_DATA``) and a ``tool_use``; the follow-up request must carry, as the last
assistant message's first three content blocks::

    {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}
    {"type": "redacted_thinking", "data": REDACTED_DATA}
    {"type": "tool_use", ...}
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from .._sent_back import difference, opaque, refused

__all__ = ["REDACTED_DATA", "SIGNATURE", "THINKING", "THINKING_PIECES", "check_thinking_sent_back"]


THINKING_PIECES = ("The user wants the weather in Paris.", " I should call get_weather", ' with {"city": "Paris"}.')
THINKING = "".join(THINKING_PIECES)
SIGNATURE = base64.b64encode(b"\x12\x84\x03" + opaque("signature", 297)).decode()
"""The ``signature_delta`` of the thinking block: 400 base64 characters."""
REDACTED_DATA = base64.b64encode(b"\x12\xa9\x04" + opaque("redacted_thinking", 237)).decode()
"""The ``data`` of the redacted_thinking block: 320 base64 characters."""


_THINKING_BLOCK = {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}
_REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED_DATA}


def check_thinking_sent_back(body: Mapping[str, Any]) -> None:
    """``thinking-tool``'s follow-up: the last assistant message starts with the thinking blocks as sent, then the
    tool_use (``RequestError`` 400 naming the first content block that is not)."""
    messages = body.get("messages")
    items: list[Any] = messages if isinstance(messages, list) else []
    turns = [n for n, m in enumerate(items) if isinstance(m, dict) and m.get("role") == "assistant"]
    if not turns:
        return
    last = turns[-1]
    content = items[last].get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    where = f"messages.{last}.content"

    def at(n: int) -> object:
        return blocks[n] if n < len(blocks) else None

    wrong = difference(at(0), _THINKING_BLOCK)
    if wrong:
        message = f"{where}.0: the thinking block with its signature must be sent back unmodified"
        raise refused(f"{message} ({wrong})", where)
    wrong = difference(at(1), _REDACTED_BLOCK)
    if wrong:
        message = f"{where}.1: the redacted_thinking block must be sent back unmodified after the thinking block"
        raise refused(f"{message} ({wrong})", where)
    tool = at(2)
    if not (isinstance(tool, dict) and tool.get("type") == "tool_use"):
        raise refused(f"{where}.2: the tool_use block must follow the thinking blocks", where)
