"""One choice's tool calls in a streamed chat completion, repaired entry by entry (``ChatRepair``'s rules for
``delta.tool_calls``; docs/decisions/0032-repair-dont-rewrite.md and 0002 for the identity rules)."""

from __future__ import annotations

from typing import Any

import attrs

from operators import Code, Failure, Limits

__all__ = ["Choice"]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@attrs.define
class _Call:
    held_bytes: int = 0
    """UTF-8 bytes of the fragments held before the call was identified (``_hold``)."""
    id: str | None = None
    name: str | None = None
    index: int | None = None
    """The client's (dense) index once identified."""
    held: list[str] = attrs.field(factory=list)


@attrs.define
class Choice:
    """One choice's calls: ``repair(entries, ids, limits)`` gives the ``tool_calls`` entries to forward for one
    delta (the identified calls, held fragments included; continuations without a repeated identity)."""

    current: dict[int, _Call] = attrs.field(factory=dict)
    """The call at each wire index."""
    calls: list[_Call] = attrs.field(factory=list)
    identified: int = 0
    finish_reason: str | None = None
    failure: Failure | None = None
    """A call refused (an id claimed twice, too many calls)."""

    def unidentified(self) -> bool:
        return any(call.index is None for call in self.calls)

    def repair(self, entries: list[Any], ids: set[str], limits: Limits) -> list[Any]:
        out: list[Any] = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            wire = entry.get("index", 0)
            function = entry.get("function")
            function = function if isinstance(function, dict) else {}
            call_id, name = _text(entry.get("id")), _text(function.get("name"))
            fragment = function.get("arguments")
            fragment = fragment if isinstance(fragment, str) else ""
            call = self.current.get(wire)
            if call is None or (call_id is not None and call.id is not None and call_id != call.id):
                call = self.current[wire] = _Call()
                self.calls.append(call)
                if len(self.calls) > limits.max_tool_calls:
                    self.failure = Failure(Code.LIMIT_EXCEEDED, f"more than {limits.max_tool_calls} tool calls")
                    return out
            if call.index is not None:
                if fragment or set(entry) - {"index", "id", "type", "function"}:
                    out.append(_continuation(entry, function, call.index, fragment))
                continue
            if call_id is not None and call.id is None:
                if call_id in ids:
                    self.failure = Failure(Code.MALFORMED_TOOL_CALL, f"two tool calls claim the id {call_id!r}")
                    return out
                ids.add(call_id)
                call.id = call_id
            call.name = call.name or name
            if call.id is None or call.name is None:
                call.held.append(fragment)
                if _hold(call, fragment) > limits.max_arguments_bytes:  # as accumulate_arguments counts a call
                    self.failure = Failure(Code.LIMIT_EXCEEDED, f"a tool call's arguments reached {call.held_bytes} "
                                           f"bytes before its id and name, over max_arguments_bytes="
                                           f"{limits.max_arguments_bytes}")
                    return out
                continue
            call.index = self.identified
            self.identified += 1
            held, call.held = call.held, []
            first = dict(entry)
            first.update(index=call.index, id=call.id, function={**function, "name": call.name,
                                                                 "arguments": "".join(held) + fragment})
            if "type" in entry or held:  # a type the upstream never sent is not added to its own event
                first["type"] = "function"
            out.append(first)
        return out


def _hold(call: _Call, fragment: str) -> int:
    """Counts a fragment held for ``call`` (identity not yet known): its held bytes so far."""
    call.held_bytes += len(fragment.encode())
    return call.held_bytes


def _continuation(entry: dict[str, Any], function: dict[str, Any], index: int, fragment: str) -> dict[str, Any]:
    """A continuation without the identity the SDK would concatenate (``id``, ``name``) or assert on (``type``)."""
    out = {k: v for k, v in entry.items() if k not in ("id", "type", "function")}
    out["index"] = index
    rest = {k: v for k, v in function.items() if k not in ("name", "arguments")}
    out["function"] = {**rest, "arguments": fragment}
    return out
