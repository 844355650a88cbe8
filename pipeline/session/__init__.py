"""The durable boundary: the session log (JSON Lines), its rules, check and repair."""

from .._session import (
    RepairReport,
    Session,
    SessionCorruptionError,
    SessionError,
    SessionEvent,
    SessionLockedError,
    SessionState,
    SessionTornTailWarning,
    SessionValidationError,
    SessionWriteError,
    check,
    repair,
)

__all__ = [
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
    "check",
    "repair",
]
