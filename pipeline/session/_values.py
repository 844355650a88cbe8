"""The values inside session events: content parts, sources, usage, failures, reasons and messages.

Frozen msgspec structs whose fields and constraints are the shape rules of the log format
(docs/decisions/0011-session-durability.md): a tool call's ``id``, ``name`` and ``kind`` are non-empty, a counter is a
non-negative integer, a failure accompanies exactly the ``error`` and ``aborted`` kinds. Their JSON is what the
protocol values' ``to_dict()`` writes (``Usage``, ``Failure``, ``FinishReason``, the blocks), keys in the same order.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

import msgspec

__all__ = [
    "AssistantPart",
    "Counter",
    "FailureRecord",
    "FinishRecord",
    "ModelMessage",
    "ModelSource",
    "NonEmptyStr",
    "NonNegative",
    "Ordinal",
    "ReasoningPart",
    "TextPart",
    "ToolCallPart",
    "ToolMessage",
    "ToolResultPart",
    "ToolSource",
    "TurnEndReason",
    "UsageRecord",
    "UserSource",
]

NonEmptyStr: TypeAlias = Annotated[str, msgspec.Meta(min_length=1)]
Counter: TypeAlias = Annotated[int, msgspec.Meta(ge=0)]
Ordinal: TypeAlias = Annotated[int, msgspec.Meta(ge=1)]
Number: TypeAlias = int | float
"""A JSON number: an int stays an int (``2000`` is written back as ``2000``, not ``2000.0``); never a bool."""
NonNegative: TypeAlias = Annotated[int, msgspec.Meta(ge=0)] | Annotated[float, msgspec.Meta(ge=0)]

_KINDS_WITH_FAILURE: Final = frozenset({"error", "aborted"})


# -- content parts ------------------------------------------------------------------------------------------------


class TextPart(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    text: str


class ReasoningPart(msgspec.Struct, frozen=True, omit_defaults=True, tag_field="type", tag="reasoning"):
    """``ReasoningBlock.to_dict()``: the opaque parts a provider needs back are absent or non-empty
    (docs/decisions/0028-reasoning-round-trip.md)."""

    text: str
    signature: NonEmptyStr | None = None
    encrypted: NonEmptyStr | None = None
    item_id: NonEmptyStr | None = None

    @property
    def opaque(self) -> bool:
        return self.signature is not None or self.encrypted is not None or self.item_id is not None


class ToolCallPart(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type", tag="tool-call"):
    """A tool call the model made: ``ToolCallBlock.to_dict()``. Its ``id`` and ``name`` are never empty; ``kind`` is
    what the client runs (docs/decisions/0072-client-run-tool-calls.md), a non-empty string, absent from the JSON when
    ``"function"`` (a log written before it reads as function calls); ``signature`` is what the provider needs back
    with it (Gemini's ``thoughtSignature``, docs/decisions/0071-gemini-format.md), absent from the JSON when None (a
    log written before it reads the same)."""

    id: NonEmptyStr
    name: NonEmptyStr
    kind: NonEmptyStr = "function"
    arguments: str
    signature: NonEmptyStr | None = None


AssistantPart: TypeAlias = TextPart | ReasoningPart | ToolCallPart


class ToolResultPart(msgspec.Struct, frozen=True, tag_field="type", tag="tool-result"):
    tool_call_id: str
    content: tuple[TextPart, ...]
    is_error: bool


# -- sources, usage, failures, reasons ----------------------------------------------------------------------------


class UserSource(msgspec.Struct, frozen=True):
    kind: NonEmptyStr


class ModelSource(msgspec.Struct, frozen=True):
    kind: Literal["model"]
    provider: NonEmptyStr
    model: NonEmptyStr


class ToolSource(msgspec.Struct, frozen=True):
    kind: Literal["tool"]
    call_id: NonEmptyStr


class UsageRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """``Usage.to_dict()``: the counts that are not known are left out (the input and output counts too, when the
    provider gave none the library could read: decision 0046)."""

    input_tokens: Number | None = None
    output_tokens: Number | None = None
    total_tokens: Number | None = None
    cache_read_tokens: Number | None = None
    cache_write_tokens: Number | None = None
    reasoning_tokens: Number | None = None


class FailureRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """``Failure.to_dict()``."""

    code: NonEmptyStr
    message: str
    status: int | None = None
    retry_after_ms: Number | None = None
    """Whole milliseconds since 0.2; a float written by 0.1 still loads."""
    request_id: str | None = None
    should_retry: bool | None = None


def _check_failure(kind: str, failure: FailureRecord | None, text: str) -> None:
    if (kind in _KINDS_WITH_FAILURE) != (failure is not None):
        raise ValueError(text)


class FinishRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """``FinishReason.to_dict()``: a failure exactly for ``error`` and ``aborted``."""

    kind: Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]
    failure: FailureRecord | None = None

    def __post_init__(self) -> None:
        _check_failure(self.kind, self.failure, f"message has invalid finish: {self.kind} with{_out(self)} a failure")


class TurnEndReason(msgspec.Struct, frozen=True, omit_defaults=True):
    """Why a turn ended: a failure exactly for ``error`` and ``aborted``."""

    kind: Literal["stop", "error", "aborted", "max-steps"]
    failure: FailureRecord | None = None

    def __post_init__(self) -> None:
        _check_failure(self.kind, self.failure, f"turn/end has invalid reason: {self.kind} with{_out(self)} a failure")


def _out(reason: FinishRecord | TurnEndReason) -> str:
    return "out" if reason.failure is None else ""


# -- messages -----------------------------------------------------------------------------------------------------


class ModelMessage(msgspec.Struct, frozen=True, kw_only=True):
    """An assistant message: no two tool calls share an id."""

    id: NonEmptyStr
    role: Literal["assistant"]
    source: ModelSource
    content: tuple[AssistantPart, ...]
    usage: UsageRecord | None = None
    finish: FinishRecord

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for part in self.tool_calls:
            if part.id in seen:
                raise ValueError(f"message has invalid content: duplicate tool call id {part.id}")
            seen.add(part.id)

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(part for part in self.content if isinstance(part, ToolCallPart))


class ToolMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A tool's answer: one tool-result part naming the same call as the source."""

    id: NonEmptyStr
    role: Literal["user"]
    source: ToolSource
    content: tuple[ToolResultPart]

    def __post_init__(self) -> None:
        if self.content[0].tool_call_id != self.source.call_id:
            raise ValueError("message has mismatched tool call ids")
