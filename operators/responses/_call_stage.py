"""The Responses parsing stage's half that reads the calls a client runs: their items, identity and arguments.

``_ParseResponses`` (``_stage.py``) is this stage with the rest of the events; the kinds of call and what each one's
identity, name and arguments are: ``_calls.py`` (docs/decisions/0072-client-run-tool-calls.md). The identity rules
are decision 0025's, for every kind: what ``output_item.added`` gives is passed on as the wire gives it, a field still
missing is taken from ``output_item.done``, a different non-empty value there keeps the first
(``conflicting-identity``); the terminal event's copy of the items is not read.
"""

from __future__ import annotations

from .._chunk_values import Failure
from .._chunks import Anomaly
from .._codes import Code
from .._limits import DEFAULT_LIMITS, Limits
from .._signals import Halt, Signal
from .._sse_framing import SseFraming
from .._wire import UNSET
from ._calls import STREAMED, Call, builtin_arguments, identity_of, non_empty, tool_chunk
from ._events import OutputItem, ResponsesEvent

__all__ = ["CallStage"]


class CallStage(SseFraming):
    """The calls of one response, by ``output_index`` (the wire index of their tool-call fragments)."""

    __slots__ = ("by_item_id", "calls", "items", "reported")

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
        self.calls: dict[int, Call] = {}
        self.by_item_id: dict[str, int] = {}
        self.items: dict[int, tuple[str | None, str | None]] = {}  # the first item added at each output_index
        self.reported: set[str] = set()

    def call_item(self, kind: str, output_index: int | None, item: OutputItem, out: list[Signal], *,
                  done: bool) -> None:
        """An ``output_item.added`` / ``.done`` of a call item of ``kind``."""
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
            call = self.calls[index] = Call(kind)
        elif call.kind != kind:
            return self._another_kind(call, index, item.type or "?", out)
        if item_id is not None:
            self.by_item_id.setdefault(item_id, index)
        given_id, given_name = identity_of(kind, item)
        new_id = self._identity(call, "id", given_id, index, out, done=done)
        new_name = self._identity(call, "name", given_name, index, out, done=done)
        if fresh or new_id is not UNSET or new_name is not UNSET:
            out.append(tool_chunk(index, kind, id=new_id, name=new_name))
        if kind in STREAMED:
            whole = item.input if kind == "custom" else item.arguments
            if done:
                self.whole_arguments(index, kind, whole, out)
            elif non_empty(whole) is not None:
                call.arguments = [whole]  # given whole on added: sent once, at the first .done
        elif done and not call.whole_sent:
            arguments = builtin_arguments(kind, item)
            if arguments is not None:
                call.whole_sent = True
                out.append(tool_chunk(index, kind, arguments=arguments))

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
                               f"{call.item} at output_index {index}: {field} {given!r} on output_item.done "
                               f"ignored, keeping {known!r}"))
        return UNSET

    def index_of(self, event: ResponsesEvent, out: list[Signal]) -> int | None:
        if event.output_index is not None:
            return event.output_index
        item_id = non_empty(event.item_id)
        if item_id is not None and item_id in self.by_item_id:
            return self.by_item_id[item_id]
        self.once("unmatched-arguments", out, "unmatched-arguments",
                  "tool call arguments or input without output_index or a known item_id; ignored")
        return None

    def arguments_delta(self, kind: str, event: ResponsesEvent, out: list[Signal]) -> None:
        """A ``function_call_arguments.delta`` or ``custom_tool_call_input.delta`` (``kind``)."""
        index = self.index_of(event, out)
        if index is None or not event.delta:
            return
        call = self.calls.get(index)
        if call is None:  # arguments before (or without) their item: the call opens unidentified
            call = self.calls[index] = Call(kind)
        elif call.kind != kind:
            return self._another_kind(call, index, event.type or "?", out)
        if not call.deltas:
            call.arguments = []
        call.add_delta(event.delta)
        out.append(tool_chunk(index, kind, arguments=event.delta))

    def whole_arguments(self, index: int, kind: str, arguments: object, out: list[Signal]) -> None:
        """The whole arguments (or input) of a streamed call, given by a ``.done`` event: sent once, when no delta
        came."""
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = Call(kind)
            out.append(tool_chunk(index, kind))
        elif call.kind != kind:
            return self._another_kind(call, index, kind, out)
        given = non_empty(arguments)
        if call.deltas:
            if given is not None and given != "".join(call.arguments):
                self.once(f"arguments-{index}", out, "arguments-mismatch",
                          f"{call.item} at output_index {index}: the whole arguments differ from the deltas; "
                          "the deltas are kept")
            return
        whole = given if given is not None else ("".join(call.arguments) or None)
        if whole is not None and not call.whole_sent:
            call.whole_sent = True
            out.append(tool_chunk(index, kind, arguments=whole))

    def unfinished(self) -> list[str]:
        """The built-in calls whose arguments never came (their item never finished), described."""
        return [f"{call.item} at output_index {index}" for index, call in self.calls.items()
                if call.kind not in STREAMED and not call.whole_sent]

    def _another_kind(self, call: Call, index: int, what: str, out: list[Signal]) -> None:
        """One ``output_index`` holds one item (decision 0070): a call of another kind there is a malformed body."""
        self.halt(Failure(Code.MALFORMED_RESPONSE,
                          f"{what[:60]!r} at output_index {index}, which holds a {call.item}"), out)

    def halt(self, failure: Failure, out: list[Signal]) -> None:
        out.append(Halt(failure))
        self.finished = True

    def once(self, key: str, out: list[Signal], kind: str, detail: str) -> None:
        if key not in self.reported:
            self.reported.add(key)
            out.append(Anomaly(kind, None, detail))
