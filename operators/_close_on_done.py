"""``close_on_done``: nothing is closed before ``[DONE]``; then blocks close, usage is reported, the finish follows.

Rule (docs/decisions/0004-close-on-done.md):

- Block-ends, usage and the finish are held until ``Done``. Then: one ``block-end`` per block in opening order, the
  last usage seen (if any), then the finish (``PendingFinish`` with the last wire ``finish_reason``, for
  ``classify_finish``). Nothing after ``Done`` is read.
- If any tool call still lacks an ``id`` or a ``name`` at ``Done``, no block-end at all is emitted: the pending usage
  is reported, then an error finish ``MALFORMED_TOOL_CALL`` naming the wire index and the missing field(s). This is a
  deliberate choice over closing such a call with ``id: ""`` (docs/decisions/0004-close-on-done.md): no path may
  ever assemble an unidentified tool call (and ``ToolCallBlock`` refuses to be built without one).
- ``Halt`` (a failure from upstream) gives the pending usage, then the error finish. A ``StreamFailure`` raised by
  the source (the HTTP transport) does the same with its failure (``ABORTED`` as an aborted finish); any other
  exception from upstream with ``UNKNOWN``. Upstream ending without ``Done`` gives ``STREAM_CLOSED``.
- A ``ReasoningSeal`` is put on its block's ``ReasoningBlock`` (signature, encrypted reasoning, item id:
  docs/decisions/0028-reasoning-round-trip.md); it is not emitted. A parser's ``ToolCallSignature`` (Gemini) is put on
  the ``ToolCallBlock`` of the call at its wire index (decision 0071), likewise.
- All text and reasoning of the response (encrypted reasoning and signatures too), in UTF-8 bytes, is bounded by
  ``limits.max_text_bytes``: the delta that
  crosses it is not emitted, the texts are dropped, and the usage seen then ``LIMIT_EXCEEDED`` end the response with
  no block-end (docs/decisions/0014-limits.md).

The marble diagram is on the factory: ``help(operators.close_on_done)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

import logging
from typing import Any

from ._block_texts import BlockTexts
from ._chunk_values import FinishReason, Usage
from ._chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    UsageChunk,
)
from ._codes import Code
from ._limits import DEFAULT_LIMITS, Limits, limit_exceeded
from ._signals import (
    Done,
    FinishSeen,
    Halt,
    PendingFinish,
    ReasoningSeal,
    Rule,
    Signal,
    StreamFailure,
    ToolCallSignature,
    ToolCallState,
    UsageSeen,
)
from ._stage import BaseStage, Batch, stage_operator

__all__ = ["close_on_done", "describe_missing_identity"]

_log = logging.getLogger("llm_stream.operators")  # docs/decisions/0020-environment-and-logging.md
_NO_SEAL = ReasoningSeal(-1)  # a reasoning block that carries nothing for the provider


def describe_missing_identity(calls: list[ToolCallState]) -> str:
    """``tool call at wire index 0 (block 1) has no id`` ... joined by ``; ``; a call whose id was refused because
    another call owns it says so: ``... has no id (its id 'a' was refused: the tool call at wire index 1 (block 2)
    owns it)``."""
    parts = []
    for call in calls:
        where = f"wire index {call.wire_index}" if call.wire_index is not None else "no wire index"
        missing = " and no ".join(call.missing)
        refused = f" ({call.refused.describe()})" if call.refused is not None and call.id is None else ""
        kind = "" if call.kind == "function" else f"{call.kind} "  # a tool call of another kind names it (0072)
        parts.append(f"{kind}tool call at {where} (block {call.index}) has no {missing}{refused}")
    return "; ".join(parts) + ": refused rather than assembled without its identity"


class _CloseOnDone(BaseStage[Batch[Signal], Signal]):
    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.finished = False
        self.blocks: list[BlockStart] = []
        self.texts = BlockTexts()
        self.buffer = self.texts.buffer  # add_text's, bound once
        self.max_text_bytes = limits.max_text_bytes
        self.calls: dict[int, ToolCallState] = {}
        self.seals: dict[int, ReasoningSeal] = {}
        self.call_signatures: dict[int, str] = {}  # wire index -> a tool call's signature (ToolCallSignature)
        self.usage: Usage | None = None
        self.reason: str | None = None
        self.text_bytes = 0  # UTF-8 bytes of all text and reasoning so far (max_text_bytes)

    def add_text(self, index: int, text: str) -> int:
        """A text or reasoning delta of block ``index``: its UTF-8 bytes join the block's text and count against
        ``max_text_bytes``. Returns the bytes added, or -1, nothing changed, when they would cross the limit or the
        block is not open. The rule path and the fast path add through it (docs/decisions/0050-fast-path.md)."""
        try:
            encoded = text.encode()  # (half the cost of naming the error handler: this runs once per delta)
        except UnicodeEncodeError:  # a lone surrogate a gateway sent
            encoded = text.encode("utf-8", "surrogatepass")
        size = self.text_bytes + len(encoded)
        buffer = self.buffer(index)
        if size > self.max_text_bytes or buffer is None:
            return -1
        buffer += encoded
        self.text_bytes = size
        return len(encoded)

    def on_batch(self, batch: Batch[Signal], out: list[Signal]) -> None:
        add_text = self.add_text  # bound once per batch: the per-delta path is the hot one (decision 0008)
        item: Any  # dispatched on type(item) below, the fastest test (decision 0008)
        for item in batch:
            kind = type(item)
            if kind is TextDelta or kind is ReasoningDelta:
                if add_text(item.index, item.text) < 0:  # the crossing delta is neither emitted nor kept
                    self._text_refused(item.index, item.text, out)
                    break
                out.append(item)
            elif kind is BlockStart:
                self.blocks.append(item)
                self.texts.open(item.index)
                out.append(item)
            elif kind is ToolCallState:
                self.calls[item.index] = item
            elif kind is ReasoningSeal:
                self.seals[item.index] = item
                self.text_bytes += sum(len(part.encode("utf-8", "surrogatepass"))
                                       for part in (item.signature, item.encrypted, item.item_id) if part)
                if self.text_bytes > self.limits.max_text_bytes:
                    self._text_exceeded(self.text_bytes, out)
                    break
            elif kind is ToolCallSignature:
                self.call_signatures[item.wire_index] = item.signature
                self.text_bytes += len(item.signature.encode("utf-8", "surrogatepass"))
                if self.text_bytes > self.limits.max_text_bytes:
                    self._text_exceeded(self.text_bytes, out)
                    break
            elif kind is UsageSeen:
                self.usage = item.usage
            elif kind is FinishSeen:
                self.reason = item.reason
            elif kind is Done:
                self._close(out)
                break
            elif kind is Halt:
                self._fail(out, FinishReason("error", item.failure))
                break
            else:
                out.append(item)

    def _text_refused(self, index: int, text: str, out: list[Signal]) -> None:
        if self.buffer(index) is None:
            raise KeyError(f"text for block {index}, which was never started")
        self._text_exceeded(self.text_bytes + len(text.encode("utf-8", "surrogatepass")), out)

    def _text_exceeded(self, size: int, out: list[Signal]) -> None:
        self.texts.clear()
        self.blocks.clear()
        self.calls.clear()
        self.seals.clear()
        self.call_signatures.clear()
        failure = limit_exceeded("max_text_bytes", size, self.limits.max_text_bytes,
                                 "the text and reasoning of one response")
        self._fail(out, FinishReason("error", failure))

    def _close(self, out: list[Signal]) -> None:
        self.finished = True
        unidentified = [call for call in self.calls.values() if call.missing]
        if unidentified:
            self._fail(out, FinishReason.error(Code.MALFORMED_TOOL_CALL, describe_missing_identity(unidentified)))
            return
        for start in self.blocks:
            index = start.index
            if start.block_type == "tool-call":
                call = self.calls[index]
                # ToolCallBlock validates the identity again: an empty id or name can never be assembled.
                signature = self.call_signatures.get(call.wire_index) if call.wire_index is not None else None
                out.append(BlockEnd(index, ToolCallBlock(call.id or "", call.name or "", call.arguments,
                                                         signature=signature, kind=call.kind)))
            elif start.block_type == "text":
                out.append(BlockEnd(index, TextBlock(self.texts.pop(index))))
            else:
                seal = self.seals.get(index, _NO_SEAL)
                block = ReasoningBlock(self.texts.pop(index), signature=seal.signature, encrypted=seal.encrypted,
                                       item_id=seal.item_id)
                out.append(BlockEnd(index, block))
        if self.usage is not None:
            out.append(UsageChunk(self.usage))
        out.append(PendingFinish(self.reason))

    def _fail(self, out: list[Signal], reason: FinishReason) -> None:
        self.finished = True
        if self.usage is not None:
            out.append(UsageChunk(self.usage))
        out.append(Finish(reason))

    def on_end(self, out: list[Signal]) -> None:
        self._fail(out, FinishReason.error(Code.STREAM_CLOSED, "SSE payload stream ended without [DONE]"))

    def on_failure(self, error: Exception, out: list[Signal]) -> bool:
        if isinstance(error, StreamFailure):
            aborted = error.failure.code == Code.ABORTED
            self._fail(out, FinishReason("aborted" if aborted else "error", error.failure))
        else:  # a bug, in our code or in a user's operator: say where, with the traceback
            _log.error("an operator raised %s: the response ends with UNKNOWN", type(error).__name__, exc_info=error)
            self._fail(out, FinishReason.error(Code.UNKNOWN, f"{type(error).__name__}: {error}"))
        return True


def close_on_done(limits: Limits | None = None) -> Rule:
    """Block-ends, usage and the finish wait for ``Done``; an unidentified call is refused with ``MALFORMED_TOOL_CALL``
    after the usage, and no block-end is emitted::

        in:   --[start 0, delta]--[usage]--[Done]--|
        out:  --[start 0, delta]--[]-------[end 0, usage, pending finish]|
        in:   --[start 0 tool-call, delta id='' name=None]--[usage]--[Done]--|
        out:  --[start 0 tool-call, delta]-------------------[]------[usage, finish error MALFORMED_TOOL_CALL]|

    Guarantees: nothing closes before ``Done``; at ``Done`` block-ends in opening order, then the last usage, then the
    (pending) finish; usage precedes every finish, error finishes included; a call lacking its id or name at ``Done``
    refuses the whole response (``MALFORMED_TOOL_CALL``, naming the wire index and the missing fields) with no
    block-end (a deliberate choice, docs/decisions/0004-close-on-done.md); ``Halt``, a transport ``StreamFailure``
    (``ABORTED`` as an ``aborted`` finish) or any other upstream error give usage then the error finish; nothing after
    ``Done`` is read.

    Limits (``close_on_done(limits)``): all text and reasoning deltas of the response together, in UTF-8 bytes, are
    bounded by ``limits.max_text_bytes`` (16 MiB); the delta that crosses it is not emitted, the block texts are
    dropped, and the response ends with the usage seen, then ``finish error LIMIT_EXCEEDED`` naming ``max_text_bytes``
    and the count, with no block-end. A ``Halt(LIMIT_EXCEEDED)`` from upstream ends the same way.

    Decision notes: docs/decisions/0004-close-on-done.md, docs/decisions/0014-limits.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _CloseOnDone(chosen))
