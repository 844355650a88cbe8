"""Gemini's ``GenerateContentResponse``, the one object each ``data:`` event carries, as typed msgspec structs.

Only what the parser reads is typed; unknown fields (``safetyRatings``, ``groundingMetadata``, ``modelVersion``,
``responseId``, ``createTime``...) are ignored. Identity and counts are ``Any``: the parser decides what counts (a
call's ``name`` / ``id`` only as a non-empty string, a count only when valid), so a gateway's ``null`` or a wrong type
there is not a malformed payload. A field of another shape elsewhere (``parts`` not a list, ``text`` not a string) is
``MALFORMED_RESPONSE``.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "FILTERED",
    "FINISHES",
    "NO_BLOCK",
    "UNSUPPORTED_PARTS",
    "USAGE_FIELDS",
    "Candidate",
    "Content",
    "FunctionCall",
    "Part",
    "PartialArg",
    "PromptFeedback",
    "Response",
    "decode_response",
]

UNSET: Any = msgspec.UNSET

FINISHES = {"STOP": "stop", "MAX_TOKENS": "length"}
"""The finish reasons that end a response normally (``STOP`` becomes ``tool_calls`` when the response made a call)."""

FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "LANGUAGE",
    }
)
"""The finish reasons that are ``CONTENT_FILTER`` (decision 0071's table)."""

NO_BLOCK = frozenset({"", "BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED"})
"""``promptFeedback.blockReason`` values that block nothing (the enum's default, in both spellings seen)."""

UNSUPPORTED_PARTS = {
    "inline_data": "inlineData",
    "file_data": "fileData",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
    "function_response": "functionResponse",
}
"""Part kinds (field -> wire key) the library does not read: an ``unsupported-part`` anomaly each, once per kind."""

USAGE_FIELDS = (
    "promptTokenCount",
    "cachedContentTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "totalTokenCount",
)
"""The ``usageMetadata`` counts read (``toolUsePromptTokenCount`` is not: decision 0071)."""


class PartialArg(msgspec.Struct, rename="camel"):
    """One piece of a Vertex streamed argument: a value at ``jsonPath``."""

    json_path: Any = None
    string_value: Any = UNSET
    number_value: Any = UNSET
    int_value: Any = UNSET
    double_value: Any = UNSET
    bool_value: Any = UNSET
    null_value: Any = UNSET
    will_continue: Any = None


class FunctionCall(msgspec.Struct, rename="camel"):
    id: Any = None
    name: Any = None
    args: Any = UNSET
    partial_args: list[PartialArg] | None = None
    will_continue: Any = None


class Part(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: Any = None
    thought_signature: Any = None
    function_call: FunctionCall | None = None
    inline_data: Any = UNSET
    file_data: Any = UNSET
    executable_code: Any = UNSET
    code_execution_result: Any = UNSET
    function_response: Any = UNSET


class Content(msgspec.Struct, rename="camel"):
    parts: list[Part] | None = None
    role: Any = None


class Candidate(msgspec.Struct, rename="camel"):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: Any = None
    index: int | None = None


class PromptFeedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None
    block_reason_message: Any = None


class Response(msgspec.Struct, rename="camel"):
    """One event's ``GenerateContentResponse`` (or an in-band ``{"error": ...}``)."""

    candidates: list[Candidate] | None = None
    prompt_feedback: PromptFeedback | None = None
    usage_metadata: dict[str, Any] | None = None
    error: Any = UNSET
    choices: Any = UNSET  # a chat chunk's: never Gemini's (decision 0045)
    type: Any = UNSET  # a Messages or Responses event's: never Gemini's


_decoder = msgspec.json.Decoder(Response)


def decode_response(payload: bytes) -> Response:
    """One payload; ``msgspec.DecodeError`` when it is not a JSON object of this shape (or nests too deep)."""
    try:
        return _decoder.decode(payload)
    except RecursionError:
        raise msgspec.DecodeError("JSON nested deeper than the decoder allows") from None


def part_kind(part: Part) -> str | None:
    """The name of an unsupported part's key, or None."""
    return next((wire for field, wire in UNSUPPORTED_PARTS.items() if getattr(part, field) is not UNSET), None)
