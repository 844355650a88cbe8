"""The typed appends: one method per event type, building the ``data`` object ``Session.append`` validates.

They take protocol values where the pipeline has them (``TextBlock`` / ``ToolCallBlock``, ``Usage``, ``FinishReason``,
``Failure``, chunks) or their JSON, and return the typed event that was recorded. Every one of them goes through
``append``, so through the one ``validate_event`` (docs/decisions/0011-session-durability.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, cast

from .._json import SupportsToDict
from ._events import (
    AssistantAttemptEvent,
    AssistantMessageEvent,
    LlmRetryEvent,
    SessionEvent,
    StepEndEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)

__all__ = ["JsonLike", "TypedAppends"]

JsonLike: TypeAlias = Mapping[str, Any] | SupportsToDict
"""Decoded JSON, or a protocol value (``Failure``, ``FinishReason``, ``Usage``, a block or a chunk)."""

_E = TypeVar("_E", bound=SessionEvent)


class TypedAppends:
    """The ``append_*`` methods of ``Session``, over its ``append``."""

    def append(self, event_type: str, data: Mapping[str, Any]) -> SessionEvent:
        raise NotImplementedError

    def append_user_message(self, text: str, *, id: str | None = None) -> UserMessageEvent:
        message = {"id": _id(id), "role": "user", "source": {"kind": "user"}, "content": [_text(text)]}
        return self._append(UserMessageEvent, message)

    def append_assistant_message(
        self,
        turn: int,
        step: int,
        *,
        content: Sequence[JsonLike],
        provider: str,
        model: str,
        usage: JsonLike | None,
        finish: JsonLike,
        id: str | None = None,
    ) -> AssistantMessageEvent:
        """The committed response of a step. ``content`` holds block JSON or ``TextBlock`` / ``ReasoningBlock``
        / ``ToolCallBlock`` values; ``usage`` a ``Usage``; ``finish`` a ``FinishReason``."""
        message = {
            "id": _id(id),
            "role": "assistant",
            "source": {"kind": "model", "provider": provider, "model": model},
            "content": [_as_json(block) for block in content],
            "usage": None if usage is None else _as_json(usage),
            "finish": _as_json(finish),
        }
        return self._append(AssistantMessageEvent, {"turn": turn, "step": step, "message": message})

    def append_attempt(
        self, turn: int, step: int, attempt: int, stream: Sequence[JsonLike], failure: JsonLike
    ) -> AssistantAttemptEvent:
        """A failed attempt's chunks, kept for the record. Never replayed, and its tool calls never run."""
        chunks = [_as_json(chunk) for chunk in stream]
        data = {"turn": turn, "step": step, "attempt": attempt, "stream": chunks, "failure": _as_json(failure)}
        return self._append(AssistantAttemptEvent, data)

    def append_retry(
        self, turn: int, step: int, retry: int, max_retries: int | None, delay_ms: float, failure: JsonLike
    ) -> LlmRetryEvent:
        data = {
            "turn": turn,
            "step": step,
            "retry": retry,
            "max_retries": max_retries,
            "delay_ms": delay_ms,
            "failure": _as_json(failure),
        }
        return self._append(LlmRetryEvent, data)

    def append_tool_call(
        self, turn: int, step: int, call_id: str, name: str, arguments: str, *, kind: str = "function"
    ) -> ToolCallEvent:
        """Records that a tool call of this step's ``assistant/message`` is being run; ``kind`` is the call's
        (``ToolCallBlock.kind``, decision 0072), written only when it is not ``"function"``.

        Refuses an empty, non-string or unknown ``call_id``, and a name or kind other than the call's, with
        ``SessionWriteError``.
        """
        data: dict[str, Any] = {"turn": turn, "step": step, "call_id": call_id, "name": name}
        if kind != "function":
            data["kind"] = kind
        data["arguments"] = arguments
        return self._append(ToolCallEvent, data)

    def append_tool_result(
        self, turn: int, step: int, call_id: str, text: str, *, is_error: bool = False, id: str | None = None
    ) -> ToolResultEvent:
        """Records a recorded tool call's result. Refuses an empty, non-string or unpaired ``call_id``."""
        result = {"type": "tool-result", "tool_call_id": call_id, "content": [_text(text)], "is_error": is_error}
        message = {"id": _id(id), "role": "user", "source": {"kind": "tool", "call_id": call_id}, "content": [result]}
        return self._append(ToolResultEvent, {"turn": turn, "step": step, "message": message})

    def append_step_end(self, turn: int, step: int) -> StepEndEvent:
        return self._append(StepEndEvent, {"turn": turn, "step": step})

    def append_turn_end(self, turn: int, reason: JsonLike) -> TurnEndEvent:
        return self._append(TurnEndEvent, {"turn": turn, "reason": _as_json(reason)})

    def _append(self, kind: type[_E], data: Mapping[str, Any]) -> _E:
        return cast(_E, self.append(cast(str, kind.__struct_config__.tag), data))


def _id(id: str | None) -> str:
    return f"msg_{uuid.uuid4().hex}" if id is None else id


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _as_json(value: JsonLike) -> Any:
    return value.to_dict() if isinstance(value, SupportsToDict) else value
