"""``classify_finish``: the wire ``finish_reason`` to a FinishReason, and the EMPTY_RESPONSE refusal.

Rule (docs/decisions/0005-classify-finish.md):

    stop (or none at all)  -> stop, unless no block was ever opened: then error EMPTY_RESPONSE
    tool_calls             -> tool-calls      (function_call, the legacy name, too)
    length                 -> max-tokens
    content_filter         -> error CONTENT_FILTER  "model stopped: content_filter"
    anything else X        -> error X upper-cased    "model stopped: X"

A reasoning block is content (a reasoning-only answer stays ``stop``), but an empty first ``reasoning_content: ""``
opened no block (``coalesce_identity``), so it does not save a stream from EMPTY_RESPONSE. Non-stop finishes are never
rewritten, even with zero blocks. A stream whose model answered in ``delta.refusal`` ends with error ``REFUSAL``
carrying the refusal text. The usage was already emitted before the finish, so the refusal comes after the attempt's
billed usage.

The marble diagram is on the factory: ``help(operators.classify_finish)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

import re
from typing import Any

from ._chunk_values import FinishReason
from ._chunks import BlockStart, Finish
from ._codes import Code
from ._signals import PendingFinish, RefusalSeen, Rule, Signal
from ._stage import BaseStage, Batch, stage_operator

__all__ = ["EMPTY_RESPONSE_MESSAGE", "classify_finish", "map_finish_reason"]

EMPTY_RESPONSE_MESSAGE = "model returned a completed response with no content"

_SIMPLE = {
    "stop": FinishReason("stop"),
    "tool_calls": FinishReason("tool-calls"),
    "function_call": FinishReason("tool-calls"),
    "length": FinishReason("max-tokens"),
}


def map_finish_reason(wire: str | None) -> FinishReason:
    """``None`` (no finish_reason ever arrived) means stop (docs/decisions/0005-classify-finish.md)."""
    if wire is None:
        return _SIMPLE["stop"]
    simple = _SIMPLE.get(wire)
    if simple is not None:
        return simple
    if wire == "content_filter":
        return FinishReason.error(Code.CONTENT_FILTER, "model stopped: content_filter")
    code = re.sub(r"[^A-Z0-9]+", "_", wire.upper()).strip("_") or "UNKNOWN_FINISH_REASON"
    return FinishReason.error(code, f"model stopped: {wire}")


class _ClassifyFinish(BaseStage[Batch[Signal], Signal]):
    def __init__(self) -> None:
        self.finished = False
        self.opened = False
        self.refusal: list[str] = []

    def on_batch(self, batch: Batch[Signal], out: list[Signal]) -> None:
        item: Any  # dispatched on type(item) below, the fastest test (decision 0008)
        for item in batch:
            kind = type(item)
            if kind is PendingFinish:
                out.append(Finish(self._classify(item.wire_reason)))
            elif kind is RefusalSeen:
                self.refusal.append(item.text)
            else:
                if kind is BlockStart:
                    self.opened = True
                out.append(item)

    def _classify(self, wire: str | None) -> FinishReason:
        if self.refusal:
            return FinishReason.error(Code.REFUSAL, "".join(self.refusal))
        reason = map_finish_reason(wire)
        if reason.kind == "stop" and not self.opened:
            return FinishReason.error(Code.EMPTY_RESPONSE, EMPTY_RESPONSE_MESSAGE)
        return reason


def classify_finish() -> Rule:
    """The wire ``finish_reason`` to a ``FinishReason``; a stop without any block is ``EMPTY_RESPONSE``::

        in:   --[usage, pending 'stop']--|     (no block opened)
        out:  --[usage, finish error EMPTY_RESPONSE]|

    Guarantees: ``stop`` (or none) ``stop``, ``tool_calls``/``function_call`` ``tool-calls``, ``length`` ``max-tokens``,
    ``content_filter`` error ``CONTENT_FILTER``, anything else an upper-cased error code; a ``stop`` with no block ever
    opened is ``EMPTY_RESPONSE`` (reasoning counts as content); a model that answered in ``delta.refusal`` ends with
    error ``REFUSAL`` carrying the text; usage stays before the finish.

    Decision note: docs/decisions/0005-classify-finish.md.
    """
    return stage_operator(_ClassifyFinish)
