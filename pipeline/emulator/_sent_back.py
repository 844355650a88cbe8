"""What a tool loop must send back with its tool result, and the emulator's check that it did, as the providers check.

``thinking-tool`` (Messages) answers first with a ``thinking`` block (``THINKING``, signed ``SIGNATURE``), a
``redacted_thinking`` block (``REDACTED_DATA``) and a ``tool_use``; the follow-up request must carry, as the last
assistant message's first three content blocks::

    {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}
    {"type": "redacted_thinking", "data": REDACTED_DATA}
    {"type": "tool_use", ...}

``reasoning-tool`` (Responses) answers first with a ``reasoning`` item (``REASONING_ID``, ``ENCRYPTED_CONTENT`` on
``output_item.done`` and ``response.completed``; ``output_item.added`` carries an earlier ``ENCRYPTED_ADDED``, as the
real API does) and a ``function_call``; the follow-up's ``input`` must hold, before its last ``function_call`` item::

    {"type": "reasoning", "id": REASONING_ID, "encrypted_content": ENCRYPTED_CONTENT, "summary": [...]}

Every value is fixed (the same on every request), so tests can compare. Extra keys (``cache_control``, ``status``)
are ignored. A request that fails a check is a ``RequestError`` 400 whose message names the missing piece (see
docs/emulator-formats.md for the exact messages).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from ._errors import RequestError

__all__ = [
    "ENCRYPTED_ADDED",
    "ENCRYPTED_CONTENT",
    "REASONING_ID",
    "REDACTED_DATA",
    "SIGNATURE",
    "SUMMARY",
    "SUMMARY_PIECES",
    "THINKING",
    "THINKING_PIECES",
    "check_reasoning_sent_back",
    "check_thinking_sent_back",
]


def _opaque(seed: str, size: int) -> bytes:
    """``size`` bytes that look random and are the same on every run."""
    out = b""
    while len(out) < size:
        out += hashlib.sha256(f"{seed}/{len(out)}".encode()).digest()
    return out[:size]


THINKING_PIECES = ("The user wants the weather in Paris.", " I should call get_weather", ' with {"city": "Paris"}.')
THINKING = "".join(THINKING_PIECES)
SIGNATURE = base64.b64encode(b"\x12\x84\x03" + _opaque("signature", 297)).decode()
"""The ``signature_delta`` of the thinking block: 400 base64 characters."""
REDACTED_DATA = base64.b64encode(b"\x12\xa9\x04" + _opaque("redacted_thinking", 237)).decode()
"""The ``data`` of the redacted_thinking block: 320 base64 characters."""

SUMMARY_PIECES = ("**Checking the weather**", "\n\nI'll call get_weather", " for Paris.")
SUMMARY = "".join(SUMMARY_PIECES)
REASONING_ID = "rs_emu" + hashlib.sha256(b"reasoning").hexdigest()[:44]
ENCRYPTED_CONTENT = "gAAAAAB" + base64.urlsafe_b64encode(_opaque("encrypted_content", 600)).decode()
"""The reasoning item's ``encrypted_content`` on ``output_item.done`` and ``response.completed``: send this back."""
ENCRYPTED_ADDED = "gAAAAAB" + base64.urlsafe_b64encode(_opaque("encrypted_content/added", 450)).decode()
"""The earlier ``encrypted_content`` of ``output_item.added`` (the real API's differs too): not the one to send."""

_THINKING_BLOCK = {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}
_REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED_DATA}


def _refused(message: str, param: str) -> RequestError:
    return RequestError(400, message, None, param)


def _difference(block: object, expected: Mapping[str, str]) -> str | None:
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

    wrong = _difference(at(0), _THINKING_BLOCK)
    if wrong:
        message = f"{where}.0: the thinking block with its signature must be sent back unmodified"
        raise _refused(f"{message} ({wrong})", where)
    wrong = _difference(at(1), _REDACTED_BLOCK)
    if wrong:
        message = f"{where}.1: the redacted_thinking block must be sent back unmodified after the thinking block"
        raise _refused(f"{message} ({wrong})", where)
    tool = at(2)
    if not (isinstance(tool, dict) and tool.get("type") == "tool_use"):
        raise _refused(f"{where}.2: the tool_use block must follow the thinking blocks", where)


def check_reasoning_sent_back(body: Mapping[str, Any]) -> None:
    """``reasoning-tool``'s follow-up: the reasoning item as sent stands before the last ``function_call`` item
    (``RequestError`` 400 naming what is missing)."""
    given = body.get("input")
    items: list[Any] = given if isinstance(given, list) else []
    calls = [n for n, item in enumerate(items) if isinstance(item, dict) and item.get("type") == "function_call"]
    end = calls[-1] if calls else len(items)
    found = [
        n
        for n, item in enumerate(items[:end])
        if isinstance(item, dict) and item.get("type") == "reasoning" and item.get("id") == REASONING_ID
    ]
    if not found:
        where = f"input.{end}" if calls else "input"
        raise _refused(
            f"{where}: the function_call item was sent without its required reasoning item {REASONING_ID!r} "
            "before it (send the reasoning item back with its id, encrypted_content and summary)",
            "input",
        )
    n = found[-1]
    item = items[n]
    if item.get("encrypted_content") != ENCRYPTED_CONTENT:
        wrong = "missing" if "encrypted_content" not in item else "different"
        raise _refused(
            f"input.{n}: the encrypted_content of reasoning item {REASONING_ID!r} must be sent back unmodified "
            f"(it is {wrong})",
            "input",
        )
    if not isinstance(item.get("summary"), list):
        raise _refused(f"input.{n}: the reasoning item {REASONING_ID!r} needs its summary list", "input")
