"""The wire vocabulary: typed values of an OpenAI-compatible ``chat.completion.chunk``, as ``parse_sse`` decodes them.

Read these when writing a custom operator that inspects the raw chunks (slot it right after ``parse_sse``), or to
decode a payload yourself with ``decode_chunk``. ``UNSET`` marks a field that was absent (as opposed to ``null``).
A parser of another format builds a ``WireKindedToolCall`` for a tool call that is not a function
(docs/decisions/0072-client-run-tool-calls.md).
"""

from ._faces import publish as _publish
from ._numbers import MAX_SAFE_INTEGER, is_json_number
from ._wire import (
    UNSET,
    DecodeError,
    WireChoice,
    WireChunk,
    WireDelta,
    WireFunction,
    WireKindedToolCall,
    WireToolCall,
    WireUsage,
    decode_chunk,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "UNSET",
    "DecodeError",
    "WireChoice",
    "WireChunk",
    "WireDelta",
    "WireFunction",
    "WireKindedToolCall",
    "WireToolCall",
    "WireUsage",
    "decode_chunk",
    "is_json_number",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
