"""One writer at a time: an exclusive ``flock`` on the log file itself (POSIX; Windows locking is a later issue).

The lock is on the log's inode, so two writers through any two paths to the same file (a symlink, a hard link, a
relative path) conflict, and no second file is created or written: a symlink planted at ``<log>.lock`` is never
touched. ``repair`` replaces the log atomically (a new inode), so after taking the lock the holder checks that the
path still names the inode it locked, and locks again if not. The holder's pid in the error message comes from
``/proc/locks`` where there is one. ``fcntl`` is imported only when a lock is taken, so that importing the library
works where it is missing; taking the lock there raises ``SessionError`` saying so
(docs/decisions/0016-session-file-safety.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._errors import SessionError, SessionLockedError

__all__ = ["Lock", "open_regular", "os_error", "same_file"]


def os_error(path: Path, exc: OSError, action: str) -> SessionError:
    """An ``OSError`` worded as a one-line ``SessionError``."""
    reason = exc.strerror or str(exc)
    return SessionError(f"cannot {action} session log {path}: {reason}")


def open_regular(path: Path, flags: int, action: str) -> tuple[int, os.stat_result]:
    """``os.open`` of a regular file (``O_NONBLOCK`` so a FIFO cannot hang the open); ``SessionError`` for a
    directory, a device, a FIFO or any ``OSError``."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise SessionError(f"cannot {action} session log {path}: it is a directory, not a file") from None
    except OSError as exc:
        raise os_error(path, exc, action) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SessionError(f"cannot {action} session log {path}: it is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise SessionError(f"cannot {action} session log {path}: it is not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Lock:
    """An exclusive ``flock`` on the log file, held on a read descriptor until ``release``."""

    def __init__(self, path: Path, fd: int, info: os.stat_result) -> None:
        self.path = path
        self.fd = fd
        self.info = info

    @classmethod
    def acquire(cls, log_path: Path) -> Lock:
        try:
            import fcntl
        except ImportError as exc:
            raise SessionError(
                f"cannot lock {log_path}: a session log needs fcntl.flock for its one-writer lock, and this "
                "platform has no fcntl module (Session.load reads a log without the lock)"
            ) from exc
        for _ in range(8):
            fd, info = open_regular(log_path, os.O_RDONLY, "open")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionLockedError(
                    f"{log_path} is already open by another writer (pid {_holder(info)}); a session log has one "
                    "writer at a time: close the other Session first (Session.load reads it without a lock)"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                current = os.stat(log_path)
            except OSError:
                current = None
            if current is not None and same_file(current, info):
                return cls(log_path, fd, info)
            os.close(fd)  # replaced (by repair) between our open and our flock: lock the new file
        raise SessionError(f"cannot lock {log_path}: the file keeps being replaced while it is being locked")

    def read(self) -> bytes:
        """The whole locked file, read through the locked descriptor (so it is the inode that is locked)."""
        parts: list[bytes] = []
        offset = 0
        while True:
            try:
                part = os.pread(self.fd, 1 << 20, offset)
            except OSError as exc:
                raise os_error(self.path, exc, "read") from None
            if not part:
                return b"".join(parts)
            parts.append(part)
            offset += len(part)

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)  # closing the only descriptor of the open file releases the flock


def _holder(info: os.stat_result) -> str:
    """The pid holding a flock on this inode, from Linux's ``/proc/locks``; ``unknown`` elsewhere."""
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as file:
            for row in file:
                fields = row.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == key and fields[3] == "WRITE":
                    return fields[4]
    except OSError:
        pass
    return "unknown"
