"""The Responses parsing stage: one handler per event ``type``, the output items, the end.

What ``parse_responses_sse`` (``_parse.py``, where the rule is written) runs per subscription, and what
the fast path (``_fast.py``) reads its hot events past. The typed events are in ``_events.py``; the calls a client
runs (their items, identity and arguments) in ``_call_stage.py`` and ``_calls.py``.
"""

from __future__ import annotations

from .._chunk_values import Failure
from .._chunks import Anomaly
from .._codes import Code
from .._format_mismatch import foreign_format, format_mismatch, gemini_shaped
from .._limits import DEFAULT_LIMITS, Limits
from .._provider_errors import classify_inband_error
from .._signals import Done, ReasoningEnd, Signal
from .._sse_framing import quote
from .._usage_keys import responses_usage as wire_usage
from .._wire import DecodeError, WireChoice, WireChunk, WireDelta, wire_chunk
from ._call_stage import CallStage
from ._calls import CLIENT_CALLS, DELTA_EVENTS, DONE_EVENTS, another_item, non_empty, run_by_provider
from ._events import (
    IGNORED_EVENTS,
    READ_EVENTS,
    SERVER_TOOL_EVENT_PREFIXES,
    SERVER_TOOL_ITEMS,
    ResponseObject,
    ResponsesEvent,
    decode_event,
    decode_kind,
    error_object,
    failed_error,
)

__all__ = ["_ParseResponses"]

_DONE = b"[DONE]"
_OWN_ITEMS = frozenset({"message", "reasoning"})
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_CONTENT_DELTAS = frozenset({"response.output_text.delta", "response.reasoning_summary_text.delta",
                             "response.reasoning_text.delta", "response.refusal.delta", *DELTA_EVENTS})
_ESCAPED = 6  # the most bytes one UTF-8 byte takes in a JSON string (a control character as \u00XX)
_KIND_CHARS = 60  # an item or event type quoted in a message
_KINDS_NAMED = 10  # unsupported item kinds named in the UNSUPPORTED_OUTPUT message (then "and N more kinds")


class _ParseResponses(CallStage):
    """The Responses stream: each payload one typed event, the terminal ``response.*`` event the end."""

    __slots__ = ("unsupported",)
    END_NAME = "the terminal event"

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
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
                seen = foreign_format(kind, has_choices, gemini=kind is None and gemini_shaped(payload))
                if seen is not None and seen != "responses":
                    self.halt(format_mismatch(seen, "responses", payload), out)
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
                self.halt(Failure(Code.MALFORMED_RESPONSE, message), out)
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
        elif kind in DELTA_EVENTS:
            self.arguments_delta(DELTA_EVENTS[kind], event, out)
        elif kind in DONE_EVENTS:
            index = self.index_of(event, out)
            if index is not None:
                whole = event.arguments if kind == "response.function_call_arguments.done" else event.input
                self.whole_arguments(index, DONE_EVENTS[kind], whole, out)
        elif kind == "response.output_item.added":
            self._item(event, out, done=False)
        elif kind == "response.output_item.done":
            self._item(event, out, done=True)
        elif kind in ("response.completed", "response.incomplete"):
            self._terminal(kind, event.response, out)
        elif kind == "response.failed":
            self._usage(event.response, out)
            self.halt(classify_inband_error(failed_error(event.response)), out)
        elif kind == "error":
            self.halt(classify_inband_error(error_object(event)), out)

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
            self.once("annotation", out, "annotation", "output_text annotations (citations) are not carried")
        else:
            shown = kind[:_KIND_CHARS] if kind is not None else None
            self.once(f"event-{shown}", out, "unknown-event", f"event {shown!r} not understood; ignored")

    # -- output items -------------------------------------------------------------------------------------------

    def _item(self, event: ResponsesEvent, out: list[Signal], *, done: bool) -> None:
        item = event.item
        if item is None:
            self.halt(Failure(Code.MALFORMED_RESPONSE, f"{event.type} without an item"), out)
            return
        if not done and event.output_index is not None and another_item(self.items, event.output_index, item):
            self.halt(Failure(Code.MALFORMED_RESPONSE, f"two output items at output_index {event.output_index}"), out)
            return
        kind = item.type or "?"
        call_kind = CLIENT_CALLS.get(kind)
        if call_kind is not None and item.execution != "server" and not run_by_provider(kind, item):
            self.call_item(call_kind, event.output_index, item, out, done=done)
        elif kind == "reasoning":
            if done:
                out.append(ReasoningEnd(encrypted=non_empty(item.encrypted_content), item_id=non_empty(item.id)))
        elif kind not in _OWN_ITEMS and not done:
            if item.execution == "client":  # the client's to run (a tool_search_call...), never a server tool (0045)
                kind = f"{kind[:60]} (execution client)"
            shown = kind[:_KIND_CHARS]  # a kind is the server's string: quoted within a bound
            if kind in SERVER_TOOL_ITEMS or call_kind is not None:
                out.append(Anomaly("server-tool", None, f"server-side tool item {shown!r} (run by the provider)"))
            else:
                out.append(Anomaly("unsupported-item", None, f"output item {shown!r} is not carried; ignored"))
                self.unsupported[shown] = None

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
            message = f"the response asks the client to act on {items}, which the protocol does not carry"
            return self.halt(Failure(Code.UNSUPPORTED_OUTPUT, message), out)
        unfinished = self.unfinished()
        if unfinished:  # a built-in call without its action or operation: never assembled half-known (0072)
            self._usage(response, out)
            named = "; ".join(unfinished[:_KINDS_NAMED]) + (" ..." if len(unfinished) > _KINDS_NAMED else "")
            message = f"{named}: never finished (no output_item.done with its action or operation)"
            return self.halt(Failure(Code.MALFORMED_TOOL_CALL, message), out)
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

    def on_end(self, out: list[Signal]) -> None:
        self.read_unterminated(out)
        if not self.finished:
            self._closed(out, "")

    def _closed(self, out: list[Signal], why: str) -> None:
        self.halt(Failure(Code.STREAM_CLOSED, f"Responses stream ended before its terminal event{why}"), out)
