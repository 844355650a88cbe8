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
- A ``function_call`` item is a ``WireToolCall`` at wire index ``output_index``. Its identity (``call_id``,
  ``name``) is passed as the wire gives it on ``output_item.added``; one still missing there is passed from
  ``output_item.done`` (a late ``call_id`` is accepted). A different non-empty value on ``.done`` keeps the first
  (``conflicting-identity``). ``function_call_arguments.delta`` is matched by ``output_index`` (GitHub Copilot gives
  every event a new ``item_id``; ``item_id`` is only a fallback). Arguments given whole (``arguments.done`` or
  ``output_item.done`` with no delta before, as LM Studio sends) are emitted once, at the first of them.
- Server-side tool items (``web_search_call``, ``code_interpreter_call``, ``mcp_call``...) are a ``server-tool``
  anomaly, other non-function tool items (``custom_tool_call``, ``local_shell_call``..., and any item with
  ``execution: "client"``, such as a ``tool_search_call`` the client runs: decision 0045) ``unsupported-item``;
  unknown events ``unknown-event``. None of them is an error, except that a response completing with an
  unsupported item (the model waits for the client to act on it) ends, after its usage, with the error
  ``UNSUPPORTED_OUTPUT`` naming the items, not retried (decision 0025).
- ``response.completed`` -> finish ``stop`` (``tool_calls`` when a function_call item was seen);
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

from ._chunks import Anomaly, Failure
from ._codes import Code
from ._format_mismatch import foreign_format, format_mismatch
from ._limits import DEFAULT_LIMITS, Limits
from ._provider_errors import classify_inband_error
from ._responses_events import (
    IGNORED_EVENTS,
    READ_EVENTS,
    SERVER_TOOL_EVENT_PREFIXES,
    SERVER_TOOL_ITEMS,
    Call,
    OutputItem,
    ResponseObject,
    ResponsesEvent,
    decode_event,
    decode_kind,
    error_object,
    failed_error,
    non_empty,
    tool_chunk,
    wire_usage,
)
from ._signals import Done, Halt, ReasoningEnd, Signal
from ._sse_framing import SseFraming, quote
from ._stage import Batch, Operator, stage_operator
from ._wire import UNSET, DecodeError, WireChoice, WireChunk, WireDelta, wire_chunk

__all__ = ["parse_responses_sse", "responses_stage"]

_DONE = b"[DONE]"
_OWN_ITEMS = frozenset({"message", "reasoning", "function_call"})
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_CONTENT_DELTAS = frozenset({"response.output_text.delta", "response.reasoning_summary_text.delta",
                             "response.reasoning_text.delta", "response.refusal.delta",
                             "response.function_call_arguments.delta"})
_ESCAPED = 6  # the most bytes one UTF-8 byte takes in a JSON string (a control character as \u00XX)
_KIND_CHARS = 60  # an item or event type quoted in a message
_KINDS_NAMED = 10  # unsupported item kinds named in the UNSUPPORTED_OUTPUT message (then "and N more kinds")


