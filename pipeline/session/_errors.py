"""What the session log raises, and the one warning it gives.

LlmStreamError (operators)
└── SessionError ................ the session log refused something
    ├── SessionValidationError .. an event breaks a rule; ``reason`` is the rule's message
    ├── SessionWriteError ....... an append was refused or the write failed; nothing was recorded
    ├── SessionCorruptionError .. a stored event breaks a rule: the log cannot be loaded (``line``, ``seq``,
    │                             ``reason``); ``check()`` lists every fault, ``repair()`` quarantines them
    └── SessionLockedError ...... another writer holds the log

SessionTornTailWarning (UserWarning): the last line was incomplete and was set aside.
"""

from __future__ import annotations

from pathlib import Path

from operators import LlmStreamError

__all__ = [
    "SessionCorruptionError",
    "SessionError",
    "SessionLockedError",
    "SessionTornTailWarning",
    "SessionValidationError",
    "SessionWriteError",
]


class SessionError(LlmStreamError):
    """Base class of every session log error."""


class SessionValidationError(SessionError):
    """An event breaks a session rule. ``reason`` is the full message, prefixed by the event's subject."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionWriteError(SessionError):
    """An append was refused (the event breaks a rule) or the write failed. Nothing was recorded."""


class SessionCorruptionError(SessionError):
    """A stored event breaks a session rule, so the log cannot be loaded."""

    def __init__(self, path: Path, line: int, seq: int | None, reason: str) -> None:
        seq_text = "unknown" if seq is None else str(seq)
        super().__init__(
            f"{path}: line {line}, seq {seq_text}: {reason}. The session cannot be loaded; "
            "check() lists every fault and repair() moves the broken turns to a quarantine file."
        )
        self.path = path
        self.line = line
        self.seq = seq
        self.reason = reason


class SessionLockedError(SessionError):
    """Another writer holds the session log."""


class SessionTornTailWarning(UserWarning):
    """The log's last line is incomplete (a write interrupted by a crash); it was ignored."""
