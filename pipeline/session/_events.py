"""The session events: one frozen msgspec struct per event type, tagged by ``type``.

A log line is ``{"v":1,"seq":<n>,"type":<event type>,"data":{...}}``; an event class holds ``seq`` and the fields of
``data``, in the order they are written. The shape rules (which fields, of which types, a non-empty call id) are the
types themselves: ``pipeline.session._shape`` decodes ``data`` into them with msgspec's tagged-union decoding. Every
value is immutable, nested content included (tuples, and read-only mappings for an attempt's recorded chunks), so
the events a ``Session`` holds cannot drift from its file (docs/decisions/0011-session-durability.md).

    user/message        UserMessageEvent        id, role "user", source {kind}, content (text parts)
    assistant/message   AssistantMessageEvent   turn, step, message (ModelMessage)
    assistant/attempt   AssistantAttemptEvent   turn, step, attempt, stream (chunk JSON), failure   never replayed
    llm/retry           LlmRetryEvent           turn, step, retry, max_retries, delay_ms, failure
    tool/call           ToolCallEvent           turn, step, call_id, name, [kind,] arguments
    tool/result         ToolResultEvent         turn, step, message (ToolMessage)
    step/end            StepEndEvent            turn, step
    turn/end            TurnEndEvent            turn, reason {kind: stop | error | aborted | max-steps, failure}
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, cast

import msgspec

from operators import chunk_from_dict

from .._json import dumps
from ._values import (
    Counter,
    FailureRecord,
    ModelMessage,
    NonEmptyStr,
    NonNegative,
    Ordinal,
    TextPart,
    ToolMessage,
    TurnEndReason,
    UserSource,
)

__all__ = [
    "EVENT_TYPES",
    "FORMAT_VERSION",
    "AnyEvent",
    "AssistantAttemptEvent",
    "AssistantMessageEvent",
    "InStep",
    "InTurn",
    "LlmRetryEvent",
    "SessionEvent",
    "StepEndEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnEndEvent",
    "UserMessageEvent",
    "event_line",
    "payload",
]

FORMAT_VERSION: Final = 1


# -- events -------------------------------------------------------------------------------------------------------


class SessionEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """One adopted event: ``seq``, the event type (``type``, the class's tag) and its typed fields.

    ``data`` is the ``data`` object of the log line as plain JSON: a fresh copy on every access, so changing it
    changes neither the event nor the history ``Session.messages()`` sends.
    """

    seq: int

    @property
    def type(self) -> str:
        return cast(str, self.__struct_config__.tag)

    @property
    def data(self) -> dict[str, Any]:
        return payload(self)

    def to_dict(self) -> dict[str, Any]:
        return {"v": FORMAT_VERSION, "seq": self.seq, "type": self.type, "data": payload(self)}


class InTurn(SessionEvent, frozen=True, kw_only=True):
    """An event of a turn: every type but ``user/message``."""

    turn: Counter


class InStep(InTurn, frozen=True, kw_only=True):
    """An event of a step of a turn: every type but ``user/message`` and ``turn/end``."""

    step: Counter


class UserMessageEvent(SessionEvent, frozen=True, kw_only=True, tag="user/message"):
    id: NonEmptyStr
    role: Literal["user"]
    source: UserSource
    content: tuple[TextPart, ...]


class AssistantMessageEvent(InStep, frozen=True, kw_only=True, tag="assistant/message"):
    """The committed response of a step."""

    message: ModelMessage


class AssistantAttemptEvent(InStep, frozen=True, kw_only=True, tag="assistant/attempt"):
    """A failed attempt's chunks (as ``to_dict()`` wrote them), kept for the record; never replayed."""

    attempt: Ordinal
    stream: tuple[Mapping[str, Any], ...]
    failure: FailureRecord

    def __post_init__(self) -> None:
        for index, chunk in enumerate(self.stream):
            try:
                chunk_from_dict(chunk)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                why = f"chunk {index} is not a chunk ({exc})"
                raise ValueError(f"assistant/attempt has invalid stream: {why}") from None
        msgspec.structs.force_setattr(self, "stream", tuple(_freeze(chunk) for chunk in self.stream))


class LlmRetryEvent(InStep, frozen=True, kw_only=True, tag="llm/retry"):
    retry: Ordinal
    max_retries: Counter | None = None
    delay_ms: NonNegative
    failure: FailureRecord


class ToolCallEvent(InStep, frozen=True, kw_only=True, omit_defaults=True, tag="tool/call"):
    """A tool call of the same step's ``assistant/message`` is being run. ``kind`` as the call's (decision 0072):
    written only when it is not ``"function"``, so a log written before it reads the same."""

    call_id: NonEmptyStr
    name: NonEmptyStr
    kind: NonEmptyStr = "function"
    arguments: str


class ToolResultEvent(InStep, frozen=True, kw_only=True, tag="tool/result"):
    message: ToolMessage

    @property
    def call_id(self) -> str:
        return self.message.source.call_id


class StepEndEvent(InStep, frozen=True, kw_only=True, tag="step/end"):
    """The step is over: every tool call it recorded has its result."""


class TurnEndEvent(InTurn, frozen=True, kw_only=True, tag="turn/end"):
    reason: TurnEndReason


AnyEvent: TypeAlias = (
    UserMessageEvent
    | AssistantMessageEvent
    | AssistantAttemptEvent
    | LlmRetryEvent
    | ToolCallEvent
    | ToolResultEvent
    | StepEndEvent
    | TurnEndEvent
)
"""The tagged union msgspec decodes an event into."""

EVENT_TYPES: Final = frozenset(cast(str, cls.__struct_config__.tag) for cls in AnyEvent.__args__)


# -- plain JSON ---------------------------------------------------------------------------------------------------


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _enc_hook(value: object) -> Any:
    if isinstance(value, MappingProxyType):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def payload(event: SessionEvent) -> dict[str, Any]:
    """The event's ``data`` object as fresh plain JSON (dicts and lists), fields in the order they are written."""
    fields = msgspec.to_builtins(event, enc_hook=_enc_hook)
    return {key: _plain(value) for key, value in fields.items() if key not in ("type", "seq")}


def event_line(event: SessionEvent) -> bytes:
    """The line the log holds for ``event``: compact JSON, keys ``v``, ``seq``, ``type``, ``data``, then ``\\n``."""
    return dumps(event.to_dict()).encode("utf-8") + b"\n"
