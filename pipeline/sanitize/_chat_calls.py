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
    """UTF-8 bytes of the fragments held for the call, before its identity (or an earlier call's) is known."""
    id: str | None = None
    name: str | None = None
    index: int | None = None
    """The client's (dense) index once identified."""
    held: list[str] = attrs.field(factory=list)
    first: dict[str, Any] | None = None
    """The entry that identified it (kept until an earlier call is identified too)."""
    fragment: str = ""
    tail: list[str] = attrs.field(factory=list)
    """Fragments after ``first`` while it waits."""


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
    ids: set[str] = attrs.field(factory=set)
    """The ids this choice's calls claimed."""
    last: _Call | None = None
    """The call the latest entry went to (an entry without an index joins it)."""

    def unidentified(self) -> bool:
        return any(call.index is None for call in self.calls)

    def repair(self, entries: list[Any], ids: set[str], limits: Limits) -> list[Any]:
        out: list[Any] = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            function = entry.get("function")
            function = function if isinstance(function, dict) else {}
            call_id, name = _text(entry.get("id")), _text(function.get("name"))
            fragment = function.get("arguments")
            fragment = fragment if isinstance(fragment, str) else ""
            call = self._correlate(entry.get("index"), call_id)
            if call is None:
                call = _Call()
                if entry.get("index") is not None:
                    self.current[entry["index"]] = call
                self.calls.append(call)
                if len(self.calls) > limits.max_tool_calls:
                    self.failure = Failure(Code.LIMIT_EXCEEDED, f"more than {limits.max_tool_calls} tool calls")
                    return out
            self.last = call
            if call.index is not None:
                if fragment or set(entry) - {"index", "id", "type", "function"}:
                    out.append(_continuation(entry, function, call.index, fragment))
                continue
            if call.first is not None:  # identified, waiting for an earlier call to be
                call.tail.append(fragment)
                if (failure := _over(call, fragment, limits)) is not None:  # held too: bounded the same way
                    self.failure = failure
                    return out
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
                if (failure := _over(call, fragment, limits)) is not None:
                    self.failure = failure
                    return out
                continue
            call.first, call.fragment = entry, fragment
            self._release(out)
        return out

    def _release(self, out: list[Any]) -> None:
        """Numbers the identified calls in the order they first appeared (the library's order), up to the first call
        still unidentified (decision 0070), each sent once with every fragment held for it."""
        for call in self.calls:
            if call.index is not None:
                continue
            entry = call.first
            if entry is None:
                return
            function = entry.get("function")
            function = function if isinstance(function, dict) else {}
            call.index = self.identified
            self.identified += 1
            waited = bool(call.held or call.tail)
            arguments = "".join(call.held) + call.fragment + "".join(call.tail)
            call.held, call.tail, call.first = [], [], {}
            first = dict(entry)
            first.update(index=call.index, id=call.id, function={**function, "name": call.name,
                                                                 "arguments": arguments})
            if "type" in entry or waited:  # a type the upstream never sent is not added to its own event
                first["type"] = "function"
            out.append(first)

    def _correlate(self, wire: Any, call_id: str | None) -> _Call | None:
        """The call an entry continues, as the library correlates it (decision 0002): by wire index, unless a new id
        differs from the one there (then the call owning that id, else a new call); without an index, the call its id
        names, else the latest call when either has no id yet. ``None``: a new call."""
        known = next((c for c in self.calls if c.id == call_id), None) if call_id is not None else None
        if wire is None:
            last = self.last
            return known or (last if last is not None and (call_id is None or last.id is None) else None)
        call = self.current.get(wire)
        if call is not None and call_id is not None and call.id is not None and call_id != call.id:
            if known is not None:
                self.current[wire] = known
            return known
        return call


def _over(call: _Call, fragment: str, limits: Limits) -> Failure | None:
    """Counts a fragment held for ``call`` (its identity, or an earlier call's, not yet known), as
    accumulate_arguments counts a call's arguments: ``LIMIT_EXCEEDED`` once they pass ``max_arguments_bytes``."""
    call.held_bytes += len(fragment.encode("utf-8", "surrogatepass"))
    if call.held_bytes <= limits.max_arguments_bytes:
        return None
    return Failure(Code.LIMIT_EXCEEDED, f"a tool call's arguments reached {call.held_bytes} bytes while held, over "
                   f"max_arguments_bytes={limits.max_arguments_bytes}")


def _continuation(entry: dict[str, Any], function: dict[str, Any], index: int, fragment: str) -> dict[str, Any]:
    """A continuation without the identity the SDK would concatenate (``id``, ``name``) or assert on (``type``)."""
    out = {k: v for k, v in entry.items() if k not in ("id", "type", "function")}
    out["index"] = index
    rest = {k: v for k, v in function.items() if k not in ("name", "arguments")}
    out["function"] = {**rest, "arguments": fragment}
    return out
