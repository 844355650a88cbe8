"""The OpenAI Responses API stream's vocabulary, decoded once at the edge (``parse_responses_sse``).

Each ``data:`` payload is one event, ``{"type": "response.<...>", ...}``. The structs below keep only the fields the
parser reads; unknown fields are ignored (``obfuscation``, ``logprobs``, ``sequence_number``, ``phase``, OpenRouter's
``cost``, Azure's ``content_filters``...). Identity fields (``call_id``, ``name``) are kept as any JSON value: whether
one counts is ``coalesce_identity``'s rule. A built-in call's action or operation is kept as its exact JSON text
(``msgspec.Raw``; decision 0072). Usage counts are numbers (a string count is ``MALFORMED_RESPONSE``),
mapped to OpenAI's chat shape (``WireUsage``) so the existing normalisation gives the disjoint counts.
See docs/formats/responses.md and docs/decisions/0025-responses-format.md.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._usage_keys import ResponsesUsage
from .._wire import UNSET

__all__ = [
    "IGNORED_EVENTS",
    "READ_EVENTS",
    "SERVER_TOOL_EVENT_PREFIXES",
    "SERVER_TOOL_ITEMS",
    "OutputItem",
    "ResponseObject",
    "ResponsesEvent",
    "decode_event",
    "decode_kind",
    "error_object",
    "failed_error",
]


class IncompleteDetails(msgspec.Struct):
    reason: str | None = None


class ResponseObject(msgspec.Struct):
    status: str | None = None
    usage: ResponsesUsage | None = None
    error: Any = None
    incomplete_details: IncompleteDetails | None = None


_NO_TEXT = msgspec.Raw()  # an absent field kept as JSON text


class OutputItem(msgspec.Struct):
    type: str | None = None
    id: Any = None
    call_id: Any = UNSET
    name: Any = UNSET
    arguments: Any = UNSET
    input: Any = UNSET  # a custom_tool_call's free-form input
    encrypted_content: Any = None
    execution: Any = None  # "client" on a tool_search_call the client runs (decision 0045)
    environment: Any = None  # a shell_call's: a container's is run by the provider (decision 0072)
    # the JSON texts a built-in call's arguments are made of (``_calls.py``, decision 0072)
    action: msgspec.Raw = _NO_TEXT
    actions: msgspec.Raw = _NO_TEXT
    operation: msgspec.Raw = _NO_TEXT
    pending_safety_checks: msgspec.Raw = _NO_TEXT
    server_label: msgspec.Raw = _NO_TEXT


class ResponsesEvent(msgspec.Struct):
    type: str | None = None
    output_index: int | None = None
    item_id: Any = None
    delta: str | None = None
    arguments: str | None = None
    input: str | None = None  # of response.custom_tool_call_input.done
    item: OutputItem | None = None
    response: ResponseObject | None = None
    error: Any = UNSET  # the nested shape of the error event
    code: Any = None  # the flat shape of the error event
    message: Any = None
    param: Any = None


class _Head(msgspec.Struct):
    type: Any = None
    choices: Any = UNSET  # a chat-completions chunk's (decision 0045)


_head = msgspec.json.Decoder(_Head)
_decoder = msgspec.json.Decoder(ResponsesEvent)


def decode_kind(payload: bytes) -> tuple[str | None, bool]:
    """The payload's ``type`` (None when absent or not a string), and whether it has ``choices`` (a chat-completions
    chunk). Raises ``msgspec.DecodeError`` for a payload that is not a JSON object (also for JSON nested deeper than
    the decoder allows). Only the events the parser reads are then decoded whole (``decode_event``): an unknown event
    is an anomaly whatever its shape."""
    try:
        head = _head.decode(payload)
    except RecursionError:
        raise msgspec.DecodeError("malformed: JSON nested deeper than the decoder allows") from None
    kind = head.type
    return (kind if isinstance(kind, str) else None), head.choices is not UNSET


def decode_event(payload: bytes) -> ResponsesEvent:
    """One payload the parser reads, typed. Raises ``msgspec.DecodeError`` for the wrong shape."""
    try:
        return _decoder.decode(payload)
    except RecursionError:
        raise msgspec.DecodeError("malformed: JSON nested deeper than the decoder allows") from None


def error_object(event: ResponsesEvent) -> Any:
    """The provider's error object of an ``error`` event, nested (``{"error": {...}}``) or flat (``code``,
    ``message`` and ``param`` beside ``type``), for ``classify_inband_error`` (which reads OpenAI's ``code``)."""
    nested = event.error
    if nested is not UNSET and nested is not None:
        return nested
    flat = {"code": event.code, "message": event.message, "param": event.param}
    return {key: value for key, value in flat.items() if value is not None}


def failed_error(response: ResponseObject | None) -> Any:
    """``response.error`` of ``response.failed``, ready for ``classify_inband_error``."""
    error = response.error if response is not None else None
    if error is None:
        return {"message": "response.failed with no error object"}
    return error


SERVER_TOOL_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_call",
        "tool_search_output",
        "program",
        "shell_call_output",
    }
)
"""Output items the provider runs itself: an anomaly ``server-tool`` naming the item type, never a tool call (a
``shell_call_output`` is only in the output when the provider ran the shell, in its container; decision 0072)."""

IGNORED_EVENTS = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)
"""Lifecycle events that carry nothing the chunk protocol needs (their text was streamed as deltas)."""

SERVER_TOOL_EVENT_PREFIXES = (
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_call",
    "response.mcp_list_tools.",
    "response.shell_call_command.",
    "response.shell_call_output_content.",
)
"""Progress events of items already reported when they were added (``server-tool`` / ``unsupported-item``), or of a
``shell_call`` whose action comes whole on its ``output_item.done`` (decision 0072)."""

READ_EVENTS = frozenset(
    {
        "response.output_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)
"""The events the parser decodes whole; any other is decoded only for its ``type``."""
