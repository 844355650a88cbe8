"""What ``thinking-tool``'s tool loop must send back with its tool result, and the emulator's check that it did, as
Gemini 3 checks (the parts every format's check shares: ``../_sent_back.py``).

``thinking-tool`` (Gemini) answers first with a thought part (``THOUGHT_PIECES``) and a ``functionCall`` part
get_weather (no ``id``, as the Gemini API sends it) that carries ``thoughtSignature`` = ``SIGNATURE``. The follow-up's
``contents`` must hold a ``model`` turn with that ``functionCall`` part and its signature unmodified, and after it a
turn with a ``functionResponse`` part named after the call::

    {"role": "model", "parts": [..., {"functionCall": {"name": "get_weather", "args": {...}},
                                      "thoughtSignature": SIGNATURE}]}
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {...}}}]}

Otherwise the answer is a 400 ``INVALID_ARGUMENT`` in Google's error shape, as Gemini 3 answers a call sent back
without its signature.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from .._sent_back import opaque, refused

__all__ = ["SIGNATURE", "THOUGHT_PIECES", "TOOL", "check_signature_sent_back"]

TOOL = "get_weather"
THOUGHT_PIECES = ("**Checking the weather**\n\nThe user wants the weather in Paris.", " I'll call get_weather.")
SIGNATURE = base64.b64encode(b"\x12\xa5\x02" + opaque("gemini/thoughtSignature", 297)).decode()
"""The ``thoughtSignature`` of the ``functionCall`` part: 400 base64 characters. Send it back on that part."""

_DOCS = "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."


def _parts(content: object) -> list[Any]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def _call_name(part: object) -> object:
    call = part.get("functionCall") if isinstance(part, dict) else None
    return call.get("name") if isinstance(call, dict) else None


def check_signature_sent_back(body: Mapping[str, Any]) -> None:
    """``thinking-tool``'s follow-up: the last ``model`` turn's ``functionCall`` part carries ``SIGNATURE``, and a
    later turn answers it with a ``functionResponse`` of the same name (``RequestError`` 400 otherwise)."""
    given = body.get("contents")
    contents: list[Any] = given if isinstance(given, list) else []
    turns = [n for n, c in enumerate(contents) if isinstance(c, dict) and c.get("role") == "model"]
    if not turns:
        return
    last = turns[-1]
    calls = [(j, p) for j, p in enumerate(_parts(contents[last])) if _call_name(p) is not None]
    if not calls:
        raise refused(f"contents[{last}]: the model turn must send back the functionCall part {TOOL!r}", "contents")
    j, part = calls[0]
    if part.get("thoughtSignature") != SIGNATURE:
        wrong = "is missing" if "thoughtSignature" not in part else "differs"
        raise refused(
            f"Function call is missing a thought_signature in functionCall parts (its thought_signature {wrong}). "
            "This is required for tools to work correctly, and missing thought_signature may lead to degraded "
            f"model performance. Additional data, function call `default_api:{_call_name(part)}` , position "
            f"contents[{last}].parts[{j}]. {_DOCS}",
            "contents",
        )
    names = [
        p["functionResponse"].get("name")
        for c in contents[last + 1 :]
        for p in _parts(c)
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]
    if _call_name(part) not in names:
        raise refused(
            f"contents[{last + 1}]: Please ensure that function response turn comes immediately after a function "
            f"call turn, with a functionResponse part named {_call_name(part)!r} for the functionCall "
            f"(found the names {names!r}).",
            "contents",
        )
