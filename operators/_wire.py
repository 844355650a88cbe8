"""The wire vocabulary: typed values of an OpenAI-compatible ``chat.completion.chunk``.

Decoded once, at the edge (``parse_sse``), with ``msgspec`` into structs that admit ``null`` wherever gateways send it.
The decoder is strict about shape (a ``choices`` that is not a list, a non-numeric token count, a non-string
``arguments``... is ``MALFORMED_RESPONSE``) except for a tool call's ``id`` and ``function.name``: those may hold any
JSON value, because ``coalesce_identity`` decides what counts as identity (only a non-empty string).
Unknown fields are ignored: gateways add many (``logprobs``, ``x_groq`` timings, ``obfuscation``, ``citations``...).
See docs/decisions/0007-typed-wire-decoding.md.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "UNSET",
    "WireChoice",
    "WireChunk",
    "WireDelta",
    "WireFunction",
    "WireKindedToolCall",
    "WireToolCall",
    "WireUsage",
    "decode_chunk",
    "wire_chunk",
]

UNSET: Any = msgspec.UNSET
"""Marks a field that was absent from the payload (as opposed to ``null``)."""

Number = int | float


class WireFunction(msgspec.Struct):
    name: Any = UNSET
    arguments: str | msgspec.UnsetType | None = UNSET


class WireToolCall(msgspec.Struct):
    index: int | None = None
    id: Any = UNSET
    function: WireFunction | None = None


class WireKindedToolCall(WireToolCall):
    """A tool call of another kind than a function (``ToolCallKind``: a Responses ``custom_tool_call``,
    ``apply_patch_call``...; docs/decisions/0072-client-run-tool-calls.md). Never decoded from a chat payload: only a
    parser of another wire format builds it, so no chat gateway can name a kind. ``coalesce_identity`` takes the kind
    from a call's first fragment."""

    kind: str = "function"


class WireDelta(msgspec.Struct):
    content: str | list[Any] | None = None
    reasoning_content: str | msgspec.UnsetType | None = UNSET
    reasoning: str | msgspec.UnsetType | None = UNSET
    reasoning_details: list[Any] | None = None
    refusal: str | None = None
    tool_calls: list[WireToolCall] | None = None


class WireChoice(msgspec.Struct):
    index: int | None = 0  # null is read as choice 0
    delta: WireDelta | None = None
    finish_reason: str | None = None


class WirePromptDetails(msgspec.Struct):
    cached_tokens: Number | None = None
    cache_write_tokens: Number | None = None


class WireCompletionDetails(msgspec.Struct):
    reasoning_tokens: Number | None = None


class WireUsage(msgspec.Struct):
    prompt_tokens: Number | None = None
    completion_tokens: Number | None = None
    total_tokens: Number | None = None
    prompt_cache_hit_tokens: Number | None = None
    prompt_tokens_details: WirePromptDetails | None = None
    completion_tokens_details: WireCompletionDetails | None = None


class WireXGroq(msgspec.Struct):
    usage: WireUsage | None = None


class WireChunk(msgspec.Struct):
    choices: list[WireChoice] | None = None
    usage: WireUsage | None = None
    x_groq: WireXGroq | None = None
    error: Any = UNSET


def wire_chunk(delta: WireDelta | None = None, finish_reason: str | None = None) -> WireChunk:
    """A chunk of choice 0 with ``delta`` and ``finish_reason``: what a parser of another wire format builds, so the
    rules read it as they read chat completions."""
    return WireChunk(choices=[WireChoice(index=0, delta=delta, finish_reason=finish_reason)])


_decoder = msgspec.json.Decoder(WireChunk)


def decode_chunk(payload: bytes) -> WireChunk:
    """Decodes one ``data:`` payload. Raises ``msgspec.DecodeError`` (``ValidationError`` is a subclass), also for a
    payload nested deeper than the decoder allows (msgspec raises ``RecursionError`` inside a field it keeps as
    ``Any``, such as ``error`` or a tool call's ``id``: that is a malformed payload, not a failure of the library)."""
    try:
        return _decoder.decode(payload)
    except RecursionError:
        raise msgspec.DecodeError("malformed: JSON nested deeper than the decoder allows") from None


DecodeError = msgspec.DecodeError