class _ParseResponses(SseFraming):
    """The Responses stream: each payload one typed event, the terminal ``response.*`` event the end."""

    __slots__ = ("by_item_id", "calls", "reported", "unsupported")
    END_NAME = "the terminal event"

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
        self.calls: dict[int, Call] = {}
        self.by_item_id: dict[str, int] = {}
        self.reported: set[str] = set()
        self.unsupported: dict[str, None] = {}  # the kinds of client-side items the protocol cannot carry, in order

    # -- payloads -------------------------------------------------------------------------------------------------

    def dispatch(self, payload: bytes, out: list[Signal]) -> None:
        if payload == _DONE:  # a terminator (OpenRouter, xAI): before the terminal event, the stream ends here
            self._closed(out, " ([DONE] came first)")
            return
        try:  # one typed decode on the hot path; the general path only when it cannot say (decision 0008)
            event: ResponsesEvent | None = decode_event(payload)
        except DecodeError:
            event = None
        kind = event.type if event is not None else None
        if event is None or kind not in READ_EVENTS:
            try:
                kind, has_choices = decode_kind(payload)
                if kind is None and self.event:
                    kind = self.event.decode("utf-8", "replace")
                seen = foreign_format(kind, has_choices)
                if seen is not None and seen != "responses":
                    self._halt(format_mismatch(seen, "responses", payload), out)
                    return
                if kind in IGNORED_EVENTS or kind not in READ_EVENTS:
                    self._unread(kind, out)
                    return
                event = decode_event(payload)
            except DecodeError as exc:
                reason = str(exc)
                message = f"malformed SSE payload: {quote(payload)}"
                if "JSON" not in reason and "malformed" not in reason.lower():
                    message += f" ({reason})"
                self._halt(Failure(Code.MALFORMED_RESPONSE, message), out)
                return
        if kind in _CONTENT_DELTAS and event.delta:
            self.admit(len(event.delta.encode("utf-8", "surrogatepass")))
        if kind == "response.output_text.delta":
            if event.delta:
                out.append(wire_chunk(WireDelta(content=event.delta)))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if event.delta:
                out.append(wire_chunk(WireDelta(reasoning_content=event.delta)))
        elif kind == "response.refusal.delta":
            if event.delta:
                out.append(wire_chunk(WireDelta(refusal=event.delta)))
        elif kind == "response.function_call_arguments.delta":
            self._arguments_delta(event, out)
        elif kind == "response.function_call_arguments.done":
            index = self._index_of(event, out)
            if index is not None:
                self._whole_arguments(index, event.arguments, out)
        elif kind == "response.output_item.added":
            self._item(event, out, done=False)
        elif kind == "response.output_item.done":
            self._item(event, out, done=True)
        elif kind in ("response.completed", "response.incomplete"):
            self._terminal(kind, event.response, out)
        elif kind == "response.failed":
            self._usage(event.response, out)
            self._halt(classify_inband_error(failed_error(event.response)), out)
        elif kind == "error":
            self._halt(classify_inband_error(error_object(event)), out)

    def admit(self, content_bytes: int) -> None:
        """Content admitted (UTF-8 bytes of deltas): the terminal event repeats the whole output on one line, so a
        line may be longer by what that content takes as JSON (at most 6 bytes a byte, ``\\u0001``). A response the
        text and arguments limits let through is never cut at its terminal event (docs/decisions/0050-fast-path.md)."""
        self.event_limit += _ESCAPED * content_bytes

    def _unread(self, kind: str | None, out: list[Signal]) -> None:
        """An event the parser does not decode: known and empty of anything carried, reported, or unknown."""
        if kind in IGNORED_EVENTS:
            return
        if kind is not None and kind.startswith(SERVER_TOOL_EVENT_PREFIXES):
            return  # the item was reported when it was added
        if kind == "response.output_text.annotation.added":
            self._once("annotation", out, "annotation", "output_text annotations (citations) are not carried")
        else:
            shown = kind[:_KIND_CHARS] if kind is not None else None
            self._once(f"event-{shown}", out, "unknown-event", f"event {shown!r} not understood; ignored")

    # -- function_call items --------------------------------------------------------------------------------------

    def _item(self, event: ResponsesEvent, out: list[Signal], *, done: bool) -> None:
        item = event.item
        if item is None:
            self._halt(Failure(Code.MALFORMED_RESPONSE, f"{event.type} without an item"), out)
            return
        kind = item.type or "?"
        if kind == "function_call":
            self._function_call(event.output_index, item, out, done=done)
        elif kind == "reasoning":
            if done:
                out.append(ReasoningEnd(encrypted=non_empty(item.encrypted_content), item_id=non_empty(item.id)))
        elif kind not in _OWN_ITEMS and not done:
            if item.execution == "client":  # the client's to run (a tool_search_call...), never a server tool (0045)
                kind = f"{kind[:60]} (execution client)"
            shown = kind[:_KIND_CHARS]  # a kind is the server's string: quoted within a bound
            if kind in SERVER_TOOL_ITEMS:
                out.append(Anomaly("server-tool", None, f"server-side tool item {shown!r} (run by the provider)"))
            else:
                out.append(Anomaly("unsupported-item", None, f"output item {shown!r} is not a function call; ignored"))
                self.unsupported[shown] = None

    def _function_call(self, output_index: int | None, item: OutputItem, out: list[Signal], *, done: bool) -> None:
        item_id = non_empty(item.id)
        if output_index is not None:
            index = output_index
        elif item_id is not None and item_id in self.by_item_id:
            index = self.by_item_id[item_id]
        else:
            index = max(self.calls, default=-1) + 1
        call = self.calls.get(index)
        fresh = call is None
        if call is None:
            call = self.calls[index] = Call()
        if item_id is not None:
            self.by_item_id.setdefault(item_id, index)
        new_id = self._identity(call, "id", item.call_id, index, out, done=done)
        new_name = self._identity(call, "name", item.name, index, out, done=done)
        if fresh or new_id is not UNSET or new_name is not UNSET:
            out.append(tool_chunk(index, id=new_id, name=new_name))
        if done:
            self._whole_arguments(index, item.arguments, out)
        elif non_empty(item.arguments) is not None:
            call.arguments = [item.arguments]  # given whole on added: sent once, at the first .done

    def _identity(self, call: Call, field: str, value: object, index: int, out: list[Signal], *,
                  done: bool) -> object:
        """The value to pass on for ``field`` (UNSET: nothing new)."""
        known = call.id if field == "id" else call.name
        given = non_empty(value)
        if known is None:
            if given is not None:
                if field == "id":
                    call.id = given
                else:
                    call.name = given
                return given
            return UNSET if done else value  # an empty value on added is passed on, as the wire gave it
        if given is not None and given != known:
            out.append(Anomaly("conflicting-identity", None,
                               f"function_call at output_index {index}: {field} {given!r} on output_item.done "
                               f"ignored, keeping {known!r}"))
        return UNSET

    def _index_of(self, event: ResponsesEvent, out: list[Signal]) -> int | None:
        if event.output_index is not None:
            return event.output_index
        item_id = non_empty(event.item_id)
        if item_id is not None and item_id in self.by_item_id:
            return self.by_item_id[item_id]
        self._once("unmatched-arguments", out, "unmatched-arguments",
                   "function_call arguments without output_index or a known item_id; ignored")
        return None

    def _arguments_delta(self, event: ResponsesEvent, out: list[Signal]) -> None:
        index = self._index_of(event, out)
        if index is None or not event.delta:
            return
        call = self.calls.get(index)
        if call is None:  # arguments before (or without) their item: the call opens unidentified
            call = self.calls[index] = Call()
        if not call.deltas:
            call.arguments = []
        call.deltas += 1
        call.arguments.append(event.delta)
        out.append(tool_chunk(index, arguments=event.delta))

    def _whole_arguments(self, index: int, arguments: object, out: list[Signal]) -> None:
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = Call()
            out.append(tool_chunk(index))
        given = non_empty(arguments)
        if call.deltas:
            if given is not None and given != "".join(call.arguments):
                self._once(f"arguments-{index}", out, "arguments-mismatch",
                           f"function_call at output_index {index}: the whole arguments differ from the deltas; "
                           "the deltas are kept")
            return
        whole = given if given is not None else ("".join(call.arguments) or None)
        if whole is not None and not call.whole_sent:
            call.whole_sent = True
            out.append(tool_chunk(index, arguments=whole))

    # -- the end --------------------------------------------------------------------------------------------------

    def _usage(self, response: ResponseObject | None, out: list[Signal]) -> WireChunk | None:
        if response is None or response.usage is None:
            return None
        chunk = WireChunk(usage=wire_usage(response.usage))
        out.append(chunk)
        return chunk

    def _terminal(self, kind: str, response: ResponseObject | None, out: list[Signal]) -> None:
        if self.unsupported:
            self._usage(response, out)
            kinds = list(self.unsupported)
            items = ", ".join(kinds[:_KINDS_NAMED])
            if len(kinds) > _KINDS_NAMED:
                items += f" and {len(kinds) - _KINDS_NAMED} more kinds"
            message = f"the response asks the client to act on {items}; only function calls are assembled"
            return self._halt(Failure(Code.UNSUPPORTED_OUTPUT, message), out)
        if kind == "response.completed":
            reason = "tool_calls" if self.calls else "stop"
        else:
            details = response.incomplete_details if response is not None else None
            wire = details.reason if details is not None and details.reason else "incomplete"
            reason = _INCOMPLETE.get(wire, wire)
        usage = wire_usage(response.usage) if response is not None and response.usage is not None else None
        out.append(WireChunk(choices=[WireChoice(index=0, finish_reason=reason)], usage=usage))
        out.append(Done())
        self.finished = True

    def _halt(self, failure: Failure, out: list[Signal]) -> None:
        out.append(Halt(failure))
        self.finished = True

    def _once(self, key: str, out: list[Signal], kind: str, detail: str) -> None:
        if key not in self.reported:
            self.reported.add(key)
            out.append(Anomaly(kind, None, detail))

    def on_end(self, out: list[Signal]) -> None:
        self.read_unterminated(out)
        if not self.finished:
            self._closed(out, "")

    def _closed(self, out: list[Signal], why: str) -> None:
        self._halt(Failure(Code.STREAM_CLOSED, f"Responses stream ended before its terminal event{why}"), out)


def responses_stage(limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> SseFraming:
    """A fresh Responses parsing stage (what ``parse_responses_sse`` runs per subscription)."""
    return _ParseResponses(limits, comments=comments)


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

    The format: docs/formats/responses.md; decision notes: docs/decisions/0025-responses-format.md,
    docs/decisions/0043-done-terminates-and-usage-first.md, docs/decisions/0045-items-and-streams-not-retried.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseResponses(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))
