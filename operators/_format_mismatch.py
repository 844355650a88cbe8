"""A payload of another wire format than the one read: what each parser says when it sees one (decision 0045).

The evidence is the payload's own shape, never a guess: a Responses event (``type`` ``response.*``), a Messages
event (``type`` one of ``message_start``, ``message_delta``, ``message_stop``, ``content_block_start`` /
``_delta`` / ``_stop``), a chat-completions chunk (an object with ``choices`` and no ``type``), a Gemini
``GenerateContentResponse`` (an object with ``candidates``, ``promptFeedback`` or ``usageMetadata``, and neither
``type`` nor ``choices``: decision 0071). ``ping`` and
``error`` are not evidence: several formats (and keep-alive proxies) send them. A stream of another format is not
retried: the same request would get the same bytes. The failure is ``MALFORMED_RESPONSE`` and its message names the
format seen and the ``format=`` that reads it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._chunk_values import Failure
from ._codes import Code
from ._sse_framing import quote

__all__ = ["MESSAGES_EVENTS", "foreign_format", "format_mismatch", "gemini_shaped", "payload_kind"]

MESSAGES_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
"""The Messages event types no other format uses."""

_NAMES = {  # format -> (one payload of it, a stream of it, what reading it as that format is called)
    "chat": ("a chat-completions chunk", "a chat-completions stream", "chat completions"),
    "messages": ("a Messages event", "a Messages (Anthropic-style) stream", "Messages"),
    "responses": ("a Responses event", "a Responses stream", "Responses"),
    "gemini": ("a Gemini GenerateContentResponse", "a Gemini stream", "Gemini"),
}


class _Kind(msgspec.Struct):
    type: Any = None


_kind = msgspec.json.Decoder(_Kind)


class _Gemini(msgspec.Struct, rename="camel"):
    candidates: Any = msgspec.UNSET
    prompt_feedback: Any = msgspec.UNSET
    usage_metadata: Any = msgspec.UNSET


_gemini = msgspec.json.Decoder(_Gemini)


def gemini_shaped(payload: bytes) -> bool:
    """Whether a JSON object payload has one of a Gemini ``GenerateContentResponse``'s own keys (``candidates``,
    ``promptFeedback``, ``usageMetadata``); the caller knows it has no ``type`` and no ``choices``."""
    if b'"candidates"' not in payload and b'"promptFeedback"' not in payload and b'"usageMetadata"' not in payload:
        return False
    try:
        body = _gemini.decode(payload)
    except (msgspec.DecodeError, RecursionError):
        return False
    return any(value is not msgspec.UNSET for value in (body.candidates, body.prompt_feedback, body.usage_metadata))


def payload_kind(payload: bytes) -> object:
    """A JSON object payload's ``type`` (None when absent or unreadable)."""
    try:
        return _kind.decode(payload).type
    except (msgspec.DecodeError, RecursionError):
        return None


def foreign_format(kind: object, has_choices: bool, *, gemini: bool = False) -> str | None:
    """The format a payload's ``type`` (``kind``; None when absent), its ``choices`` and (``gemini``) Gemini's own keys
    (``gemini_shaped``) say it belongs to, or None when they say nothing for certain."""
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "responses"
        return "messages" if kind in MESSAGES_EVENTS else None
    if kind is None and has_choices:
        return "chat"
    return "gemini" if kind is None and gemini else None


def format_mismatch(seen: str, read_as: str, payload: bytes) -> Failure:
    """The failure of a stream read as ``read_as`` that carried a payload of the ``seen`` format."""
    what, stream, _ = _NAMES[seen]
    message = f"{stream} read as {_NAMES[read_as][2]}: the payload is {what} (read it with format={seen!r}): "
    return Failure(Code.MALFORMED_RESPONSE, message + quote(payload, 80))
