"""The Responses parsing stage: one handler per event ``type``, the state of the output items and calls, the end.

What ``parse_responses_sse`` (``_parse.py``, where the rule is written) runs per subscription, and what
the fast path (``_fast.py``) reads its hot events past. The typed events are in ``_events.py``.
"""

from __future__ import annotations

from .._chunk_values import Failure
from .._chunks import Anomaly
from .._codes import Code
from .._format_mismatch import foreign_format, format_mismatch
from .._limits import DEFAULT_LIMITS, Limits
from .._provider_errors import classify_inband_error
from .._signals import Done, Halt, ReasoningEnd, Signal
from .._sse_framing import SseFraming, quote
from .._usage_keys import responses_usage as wire_usage
from .._wire import UNSET, DecodeError, WireChoice, WireChunk, WireDelta, wire_chunk
from ._events import (
    IGNORED_EVENTS,
    READ_EVENTS,
    SERVER_TOOL_EVENT_PREFIXES,
    SERVER_TOOL_ITEMS,
    Call,
    OutputItem,
    ResponseObject,
    ResponsesEvent,
    another_item,
    decode_event,
    decode_kind,
    error_object,
    failed_error,
    non_empty,
    tool_chunk,
)

__all__ = ["_ParseResponses"]

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

    __slots__ = ("by_item_id", "calls", "items", "reported", "unsupported")
    END_NAME = "the terminal event"

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
        self.calls: dict[int, Call] = {}
        self.by_item_id: dict[str, int] = {}
        self.items: dict[int, tuple[str | None, str | None]] = {}  # the first item added at each output_index
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
        if not done and event.output_index is not None and another_item(self.items, event.output_index, item):
            self._halt(Failure(Code.MALFORMED_RESPONSE, f"two output items at output_index {event.output_index}"), out)
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
        call.add_delta(event.delta)
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
