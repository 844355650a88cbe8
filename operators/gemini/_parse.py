"""``parse_gemini_sse``: Gemini's ``streamGenerateContent?alt=sse`` (Gemini API and Vertex AI), bytes split anywhere,
to ``parse_sse``'s signals.

Rule (docs/decisions/0071-gemini-format.md, docs/formats/gemini.md):

- The SSE framing is ``SseFraming``'s (CRLF CRLF as Google sends it, CR, LF). Each ``data:`` payload is one
  ``GenerateContentResponse``: a JSON object with no ``type``. ``data: [DONE]`` (a gateway's) is a terminator
  (decision 0043): the stream ends there, as at the end of the bytes.
- Candidate ``index`` 0 (absent: 0) is the message; another candidate is an ``extra-choice`` anomaly, once each.
- Parts: ``text`` -> content; ``text`` with ``"thought": true`` -> reasoning; empty text adds nothing.
  ``inlineData``, ``fileData``, ``executableCode``, ``codeExecutionResult`` are an ``unsupported-part`` anomaly, once
  per kind.
- ``functionCall`` -> a tool call at wire index ``n``, its position among the response's calls, emitted whole (id,
  name and arguments in one ``WireToolCall``) when it ends. A non-empty string ``id`` is kept exactly; else the id is
  ``gemini-made-<n>`` (a ``made-id`` anomaly): the same at every read split, unique in the response. A call whose
  ``name`` is absent, ``null``, ``""`` or not a string (and that continues no open call) ends the stream, usage first,
  with ``MALFORMED_TOOL_CALL``. ``args`` (an object) is one compact JSON fragment, keys in wire order (``{}`` when
  absent). Vertex's ``partialArgs`` (``jsonPath`` and ``stringValue`` / ``numberValue`` / ``intValue`` /
  ``doubleValue`` / ``boolValue`` / ``nullValue``; a string with ``willContinue`` continues in the next piece for
  the same path) build the arguments object. A call stays open while its ``willContinue`` is true or a string
  continues; a nameless ``functionCall`` part (or one with the open call's id) continues it; it ends at a part with
  ``willContinue`` false or absent, at the next part of another kind or call, or at the finish. A call still open
  when the body is cut is not emitted (``unfinished-call``). A ``functionCall`` again with the id of a call that
  ended (LangChain's sealing ``args``) is a ``repeated-call`` anomaly and replaces nothing.
- ``thoughtSignature`` stays with its part: on a thought part, ``ReasoningEnd(signature)`` ends that reasoning block;
  on a ``functionCall`` part, ``ToolCallSignature(n, signature)`` (``ToolCallBlock.signature``); on a text part (or
  an otherwise empty part), a reasoning block of its own with empty text and the signature, closed in place after
  the part's text (``ReasoningEnd()``, then ``ReasoningEnd(signature)``).
- ``finishReason`` of candidate 0: ``STOP`` -> ``stop`` (``tool_calls`` when the response made a call),
  ``MAX_TOKENS`` -> ``length``; the safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_*``, ``LANGUAGE``) -> ``Halt(CONTENT_FILTER)``;
  ``MALFORMED_FUNCTION_CALL`` -> ``Halt(MALFORMED_TOOL_CALL)`` (retryable); any other value -> ``Halt(UNKNOWN)``;
  each naming the value and ``finishMessage``. ``promptFeedback.block_reason`` (but ``BLOCK_REASON_UNSPECIFIED`` and
  ``""``) -> ``Halt(CONTENT_FILTER)``. The finish is emitted at the end of the body, after the usage of every event.
- The end of the body (or ``[DONE]``) before any ``finishReason`` or block -> ``Halt(STREAM_CLOSED)``, whatever came.
- ``usageMetadata`` is cumulative: each count's last valid value (an invalid one is an ``invalid-usage`` anomaly),
  never a sum. In the chat shape: ``prompt_tokens`` = ``promptTokenCount``, ``cached_tokens`` =
  ``cachedContentTokenCount`` (so input = prompt - cached), ``completion_tokens`` = ``candidatesTokenCount`` +
  ``thoughtsTokenCount``, ``reasoning_tokens`` = ``thoughtsTokenCount``, ``total_tokens`` = ``totalTokenCount``;
  ``toolUsePromptTokenCount`` is not read. Usage precedes every finish, failures included.
- ``{"error": {...}}`` -> usage, then ``Halt`` classified (``classify_inband_error``). A payload that is not a JSON
  object of this shape is ``MALFORMED_RESPONSE``; a chat chunk, a Messages or a Responses event is
  ``MALFORMED_RESPONSE`` naming the format seen (decision 0045).

The marble diagram is on the factory: ``help(operators.parse_gemini_sse)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

import msgspec

from .._limits import DEFAULT_LIMITS, Limits
from .._signals import Signal
from .._stage import Batch, Operator, stage_operator
from .._wire_parser import WireParser, never
from ._events import UNSET, decode_response
from ._fast import gemini_read
from ._stage import _ParseGemini

__all__ = ["GEMINI_PARSER", "parse_gemini_sse", "payload_is_gemini"]

_GEMINI_KEYS = (b'"candidates"', b'"promptFeedback"', b'"usageMetadata"')


def payload_is_gemini(payload: bytes) -> bool:
    """A first payload is Gemini's: a JSON object with ``candidates``, ``promptFeedback`` or ``usageMetadata`` and no
    ``choices``, ``object`` or ``type`` (decision 0071; detection's predicate, read on the raw bytes once)."""
    if not any(key in payload for key in _GEMINI_KEYS):
        return False
    try:
        body = decode_response(payload)
    except msgspec.DecodeError:  # not of Gemini's shape: not Gemini's
        return False
    if body.choices is not UNSET or body.type is not UNSET or b'"object"' in payload:
        return False
    return body.candidates is not None or body.prompt_feedback is not None or body.usage_metadata is not None


def parse_gemini_sse(limits: Limits | None = None, *, comments: bool = False) -> Operator[bytes, Batch[Signal]]:
    """Gemini bytes to wire values: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt | Anomaly |
    ReasoningEnd | ToolCallSignature]]``, the signals ``parse_sse`` emits. ``limits.max_event_bytes`` bounds one
    line and one event.

    Marble (``t`` an event with a text part, ``f`` one with ``finishReason: STOP`` and usage; ``c`` WireChunk)::

        bytes:  --t-----t-----f--|
        out:    --[c]---[c]---[]-[c(finish, usage), Done]|

    Marble (``g`` a ``functionCall`` with no id; ``a`` an anomaly)::

        bytes:  --g-------------------------f--|
        out:    --[a(made-id), c(call gemini-made-0)]--[]-[c(tool_calls, usage), Done]|

    Marble (a body cut before any ``finishReason``; an in-band error ``e``)::

        bytes:  --t--t--|
        out:    --[c]-[c]-[c(usage), Halt(STREAM_CLOSED)]|
        bytes:  --t--e--|
        out:    --[c]-[c(usage), Halt(classified)]|

    The format: docs/formats/gemini.md; decision notes: docs/decisions/0071-gemini-format.md,
    docs/decisions/0043-done-terminates-and-usage-first.md, docs/decisions/0045-items-and-streams-not-retried.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseGemini(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))


GEMINI_PARSER = WireParser(
    "gemini",
    _ParseGemini,
    owns_type=never,  # Gemini's payloads have no type and its events no name
    owns_error=never,  # its in-band error has no type either: read by the parser, not by detection
    owns_payload=payload_is_gemini,
    hot_read=gemini_read,  # its fast path (docs/decisions/0050-fast-path.md, "Gemini")
)
"""The Gemini format in the registry (``operators/_parse_format.py``): its name, detection, parser and fast path."""
