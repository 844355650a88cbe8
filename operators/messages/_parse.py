"""``parse_messages_sse``: the Anthropic-style Messages API stream, bytes split anywhere, to ``parse_sse``'s signals.

Rule (docs/decisions/0024-messages-format.md, docs/formats/messages.md):

- The SSE framing is ``SseFraming``'s. Each payload's own ``type`` says what the event is (an ``event:`` name that
  disagrees is an ``event-mismatch`` anomaly); data-only streams read the same.
- ``content_block_start`` opens block ``index``: a ``text`` / ``thinking`` block's initial text is emitted; a
  ``tool_use`` block gives a ``WireToolCall`` at wire index ``index`` with ``id`` and ``name`` exactly as given
  (``coalesce_identity`` accepts only a non-empty string). Deltas are matched by ``index``, so interleaved blocks
  are fine: ``text_delta`` -> content, ``thinking_delta`` -> ``reasoning_content``, ``input_json_delta`` -> the
  call's argument fragment. A tool's ``input`` given whole (non-empty, no ``input_json_delta`` after it) is emitted
  once, as compact JSON, at the block's stop (or at the end for a block never stopped). ``message_start.content``
  blocks (continuation responses) are read as started and stopped.
- A ``thinking`` block's ``signature`` (its start's, replaced by each ``signature_delta``, as Anthropic's SDK does)
  and a ``redacted_thinking`` block's ``data`` go, at the block's stop, in a ``ReasoningEnd``: the reasoning block
  keeps them (docs/decisions/0028-reasoning-round-trip.md). ``citations_delta`` is not carried (a ``citation``
  anomaly with its length, never its content). What Anthropic runs (``server_tool_use``, the MCP connector's
  ``mcp_tool_use`` and ``mcp_tool_listing``, every ``*_tool_result``) is a ``server-tool`` anomaly, never a tool call;
  every ``tool_use`` is one, whoever its ``caller`` (docs/decisions/0072-client-run-tool-calls.md, "The Messages
  side"). Other blocks (``compaction``, ``fallback``) and unknown deltas/events are anomalies.
- ``message_delta`` gives the stop reason (``_events.FINISH_REASONS``) and usage, merged field by field
  with ``message_start``'s. At ``message_stop``: one ``WireChunk`` with the finish reason and the merged usage, then
  ``Done``. A block still open there (``max_tokens`` cutting a tool block) is an ``unterminated-block`` anomaly.
- ``error`` (an event named so, or a payload of type ``error``) gives the usage known so far, then ``Halt`` with the
  error classified (``overloaded_error`` -> ``SERVER``, ``rate_limit_error`` -> ``RATE_LIMIT``). A payload that is
  not a JSON object with a string ``type``, or has fields of the wrong type, is ``MALFORMED_RESPONSE``.
- The end of the bytes: complete ``data:`` lines of an event with no final blank line are still read
  (``unterminated-event``). Then, without ``message_stop``: after a stop reason, a ``missing-message-stop`` anomaly,
  the finish and usage, ``Done(synthetic=True)``; before one, ``Halt(STREAM_CLOSED)``.
- ``data: [DONE]`` (gateways fronting Anthropic-style endpoints add it) is a terminator, never a malformed payload
  (decision 0043): where ``message_stop`` is missing it ends the stream as the end of the bytes does, with ``Done()``
  after a stop reason, ``Halt(STREAM_CLOSED)`` before one; anything after it is not read (``payload-after-done``).
- Usage precedes every finish, failures included (decision 0043): every ``Halt`` (an in-band error, a malformed
  payload, ``LIMIT_EXCEEDED``, a cut) comes after a chunk with the usage merged so far, when any is known.
- A second ``message_start`` with the first's ``id`` is a proxy's duplicate (``duplicate-message-start``, ignored);
  with another ``id`` a new message started inside the open one (decision 0044): a ``message-restarted`` anomaly,
  the first message's usage, then ``Halt(STREAM_CLOSED)`` (retryable: the first message was cut).
- A payload of another wire format (a chat-completions chunk: an object with ``choices`` and no ``type``; a
  Responses event: ``type`` ``response.*``) is ``MALFORMED_RESPONSE`` naming the format seen (decision 0045).

The marble diagram is on the factory: ``help(operators.parse_messages_sse)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

from .._limits import DEFAULT_LIMITS, Limits
from .._signals import Signal
from .._stage import Batch, Operator, stage_operator
from .._wire_parser import WireParser
from ._fast import messages_read
from ._stage import _ParseMessages

__all__ = ["MESSAGES_PARSER", "parse_messages_sse"]

_TYPES = frozenset(
    {
        b"message_start",
        b"message_delta",
        b"message_stop",
        b"content_block_start",
        b"content_block_delta",
        b"content_block_stop",
        b"ping",
    }
)


def parse_messages_sse(limits: Limits | None = None, *, comments: bool = False) -> Operator[bytes, Batch[Signal]]:
    """Messages API bytes to wire values: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt |
    Anomaly]]``, the signals ``parse_sse`` emits. ``limits.max_event_bytes`` bounds one line and one event.

    Marble (``s`` message_start, ``t`` a text delta, ``m`` message_delta, ``x`` message_stop; ``c`` WireChunk)::

        bytes:  --s--t-----m--x--|
        out:    --[]-[c]---[]-[c(finish, usage), Done]|

    Marble (``d`` ``data: [DONE]`` where ``message_stop`` is missing; ``a`` an anomaly)::

        bytes:  --s--t-----m--d--|
        out:    --[]-[c]---[]-[a(missing-message-stop), c(finish, usage), Done]|
        bytes:  --s--t--d--|                                   (no stop reason yet)
        out:    --[]-[c]-[c(usage), Halt(STREAM_CLOSED)]|

    Marble (a malformed payload ``?``, then a second message ``s2`` inside the open ``s1``)::

        bytes:  --s--t--?--|
        out:    --[]-[c]-[c(usage), Halt(MALFORMED_RESPONSE)]|
        bytes:  --s1--t--s2--|
        out:    --[]--[c]-[a(message-restarted), c(usage), Halt(STREAM_CLOSED)]|

    The format: docs/formats/messages.md; decision notes: docs/decisions/0024-messages-format.md,
    docs/decisions/0043-done-terminates-and-usage-first.md, docs/decisions/0044-second-message-start.md,
    docs/decisions/0045-items-and-streams-not-retried.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseMessages(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))


MESSAGES_PARSER = WireParser(
    "messages",
    _ParseMessages,
    owns_type=_TYPES.__contains__,  # its event names: message_start, content_block_delta, ...
    owns_error=lambda error: isinstance(error, dict),  # Messages nests the error object; the Responses one is flat
    hot_read=messages_read,
)
"""The Messages format in the registry (``operators/_parse_format.py``): its name, detection, parser and fast path."""
