"""``accumulate_arguments``: a tool call's arguments fragments concatenate; ``null`` or absent adds nothing.

Rule (docs/decisions/0003-accumulate-arguments.md): every ``ToolFragment`` becomes one public ``tool-call-delta``
carrying the identity known so far (``id`` is ``""`` until known, ``name`` only once known, the call's kind) and its
fragment
(``""`` for ``null``, reported once per call as ``null-arguments``, or for an absent field). The arguments stay a raw
JSON string: they are never parsed here. When ``Done`` arrives, one ``ToolCallState`` per call, in opening order,
precedes it, so ``close_on_done`` can close or refuse each call. A fragment taking one call's arguments past
``limits.max_arguments_bytes`` (UTF-8), or a tool-call block-start past ``limits.max_tool_calls``, is not emitted: a
``Halt(LIMIT_EXCEEDED)`` ends the stage instead (docs/decisions/0014-limits.md).

The marble diagram is on the factory: ``help(operators.accumulate_arguments)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

from typing import Any

from ._chunks import Anomaly, BlockStart, ToolCallDelta
from ._limits import DEFAULT_LIMITS, Limits, limit_exceeded
from ._signals import Done, Halt, IdRefusal, Rule, Signal, ToolCallState, ToolFragment
from ._stage import BaseStage, Batch, stage_operator

__all__ = ["accumulate_arguments"]


def _text(buffer: bytearray) -> str:
    return buffer.decode("utf-8", "surrogatepass")


class _Arguments:
    __slots__ = ("id", "kind", "name", "null_reported", "parts", "refused", "wire_index")

    def __init__(self, wire_index: int | None, kind: str) -> None:
        self.wire_index = wire_index
        self.kind = kind  # the call's ToolCallKind (decision 0072)
        self.id: str | None = None
        self.name: str | None = None
        self.parts = bytearray()  # UTF-8: one buffer per call, not one str object per fragment
        self.null_reported = False
        self.refused: IdRefusal | None = None  # the last id refused as another call's (close_on_done's message)


class _AccumulateArguments(BaseStage[Batch[Signal], Signal]):
    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.finished = False
        self.calls: dict[int, _Arguments] = {}
        self.opened = 0  # tool-call blocks started (counted against max_tool_calls)

    def on_batch(self, batch: Batch[Signal], out: list[Signal]) -> None:
        item: Any  # dispatched on type(item) below, the fastest test (decision 0008)
        for item in batch:
            kind = type(item)
            if kind is ToolFragment:
                self._fragment(item, out)
                if self.finished:
                    return
            elif kind is Done:
                out.extend(
                    ToolCallState(index, call.wire_index, call.id, call.name, _text(call.parts), call.refused,
                                  call.kind)
                    for index, call in self.calls.items()
                )
                out.append(item)
            elif kind is BlockStart and item.block_type == "tool-call":
                if self.opened >= self.limits.max_tool_calls:  # the call past the limit is not even started
                    self._too_many_calls(out)
                    return
                self.opened += 1
                out.append(item)
            else:
                out.append(item)

    def _fragment(self, fragment: ToolFragment, out: list[Signal]) -> None:
        call = self.calls.get(fragment.index)
        if call is None:
            if len(self.calls) >= self.limits.max_tool_calls:  # fragments arriving without their block-start
                self._too_many_calls(out)
                return
            call = self.calls[fragment.index] = _Arguments(fragment.wire_index, fragment.kind)
        if fragment.refused is not None:
            call.refused = fragment.refused
        arguments = fragment.arguments
        if type(arguments) is str:
            if self.extend(fragment.index, fragment.id, fragment.name, arguments) < 0:  # nothing past it is stored
                size = len(call.parts) + len(arguments.encode("utf-8", "surrogatepass"))
                self._exceeded("max_arguments_bytes", size, self.limits.max_arguments_bytes,
                               "the arguments of one tool call", out)
                return
        else:
            call.id = fragment.id
            call.name = fragment.name
            if arguments is None and not call.null_reported:
                call.null_reported = True
                out.append(Anomaly("null-arguments", fragment.index, "arguments null: adds nothing"))
            arguments = ""
        out.append(ToolCallDelta(fragment.index, fragment.id or "", fragment.name, arguments, kind=call.kind))

    def extend(self, index: int, id: str | None, name: str | None, arguments: str) -> int:
        """Call ``index``'s identity so far and a fragment of its arguments, whose UTF-8 bytes join them within
        ``max_arguments_bytes``. Returns the bytes added, or -1, nothing changed, when they would cross the limit or the
        call is not open. The rule path and the fast path add through it (docs/decisions/0050-fast-path.md)."""
        call = self.calls.get(index)
        if call is None:
            return -1
        encoded = arguments.encode("utf-8", "surrogatepass")
        if len(call.parts) + len(encoded) > self.limits.max_arguments_bytes:
            return -1
        call.id = id
        call.name = name
        call.parts += encoded
        return len(encoded)

    def _too_many_calls(self, out: list[Signal]) -> None:
        counted = max(self.opened, len(self.calls)) + 1
        self._exceeded("max_tool_calls", counted, self.limits.max_tool_calls, "tool calls in one response", out)

    def _exceeded(self, name: str, value: int, limit: int, what: str, out: list[Signal]) -> None:
        """Ends the response: ``close_on_done`` turns the ``Halt`` into the usage seen, then the error finish."""
        out.append(Halt(limit_exceeded(name, value, limit, what)))
        self.finished = True
        self.calls.clear()


def accumulate_arguments(limits: Limits | None = None) -> Rule:
    """Arguments fragments concatenate per call; ``null`` adds nothing::

        in:   --[frag '{"a"', frag null]--[frag ':1}', Done]--|
        out:  --[delta '{"a"', delta '']--[delta ':1}', state '{"a":1}', Done]--|

    Guarantees: one ``tool-call-delta`` per wire tool-call entry, carrying the identity known so far (``id`` ``""``
    until known, ``name`` only once known); the arguments stay a raw string, never parsed; at ``Done``, one
    ``ToolCallState`` per call in opening order precedes it; the joined deltas of a call equal its final arguments.

    Limits (``accumulate_arguments(limits)``): a fragment that would take one call's arguments past
    ``limits.max_arguments_bytes`` (8 MiB, UTF-8 bytes) is neither emitted nor kept; a tool-call ``block-start`` past
    ``limits.max_tool_calls`` (128) is not emitted. Either emits ``Halt(LIMIT_EXCEEDED)`` and finishes;
    ``close_on_done`` turns it into the usage seen, then the error finish, with no block-end.

    Decision notes: docs/decisions/0003-accumulate-arguments.md, docs/decisions/0014-limits.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _AccumulateArguments(chosen))
