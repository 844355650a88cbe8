"""Internal signals: what the operators tell each other between stages.

The public output is the chunk protocol (``_chunks.py``). Between stages a few more values travel beside the chunks;
none of them reaches the caller (the facade keeps only chunks):

    parse_sse            -> WireChunk, Done, Halt, Anomaly   (Messages, Responses and Gemini also ReasoningEnd;
                            Gemini also ToolCallSignature, passed on to close_on_done)
    coalesce_identity    -> BlockStart, TextDelta, ReasoningDelta, ToolFragment, FinishSeen, UsageSeen, RefusalSeen,
                            ReasoningSeal
    accumulate_arguments -> ToolCallDelta (for each ToolFragment), ToolCallState (each call, just before Done)
    close_on_done        -> BlockEnd..., UsageChunk, PendingFinish | Finish(error)   (all held until Done / Halt)
    classify_finish      -> Finish                                            (PendingFinish and RefusalSeen consumed)

Every stage passes on what it does not understand, so a custom operator can be slotted in anywhere.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from ._chunk_values import Failure, Usage
from ._chunks import Chunk
from ._exceptions import LlmStreamError
from ._stage import Batch, Operator
from ._wire import WireChunk

__all__ = [
    "Done",
    "FinishSeen",
    "Halt",
    "IdRefusal",
    "PendingFinish",
    "ReasoningEnd",
    "ReasoningSeal",
    "RefusalSeen",
    "Rule",
    "Signal",
    "StreamFailure",
    "ToolCallSignature",
    "ToolCallState",
    "ToolFragment",
    "UsageSeen",
]


@attrs.frozen
class Done:
    """The response is complete: ``[DONE]`` arrived, or the bytes ended after a ``finish_reason``."""

    synthetic: bool = False


@attrs.frozen
class Halt:
    """The response cannot complete: the stream ends here with ``failure`` (after any pending usage)."""

    failure: Failure


@attrs.frozen
class IdRefusal:
    """A non-empty wire id refused because another call of the response already owns it (``duplicate-id``)."""

    id: str
    owner_index: int
    """The block index of the call that owns the id."""
    owner_wire_index: int | None

    def describe(self) -> str:
        """``its id 'a' was refused: the tool call at wire index 1 (block 2) owns it``."""
        where = f"wire index {self.owner_wire_index}" if self.owner_wire_index is not None else "no wire index"
        return f"its id {self.id!r} was refused: the tool call at {where} (block {self.owner_index}) owns it"


@attrs.frozen
class ToolFragment:
    """One wire tool-call delta, correlated to its block, with the identity established so far."""

    index: int
    wire_index: int | None
    id: str | None
    name: str | None
    arguments: Any  # the raw wire value: str, None, or UNSET
    refused: IdRefusal | None = None
    """Set on the fragment whose wire id was refused as another call's (the call's ``id`` stays as it was)."""
    kind: str = "function"
    """The call's ``ToolCallKind``, fixed by its first fragment (docs/decisions/0072-client-run-tool-calls.md)."""


@attrs.frozen
class ToolCallState:
    """A tool call as accumulated when ``Done`` arrives: identity may still be missing."""

    index: int
    wire_index: int | None
    id: str | None
    name: str | None
    arguments: str
    refused: IdRefusal | None = None
    """The last wire id refused for this call because another call owns it, if any."""
    kind: str = "function"
    """The call's ``ToolCallKind`` (docs/decisions/0072-client-run-tool-calls.md)."""

    @property
    def missing(self) -> tuple[str, ...]:
        """The identity fields still unknown: ``()``, ``("id",)``, ``("name",)`` or both."""
        return tuple(field for field, value in (("id", self.id), ("name", self.name)) if value is None)


@attrs.frozen
class FinishSeen:
    """A wire ``finish_reason`` string (the last one wins)."""

    reason: str


@attrs.frozen
class UsageSeen:
    """A wire usage object, already mapped (the last one wins)."""

    usage: Usage


@attrs.frozen
class RefusalSeen:
    """A fragment of ``delta.refusal``: the model declined instead of answering."""

    text: str


@attrs.frozen
class ReasoningEnd:
    """A parser's word that the reasoning segment ends here (a Messages ``thinking`` or ``redacted_thinking`` block
    stopped, a Responses reasoning item done), with what the provider needs back, each None or a non-empty string
    (docs/decisions/0028-reasoning-round-trip.md). Reasoning after it opens a new reasoning block."""

    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None


@attrs.frozen
class ReasoningSeal:
    """``coalesce_identity``'s: reasoning block ``index`` carries these; ``close_on_done`` puts them on its
    ``ReasoningBlock``."""

    index: int
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None


@attrs.frozen
class ToolCallSignature:
    """A parser's: the tool call at wire index ``wire_index`` carries ``signature`` (a non-empty string: Gemini's
    ``thoughtSignature`` on a ``functionCall`` part, decision 0071), which the provider needs back; ``close_on_done``
    puts it on the call's ``ToolCallBlock``. The other rules pass it on."""

    wire_index: int
    signature: str


@attrs.frozen
class PendingFinish:
    """The response completed; ``classify_finish`` turns the wire reason into a FinishReason."""

    wire_reason: str | None


class StreamFailure(LlmStreamError):
    """A signal, not a public exception: sent through ``on_error`` by a source (the HTTP transport) that knows why
    the response failed; it never reaches the caller.

    ``close_on_done`` turns it into an error finish carrying ``failure`` (an aborted finish for ``ABORTED``), after
    the pending usage; any other exception becomes ``UNKNOWN``.
    """

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"{failure.code}: {failure.message}")
        self.failure = failure


Signal: TypeAlias = (
    Chunk
    | WireChunk
    | Done
    | Halt
    | ToolFragment
    | ToolCallState
    | FinishSeen
    | UsageSeen
    | RefusalSeen
    | PendingFinish
    | ReasoningEnd
    | ReasoningSeal
    | ToolCallSignature
)
"""Anything that travels between two rule operators: the public chunks and the internal signals above."""

Rule: TypeAlias = Operator[Batch[Signal], Batch[Signal]]
"""A rule operator (``coalesce_identity`` ... ``retry_when_retryable``, and a custom stage placed among them)."""
