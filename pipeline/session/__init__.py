"""The durable boundary: the session log (JSON Lines), its typed events, its rules, check and repair.

A session is an append-only JSON Lines file, one event per line; ``Session`` is its only writer and holds the events
as immutable values (one class per event type). One function decides whether an event may join a session, on write
and on read alike, so a session this library writes always loads again (docs/decisions/0011-session-durability.md).
"""

from operators.extend import publish as _publish

from ._errors import (
    SessionCorruptionError,
    SessionError,
    SessionLockedError,
    SessionTornTailWarning,
    SessionValidationError,
    SessionWriteError,
)
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
from ._history import NOT_RUN_TOOL_RESULT
from ._repair import RepairReport, check, repair
from ._rules import SessionState
from ._session import INTERRUPTED_TOOL_RESULT, Session

__all__ = [
    "INTERRUPTED_TOOL_RESULT",
    "NOT_RUN_TOOL_RESULT",
    "AssistantAttemptEvent",
    "AssistantMessageEvent",
    "LlmRetryEvent",
    "RepairReport",
    "Session",
    "SessionCorruptionError",
    "SessionError",
    "SessionEvent",
    "SessionLockedError",
    "SessionState",
    "SessionTornTailWarning",
    "SessionValidationError",
    "SessionWriteError",
    "StepEndEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnEndEvent",
    "UserMessageEvent",
    "check",
    "repair",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
