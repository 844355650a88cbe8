"""``coalesce_identity``: which block each fragment belongs to, and who each tool call is.

Rule (docs/decisions/0002-coalesce-identity.md):
- A tool call's ``id`` and ``function.name`` are identity, not accumulation. Only a non-empty string is accepted;
  absent, ``null``, ``""`` and non-strings leave the established value (reported as ``empty-identity`` /
  ``non-string-identity``). Identity is never concatenated. A different non-empty name for an established call keeps
  the first (``conflicting-identity``): a call keeps the identity its first delta established, and its kind (decision
  0072: ``function`` unless a parser's ``WireKindedToolCall`` names another).
- Calls are correlated by wire ``index``, except that a non-empty id different from the one established at that index
  starts a new call (Ollama sends every parallel call with index 0, ``reused-index``). A new wire index is always a
  new call: an id another call already owns is refused there (``duplicate-id``; the call stays unidentified and the
  response ends ``MALFORMED_TOOL_CALL``), so two calls claiming one id are never merged. A delta without ``index`` joins
  the call its non-empty id names, else the most recent call (``missing-index``). A sparse first index is fine.
- Blocks get indices 0, 1, 2, ... in order of first appearance, one counter shared by text, reasoning and tool calls.
- Reasoning (docs/decisions/0002-coalesce-identity.md, docs/decisions/0010-corpus-extensions.md):
  ``reasoning_content`` when present and not null, else the vLLM alias ``reasoning``, else (only when neither field
  is present) OpenRouter's ``reasoning_details[].text``; only a non-empty string opens or extends the single
  reasoning block, so DeepSeek's first ``reasoning_content: ""`` opens nothing. Content given as a list of typed
  parts (Mistral) contributes its ``text`` parts as text and its ``thinking`` parts as reasoning. A parser's
  ``ReasoningEnd`` (docs/decisions/0028-reasoning-round-trip.md) ends the reasoning block: its signature, encrypted
  reasoning and item id go to ``close_on_done`` as a ``ReasoningSeal`` of that block (one carrying a signature or
  encrypted reasoning opens a block when none is open, as a ``redacted_thinking`` block has no text), and reasoning
  after it opens a new block.
- Per chunk the order is reasoning, content, tool calls, finish reason; then usage (``x_groq.usage`` when the chunk has
  no top-level usage), merged with the earlier usage (decision 0012); a merged usage with neither a valid input nor a
  valid output count is reported only as ``invalid-usage``, never as 0/0 (decision 0046). Only choice 0 is the
  message; other choices (``n`` > 1) are reported as ``extra-choice``.

The marble diagram is on the factory: ``help(operators.coalesce_identity)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

from typing import Any

from ._chunks import Anomaly, BlockStart, ReasoningDelta, TextDelta, ToolCallKind
from ._delta_parts import content_parts, other_reasoning
from ._signals import (
    FinishSeen,
    IdRefusal,
    ReasoningEnd,
    ReasoningSeal,
    RefusalSeen,
    Rule,
    Signal,
    ToolFragment,
    UsageSeen,
)
from ._stage import BaseStage, Batch, stage_operator
from ._usage import checked_usage, merge_usage
from ._usage_keys import counts_anything
from ._wire import UNSET, WireChunk, WireDelta, WireToolCall, WireUsage

__all__ = ["coalesce_identity"]


class _Call:
    __slots__ = ("id", "index", "kind", "name", "reported", "wire_index")

    def __init__(self, index: int, wire_index: int | None, kind: str) -> None:
        self.index = index
        self.wire_index = wire_index
        self.kind = kind
        self.id: str | None = None
        self.name: str | None = None
        self.reported: set[str] = set()


def _settled(value: Any, known: str | None, reported: set[str], key: str) -> bool:
    """Whether an identity value changes nothing and reports nothing: absent, the value already established, or an
    empty value already reported for this call."""
    if value is UNSET:
        return True
    if type(value) is str and value:
        return value == known
    return (value is None or value == "") and key in reported


def _kept(call: _Call, field: str) -> str:
    value = call.id if field == "id" else call.name
    return f", keeping {value!r}" if value is not None else ", still unknown"


def _describe(value: Any) -> str:
    return "absent" if value is UNSET else repr(value)[:40]


class _CoalesceIdentity(BaseStage[Batch[Signal], Signal]):
    def __init__(self) -> None:
        self.finished = False
        self.next_index = 0
        self.text_index: int | None = None
        self.reasoning_index: int | None = None
        self.by_wire_index: dict[int, _Call] = {}
        self.by_id: dict[str, _Call] = {}
        self.last_call: _Call | None = None
        self.reported: set[str] = set()
        self.usage: WireUsage | None = None  # merged over the chunks (decision 0012)

    def on_batch(self, batch: Batch[Signal], out: list[Signal]) -> None:
        item: Any  # dispatched on type(item) below, the fastest test (decision 0008)
        for item in batch:
            if type(item) is WireChunk:
                self._chunk(item, out)
            elif type(item) is ReasoningEnd:
                self._reasoning_end(item, out)
            else:
                out.append(item)

    def _reasoning_end(self, end: ReasoningEnd, out: list[Signal]) -> None:
        index = self.reasoning_index
        if index is None:
            if end.signature is None and end.encrypted is None:
                return  # nothing to keep: an empty thinking block, a reasoning item with only its id
            index = self._open("reasoning", out)
        self.reasoning_index = None
        if end.signature is not None or end.encrypted is not None or end.item_id is not None:
            out.append(ReasoningSeal(index, end.signature, end.encrypted, end.item_id))

    # -- one wire chunk -------------------------------------------------------------------------------------------

    def _chunk(self, chunk: WireChunk, out: list[Signal]) -> None:
        if chunk.choices:
            for choice in chunk.choices:
                if choice.index:  # None (a null index) is choice 0
                    self._report_once(f"choice-{choice.index}", out, "extra-choice", None,
                                      f"choice {choice.index} ignored: only choice 0 is the message (n > 1)")
                    continue
                if choice.delta is not None:
                    self._delta(choice.delta, out)
                if choice.finish_reason is not None:
                    out.append(FinishSeen(choice.finish_reason))
        usage = chunk.usage
        if usage is None and chunk.x_groq is not None:
            usage = chunk.x_groq.usage
        if usage is not None:
            kept: list[str] = []
            self.usage = merged = merge_usage(self.usage, usage, kept)
            mapped, dropped = checked_usage(merged)
            dropped = [f"{count} (the earlier valid count kept)" for count in kept] + dropped
            if dropped:
                out.append(Anomaly("invalid-usage", None, "usage counts dropped: " + ", ".join(dropped)))
            if not dropped or counts_anything(merged):  # no valid count at all is no usage, never 0/0 (0046)
                out.append(UsageSeen(mapped))

    def _delta(self, delta: WireDelta, out: list[Signal]) -> None:
        content = delta.content
        text = content if type(content) is str else None
        rc = delta.reasoning_content
        reasoning = rc if isinstance(rc, str) else other_reasoning(delta)
        if type(content) is list:
            text, thinking = content_parts(content)
            reasoning = (reasoning or "") + thinking
        if reasoning:
            if self.reasoning_index is None:
                self.reasoning_index = self._open("reasoning", out)
            out.append(ReasoningDelta(self.reasoning_index, reasoning))
        if text:
            if self.text_index is None:
                self.text_index = self._open("text", out)
            out.append(TextDelta(self.text_index, text))
        if delta.refusal:
            out.append(RefusalSeen(delta.refusal))
        if delta.tool_calls:
            for wire in delta.tool_calls:
                self._tool_call(wire, out)

    def _open(self, block_type: Any, out: list[Signal]) -> int:
        index = self.next_index
        self.next_index += 1
        out.append(BlockStart(index, block_type))
        return index

    def _tool_call(self, wire: WireToolCall, out: list[Signal]) -> None:
        wire_id = wire.id
        function = wire.function
        wire_name = function.name if function is not None else UNSET
        arguments = function.arguments if function is not None else UNSET
        settled = self.settled_call(wire.index, wire_id, wire_name)
        if settled is not None:  # the call's identity changes nothing: only its fragment
            out.append(ToolFragment(settled.index, settled.wire_index, settled.id, settled.name, arguments, None,
                                    settled.kind))
            return
        new_id = wire_id if type(wire_id) is str and wire_id else None
        kind = ToolCallKind.FUNCTION if type(wire) is WireToolCall else getattr(wire, "kind", ToolCallKind.FUNCTION)
        call = self._correlate(wire.index, new_id, kind, out)
        refused: IdRefusal | None = None

        if new_id is not None:
            if call.id is None:
                owner = self.by_id.get(new_id)
                if owner is None or owner is call:
                    call.id = new_id
                    self.by_id[new_id] = call
                else:
                    refused = IdRefusal(new_id, owner.index, owner.wire_index)
                    self._report_call(call, "duplicate-id", out, "duplicate-id",
                                      f"id {new_id!r} ignored: call {owner.index} already owns it"
                                      + _kept(call, "id"))
        else:
            self._ignore_identity(call, "id", wire_id, out)

        if type(wire_name) is str and wire_name:
            if call.name is None:
                call.name = wire_name
            elif call.name != wire_name:
                self._report_call(call, "conflicting-name", out, "conflicting-identity",
                                  f"name {wire_name!r} ignored: the call is already named {call.name!r}")
        else:
            self._ignore_identity(call, "name", wire_name, out)

        out.append(ToolFragment(call.index, call.wire_index, call.id, call.name, arguments, refused, call.kind))

    def settled_call(self, wire_index: Any, wire_id: Any, name: Any) -> _Call | None:
        """The call open at ``wire_index`` when a tool-call delta's identity values change nothing and report nothing
        (each absent, the value already established, or an empty value already reported for that call): the delta is
        then only its fragment, and the call the latest one. None otherwise. The rule path and the fast path ask it
        (docs/decisions/0050-fast-path.md)."""
        if type(wire_index) is not int:
            return None
        call = self.by_wire_index.get(wire_index)
        if call is None or not _settled(wire_id, call.id, call.reported, "empty-id"):
            return None
        if not _settled(name, call.name, call.reported, "empty-name"):
            return None
        self.last_call = call
        return call

    def _correlate(self, wire_index: int | None, new_id: str | None, kind: str, out: list[Signal]) -> _Call:
        if wire_index is not None:
            call = self.by_wire_index.get(wire_index)
            if call is None:  # a new wire index is a new call, even with an id another call owns (then refused)
                call = self.by_wire_index[wire_index] = self._new_call(wire_index, kind, out)
            elif new_id is not None and call.id is not None and call.id != new_id:
                known = self.by_id.get(new_id)
                if known is not None:
                    call = known
                else:
                    call = self._new_call(wire_index, kind, out)
                    out.append(Anomaly("reused-index", call.index,
                                       f"wire index {wire_index} reused by a new id {new_id!r}: a new call"))
                self.by_wire_index[wire_index] = call
        else:
            self._report_once("missing-index", out, "missing-index", None,
                              "tool-call delta without an index: correlated by id, else to the latest call")
            call = self.by_id.get(new_id) if new_id is not None else None
            if call is None:
                last = self.last_call
                joins_last = last is not None and (new_id is None or last.id is None)
                call = last if last is not None and joins_last else self._new_call(None, kind, out)
        self.last_call = call
        return call

    def _new_call(self, wire_index: int | None, kind: str, out: list[Signal]) -> _Call:
        return _Call(self._open("tool-call", out), wire_index, kind)

    def _ignore_identity(self, call: _Call, field: str, value: Any, out: list[Signal]) -> None:
        if value is UNSET:
            return
        empty = value is None or (type(value) is str and not value)
        key = f"empty-{field}" if empty else f"non-string-{field}"
        if key in call.reported:  # reported once per call: the message is not even formatted again
            return
        kind, what = ("empty-identity", "ignored") if empty else ("non-string-identity", "is not a string; ignored")
        self._report_call(call, key, out, kind, f"{field} {_describe(value)} {what}" + _kept(call, field))

    def _report_call(self, call: _Call, key: str, out: list[Signal], kind: str, detail: str) -> None:
        if key not in call.reported:
            call.reported.add(key)
            out.append(Anomaly(kind, call.index, detail))

    def _report_once(self, key: str, out: list[Signal], kind: str, index: int | None, detail: str) -> None:
        if key not in self.reported:
            self.reported.add(key)
            out.append(Anomaly(kind, index, detail))


def coalesce_identity() -> Rule:
    """Which block each fragment belongs to, and each tool call's identity. ``id``/``name`` are accepted only as
    non-empty strings and never concatenated::

        in:   --[call0 id=a name=Glob args='']--[call0 id='' name=null args='{}']--|
        out:  --[start 0 tool-call, frag 0 a/Glob '']--[frag 0 a/Glob '{}']------|

    Guarantees: first non-empty id and name win, ``""``/``null``/non-strings are ignored (reported), a conflicting name
    keeps the first; calls correlated by wire index, a new id at a used index is a new call (Ollama), an index-less
    delta joins the call its id names or the latest call; block indices 0, 1, 2, ... shared by all kinds, in order of
    first appearance; reasoning before content before tool calls within a delta; one text block and one reasoning block;
    the first ``reasoning_content: ""`` opens nothing; ``reasoning_content``, else ``reasoning``, else (only when
    neither is present) ``reasoning_details[].text``; Mistral's list content split into text and thinking; only choice 0
    is the message (``extra-choice``); usage from ``usage``, else ``x_groq.usage``.

    Decision notes: docs/decisions/0002-coalesce-identity.md, docs/decisions/0010-corpus-extensions.md.
    """
    return stage_operator(_CoalesceIdentity)
