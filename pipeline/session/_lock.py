"""One writer at a time: an exclusive ``flock`` on a sibling ``<log>.lock`` file.

A sibling, not the log itself, so that ``repair``'s atomic replace of the log cannot sidestep the lock. The lock file
holds the owner's pid for the error message. ``fcntl`` is imported only when a lock is taken, so that importing the
library works where it is missing; taking the lock there raises ``SessionError`` saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._errors import SessionError, SessionLockedError
from ._file import FILE_MODE

__all__ = ["Lock"]


class Lock:
    """An exclusive ``flock`` on ``<log>.lock``, held until ``release``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def acquire(cls, log_path: Path) -> Lock:
        try:
            import fcntl
        except ImportError as exc:
            raise SessionError(
                f"cannot lock {log_path}: a session log needs fcntl.flock for its one-writer lock, and this "
                "platform has no fcntl module (Session.load reads a log without the lock)"
            ) from exc
        lock_path = log_path.with_name(log_path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise SessionLockedError(
                f"{log_path} is already open by another writer (pid {holder}); a session log has one writer at "
                "a time: close the other Session first (Session.load reads it without a lock)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:
            pass  # the pid is only a courtesy for the error message
        return cls(fd)

    def release(self) -> None:
        if self._fd >= 0:
            import fcntl

            fd, self._fd = self._fd, -1
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
