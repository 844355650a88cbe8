"""What ``reasoning-tool``'s tool loop must send back with its tool result, and the emulator's check that it did, as
the Responses API checks (the parts every format's check shares: ``../_sent_back.py``).

``reasoning-tool`` (Responses) answers first with a ``reasoning`` item (``REASONING_ID``, ``ENCRYPTED_CONTENT`` on
``output_item.done`` and ``response.completed``; ``output_item.added`` carries an earlier ``ENCRYPTED_ADDED``, as the
real API does) and a ``function_call``; the follow-up's ``input`` must hold, before its last ``function_call`` item::

    {"type": "reasoning", "id": REASONING_ID, "encrypted_content": ENCRYPTED_CONTENT, "summary": [...]}
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from .._sent_back import opaque, refused

__all__ = [
    "ENCRYPTED_ADDED",
    "ENCRYPTED_CONTENT",
    "REASONING_ID",
    "SUMMARY",
    "SUMMARY_PIECES",
    "check_reasoning_sent_back",
]


SUMMARY_PIECES = ("**Checking the weather**", "\n\nI'll call get_weather", " for Paris.")
SUMMARY = "".join(SUMMARY_PIECES)
REASONING_ID = "rs_emu" + hashlib.sha256(b"reasoning").hexdigest()[:44]
ENCRYPTED_CONTENT = "gAAAAAB" + base64.urlsafe_b64encode(opaque("encrypted_content", 600)).decode()
"""The reasoning item's ``encrypted_content`` on ``output_item.done`` and ``response.completed``: send this back."""
ENCRYPTED_ADDED = "gAAAAAB" + base64.urlsafe_b64encode(opaque("encrypted_content/added", 450)).decode()
"""The earlier ``encrypted_content`` of ``output_item.added`` (the real API's differs too): not the one to send."""


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
        raise refused(
            f"{where}: the function_call item was sent without its required reasoning item {REASONING_ID!r} "
            "before it (send the reasoning item back with its id, encrypted_content and summary)",
            "input",
        )
    n = found[-1]
    item = items[n]
    if item.get("encrypted_content") != ENCRYPTED_CONTENT:
        wrong = "missing" if "encrypted_content" not in item else "different"
        raise refused(
            f"input.{n}: the encrypted_content of reasoning item {REASONING_ID!r} must be sent back unmodified "
            f"(it is {wrong})",
            "input",
        )
    if not isinstance(item.get("summary"), list):
        raise refused(f"input.{n}: the reasoning item {REASONING_ID!r} needs its summary list", "input")
