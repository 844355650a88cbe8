"""``parse_responses_sse``: the OpenAI Responses API stream, bytes split anywhere, to the signals of ``parse_sse``.

Rule (docs/decisions/0025-responses-format.md; the events: docs/formats/responses.md):

- The SSE framing is ``SseFraming``'s. The event's kind is the payload's ``type`` (OpenRouter sends no ``event:``
  lines; Bedrock Mantle sends ``data:`` before ``event:``). ``data: [DONE]`` (OpenRouter, xAI) is a terminator,
  never a payload (decision 0043): after the terminal event it is not read; before it, the stream ends there, as at
  the end of the bytes (``STREAM_CLOSED``).
- ``response.output_text.delta`` -> ``delta.content``; ``response.refusal.delta`` -> ``delta.refusal`` (error
  ``REFUSAL``); ``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` ->
  ``delta.reasoning_content``. A reasoning item's ``output_item.done`` ends its reasoning block with a
  ``ReasoningEnd`` carrying its ``id`` and ``encrypted_content`` (docs/decisions/0028-reasoning-round-trip.md).
- A call item the client runs (``function_call``, ``custom_tool_call``, ``apply_patch_call``, ``shell_call``,
  ``local_shell_call``, ``computer_call``, ``mcp_approval_request``) is a tool call at wire index ``output_index``,
  of its ``ToolCallKind`` (``function``, ``custom``, ``apply_patch``...; decision 0072: its name and arguments per
  kind in ``_calls.py``). Its identity (``call_id``, an approval request's ``id``; ``name``) is passed as the wire
  gives it on ``output_item.added``; one still missing there is passed from ``output_item.done`` (a late
  ``call_id`` is accepted). A different non-empty value on ``.done`` keeps the first (``conflicting-identity``).
  ``function_call_arguments.delta`` and ``custom_tool_call_input.delta`` are matched by ``output_index`` (GitHub
  Copilot gives every event a new ``item_id``; ``item_id`` is only a fallback); a delta of another kind than the
  call there is ``MALFORMED_RESPONSE``. Arguments given whole (``arguments.done``, ``input.done`` or
  ``output_item.done`` with no delta before, as LM Studio sends) are emitted once, at the first of them; a built-in
  call's action or operation once, from its ``output_item.done``.
- Server-side tool items (``web_search_call``, ``code_interpreter_call``, ``mcp_call``, a ``shell_call`` in the
  provider's container and its ``shell_call_output``...) are a ``server-tool`` anomaly; other items (any item with
  ``execution: "client"`` that is no call item, such as a ``tool_search_call`` the client runs: decision 0045, an
  unknown item type) ``unsupported-item``; unknown events ``unknown-event``. None of them is an error, except that a
  response completing with an unsupported item (the model waits for the client to act on it) ends, after its
  usage, with the error ``UNSUPPORTED_OUTPUT`` naming the items, not retried (decision 0025), and one completing
  with a built-in call whose item never finished (its action unknown) with ``MALFORMED_TOOL_CALL`` (decision 0072).
- ``response.completed`` -> finish ``stop`` (``tool_calls`` when a call item was seen);
  ``response.incomplete`` -> ``length`` for ``max_output_tokens``, ``content_filter``, else the reason itself;
  each with the terminal response's usage, then ``Done``. ``response.failed`` -> its usage, then ``Halt`` with
  ``response.error`` classified; an ``error`` event (nested or flat) -> ``Halt`` classified. Bytes ending before the
  terminal event -> ``Halt(STREAM_CLOSED)`` (the Responses stream has no stop reason before its terminal event).
- A payload that is not a JSON object, or an event the parser reads with the wrong shape (a non-string ``delta``...)
  -> ``Halt(MALFORMED_RESPONSE)`` quoting it; any other event is decoded only for its ``type``. A payload of
  another format (a chat-completions chunk, a Messages event) is ``MALFORMED_RESPONSE`` naming the format seen
  (decision 0045), never a retried ``STREAM_CLOSED``.

The marble diagram is on the factory: ``help(operators.parse_responses_sse)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

from .._limits import DEFAULT_LIMITS, Limits
from .._signals import Signal
from .._stage import Batch, Operator, stage_operator
from .._wire_parser import WireParser
from ._fast import responses_read
from ._stage import _ParseResponses

__all__ = ["RESPONSES_PARSER", "parse_responses_sse"]


def parse_responses_sse(limits: Limits | None = None, *, comments: bool = False) -> Operator[bytes, Batch[Signal]]:
    r"""Bytes of a Responses API stream to wire values: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt |
    Anomaly]]``. ``limits.max_event_bytes`` bounds one line and one event, ``limits.max_ignored_lines``
    the lines that carry nothing (``LIMIT_EXCEEDED``); ``comments=True`` reports each comment line as a
    ``comment`` anomaly.

    Marble (``t`` a text delta event, ``C`` response.completed; ``c`` a WireChunk, ``D`` Done)::

        bytes:  --"data: {t}\n\nda"--"ta: {C}\n\n"--|
        out:    --[c]------------------[c(stop, usage), D]|

    Marble (``d`` ``data: [DONE]`` before the terminal event; ``h`` a chat-completions chunk; ``s`` a client
    ``tool_search_call`` added, ``a`` an anomaly)::

        bytes:  --t--d--t--|
        out:    --[c]-[Halt(STREAM_CLOSED)]|
        bytes:  --h--|
        out:    --[Halt(MALFORMED_RESPONSE "a chat-completions stream read as ...")]|
        bytes:  --s--C--|
        out:    --[a(unsupported-item)]-[c(usage), Halt(UNSUPPORTED_OUTPUT)]|

    Marble (``k`` a ``custom_tool_call`` added, ``i`` its input delta, ``K`` its ``output_item.done``; ``c(custom
    ...)`` a fragment of kind ``custom``, decision 0072)::

        bytes:  --k--i--i--K--C--|
        out:    --[c(custom call_1 write_sql)]-[c("SELECT ")]-[c("1")]-[]-[c(tool_calls, usage), D]|

    The format: docs/formats/responses.md; decision notes: docs/decisions/0025-responses-format.md,
    docs/decisions/0043-done-terminates-and-usage-first.md, docs/decisions/0045-items-and-streams-not-retried.md,
    docs/decisions/0072-client-run-tool-calls.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseResponses(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))


RESPONSES_PARSER = WireParser(
    "responses",
    _ParseResponses,
    owns_type=lambda kind: kind.startswith(b"response."),
    owns_error=lambda error: not isinstance(error, dict),  # the Responses error event is flat
    hot_read=responses_read,
)
"""The Responses format in the registry (``operators/_parse_format.py``): its name, detection, parser and fast
path."""
