"""``accumulate_arguments``: a tool call's arguments fragments concatenate; ``null`` or absent adds nothing.

Rule (docs/decisions/0003-accumulate-arguments.md): every ``ToolFragment`` becomes one public ``tool-call-delta``
carrying the identity known so far (``id`` is ``""`` until known, ``name`` only once known) and its fragment
(``""`` for ``null``, reported once per call as ``null-arguments``, or for an absent field). The arguments stay a raw
JSON string: they are never parsed here. When ``Done`` arrives, one ``ToolCallState`` per call, in opening order,
precedes it, so ``close_on_done`` can close or refuse each call.

Marble (``f(x)`` a fragment with arguments x; ``D`` Done)::

    in:   --[f('{"a"'), f(null)]--[f(':1}'), D]--|
    out:  --[d('{"a"'), d('')]----[d(':1}'), state('{"a":1}'), D]--|
"""

from __future__ import annotations

from typing import Any

from ._chunks import Anomaly, ToolCallDelta
from ._limits import DEFAULT_LIMITS, Limits
from ._signals import Done, Rule, Signal, ToolCallState, ToolFragment
from ._stage import BaseStage, Batch, stage_operator

__all__ = ["accumulate_arguments"]


def _text(buffer: bytearray) -> str:
    return buffer.decode("utf-8", "surrogatepass")


class _Arguments:
    __slots__ = ("id", "name", "null_reported", "parts", "wire_index")

    def __init__(self, wire_index: int | None) -> None:
        self.wire_index = wire_index
        self.id: str | None = None
        self.name: str | None = None
        self.parts = bytearray()  # UTF-8: one buffer per call, not one str object per fragment
        self.null_reported = False


class _AccumulateArguments(BaseStage[Batch[Signal], Signal]):
    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.finished = False
        self.calls: dict[int, _Arguments] = {}

    def on_batch(self, batch: Batch[Signal], out: list[Signal]) -> None:
        item: Any  # dispatched on type(item) below, the fastest test (decision 0008)
        for item in batch:
            kind = type(item)
            if kind is ToolFragment:
                out.append(self._fragment(item, out))
            elif kind is Done:
                out.extend(
                    ToolCallState(index, call.wire_index, call.id, call.name, _text(call.parts))
                    for index, call in self.calls.items()
                )
                out.append(item)
            else:
                out.append(item)

    def _fragment(self, fragment: ToolFragment, out: list[Signal]) -> ToolCallDelta:
        call = self.calls.get(fragment.index)
        if call is None:
            call = self.calls[fragment.index] = _Arguments(fragment.wire_index)
        call.id = fragment.id
        call.name = fragment.name
        arguments = fragment.arguments
        if type(arguments) is str:
            if arguments:
                call.parts += arguments.encode("utf-8", "surrogatepass")
        else:
            if arguments is None and not call.null_reported:
                call.null_reported = True
                out.append(Anomaly("null-arguments", fragment.index, "arguments null: adds nothing"))
            arguments = ""
        return ToolCallDelta(fragment.index, fragment.id or "", fragment.name, arguments)


def accumulate_arguments(limits: Limits | None = None) -> Rule:
    """Tool fragments to ``tool-call-delta`` chunks, and each call's arguments at ``Done``.
    ``limits.max_arguments_bytes`` bounds one call's arguments, ``limits.max_tool_calls`` the calls."""
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _AccumulateArguments(chosen))
