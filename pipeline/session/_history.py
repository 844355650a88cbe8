"""From the session's events to the chat history of the next request, in OpenAI chat format.

``assistant/attempt`` and ``llm/retry`` are never included, nor is reasoning text: a retried request carries exactly
the messages of the refused one (docs/decisions/0011-session-durability.md). The reasoning blocks that carry what
the provider needs back (a signature, encrypted reasoning, a reasoning item id) are, under ``reasoning_blocks``: the
request builders send them back to the Messages and Responses APIs (docs/decisions/0028-reasoning-round-trip.md). An
assistant message has ``tool_calls`` only when it called tools (the API refuses an empty list) and ``content`` None
only then. A tool call of a closed step that was never run gets, in this replay only, the answer
``NOT_RUN_TOOL_RESULT``: the API refuses a history where a tool call has no answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from .._assistant_turn import assistant_message
from ._events import AssistantMessageEvent, SessionEvent, StepEndEvent, ToolResultEvent, TurnEndEvent, UserMessageEvent
from ._values import AssistantPart, ReasoningPart, TextPart

__all__ = ["NOT_RUN_TOOL_RESULT", "history"]

NOT_RUN_TOOL_RESULT: Final = "not run: the tool call was not executed"
"""What ``Session.messages`` answers, in the replay only, for a tool call of a closed step that was never run."""


def history(events: Iterable[SessionEvent]) -> list[dict[str, Any]]:
    """The messages ``events`` say the model has seen and answered, as fresh dicts."""
    out: list[dict[str, Any]] = []
    unanswered: dict[tuple[int, int], list[str]] = {}
    for event in events:
        if isinstance(event, UserMessageEvent):
            out.append({"role": "user", "content": _text_of(event.content)})
        elif isinstance(event, AssistantMessageEvent):
            calls = event.message.tool_calls
            reasoning = [msgspec.to_builtins(part) for part in event.message.content
                         if isinstance(part, ReasoningPart) and part.opaque]
            out.append(assistant_message(_text_of(event.message.content), calls, reasoning))
            unanswered[(event.turn, event.step)] = [call.id for call in calls]
        elif isinstance(event, ToolResultEvent):
            result = event.message.content[0]
            out.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": _text_of(result.content)})
            pending = unanswered.get((event.turn, event.step), [])
            if result.tool_call_id in pending:
                pending.remove(result.tool_call_id)
        elif isinstance(event, StepEndEvent | TurnEndEvent):
            closing = [
                key
                for key in unanswered
                if key[0] == event.turn and (isinstance(event, TurnEndEvent) or key[1] == event.step)
            ]
            for key in closing:
                for missing in unanswered.pop(key):
                    out.append({"role": "tool", "tool_call_id": missing, "content": NOT_RUN_TOOL_RESULT})
    return out


def _text_of(parts: Iterable[AssistantPart]) -> str:
    return "".join(part.text for part in parts if isinstance(part, TextPart))
