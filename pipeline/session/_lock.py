"""One writer at a time: an exclusive OS lock on the log file itself, behind one function pair (``Locking``).

The lock is on the log's file, never on a second file, so two writers through any two paths to the same file (a
symlink, a hard link, a relative path) conflict, and nothing beside the log is created or written: a symlink
planted at ``<log>.lock`` is never touched. ``repair`` replaces the log atomically (a new inode), so after taking
the lock the holder checks that the path still names the file it locked, and locks again if not.

How the OS lock is taken is chosen once, by ``locking_for(os.name)`` (docs/decisions/0021-portable-session-lock.md):

- POSIX: ``flock(LOCK_EX | LOCK_NB)`` on the descriptor (per open file, so two ``Session`` objects in one process
  conflict too; closing the descriptor releases it). The holder's pid in the error message comes from
  ``/proc/locks`` where there is one (docs/decisions/0016-session-file-safety.md).
- Windows: ``msvcrt.locking(LK_NBLCK)`` of ``WINDOWS_LOCK_LENGTH`` byte at ``WINDOWS_LOCK_OFFSET`` (1 TiB), a byte
  range no session log reaches. Windows range locks are mandatory: a lock on the log's real bytes would block every
  other reader and even this process's own append descriptor, so the range sits far past the data, where only another
  writer's lock attempt ever meets it. It is unlocked explicitly before the descriptor is closed.

``fcntl`` / ``msvcrt`` are imported only when a lock is taken, so importing the library works anywhere.
"""

from __future__ import annotations

import errno
import importlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ._errors import SessionError, SessionLockedError

__all__ = [
    "CLOEXEC",
    "NOFOLLOW",
    "WINDOWS_LOCK_LENGTH",
    "WINDOWS_LOCK_OFFSET",
    "Lock",
    "Locking",
    "locking_for",
    "open_regular",
    "os_error",
    "same_file",
]

WINDOWS_LOCK_OFFSET = 1 << 40
"""Where the Windows lock byte sits: 1 TiB, beyond any real session log, and a file position every common file
system accepts (NTFS and ext4 allow 16 TiB files), so seeking there never fails for the offset's sake."""

WINDOWS_LOCK_LENGTH = 1
"""One byte: enough for two writers to conflict, and nothing a reader of the log ever reads."""


@attrs.frozen
class Locking:
    """The OS lock behind one function pair: ``try_lock(fd)`` is True when taken, False when another descriptor
    holds it (any other ``OSError`` propagates); ``unlock(fd)`` releases it before the descriptor is closed."""

    name: str
    try_lock: Callable[[int], bool]
    unlock: Callable[[int], None]


def _module(name: str) -> Any:
    """``fcntl`` or ``msvcrt``, imported at each lock (``Any``: typeshed hides each on the other platform); an
    ``ImportError`` here becomes the ``SessionError`` of ``Lock.acquire``."""
    return importlib.import_module(name)


def _flock_try(fd: int) -> bool:
    fcntl = _module("fcntl")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _flock_unlock(fd: int) -> None:
    fcntl = _module("fcntl")
    fcntl.flock(fd, fcntl.LOCK_UN)


_HELD_ERRNOS = frozenset({errno.EACCES, errno.EDEADLK})  # what msvcrt.locking reports for a range held elsewhere


def _msvcrt_try(fd: int) -> bool:
    msvcrt = _module("msvcrt")
    os.lseek(fd, WINDOWS_LOCK_OFFSET, os.SEEK_SET)  # msvcrt.locking locks from the current position
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, WINDOWS_LOCK_LENGTH)
    except OSError as exc:
        if exc.errno in _HELD_ERRNOS:
            return False
        raise
    return True


def _msvcrt_unlock(fd: int) -> None:
    msvcrt = _module("msvcrt")
    os.lseek(fd, WINDOWS_LOCK_OFFSET, os.SEEK_SET)
    msvcrt.locking(fd, msvcrt.LK_UNLCK, WINDOWS_LOCK_LENGTH)


POSIX_LOCKING = Locking("fcntl.flock", _flock_try, _flock_unlock)
WINDOWS_LOCKING = Locking("msvcrt.locking", _msvcrt_try, _msvcrt_unlock)


def locking_for(os_name: str) -> Locking:
    """The lock for an ``os.name``: ``msvcrt.locking`` for ``"nt"``, ``flock`` for everything else."""
    return WINDOWS_LOCKING if os_name == "nt" else POSIX_LOCKING


LOCKING = locking_for(os.name)
"""The lock this process uses (``Lock.acquire`` reads it at each call)."""

_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation on the raw descriptor
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX: a FIFO cannot hang the open
CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
"""``O_CLOEXEC`` where there is one (Windows descriptors are not inherited by default)."""
NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
"""``O_NOFOLLOW`` where there is one; 0 on Windows, where ``os.open`` has no such flag."""


def os_error(path: Path, exc: OSError, action: str) -> SessionError:
    """An ``OSError`` worded as a one-line ``SessionError``."""
    reason = exc.strerror or str(exc)
    return SessionError(f"cannot {action} session log {path}: {reason}")


def open_regular(path: Path, flags: int, action: str) -> tuple[int, os.stat_result]:
    """``os.open`` of a regular file (``O_NONBLOCK`` where there is one, so a FIFO cannot hang the open; binary on
    Windows); ``SessionError`` for a directory, a device, a FIFO or any ``OSError``."""
    try:
        fd = os.open(path, flags | CLOEXEC | _BINARY | _NONBLOCK)
    except IsADirectoryError:
        raise SessionError(f"cannot {action} session log {path}: it is a directory, not a file") from None
    except PermissionError as exc:
        if path.is_dir():  # Windows refuses to open a directory with EACCES
            raise SessionError(f"cannot {action} session log {path}: it is a directory, not a file") from None
        raise os_error(path, exc, action) from None
    except OSError as exc:
        raise os_error(path, exc, action) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SessionError(f"cannot {action} session log {path}: it is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise SessionError(f"cannot {action} session log {path}: it is not a regular file")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Lock:
    """An exclusive lock on the log file (``LOCKING``), held on a read descriptor until ``release``."""

    def __init__(self, path: Path, fd: int, info: os.stat_result, locking: Locking) -> None:
        self.path = path
        self.fd = fd
        self.info = info
        self.locking = locking

    @classmethod
    def acquire(cls, log_path: Path) -> Lock:
        locking = LOCKING
        for _ in range(8):
            fd, info = open_regular(log_path, os.O_RDONLY, "open")
            try:
                taken = locking.try_lock(fd)
            except ImportError as exc:
                os.close(fd)
                raise SessionError(
                    f"cannot lock {log_path}: a session log needs {locking.name} for its one-writer lock, and this "
                    "platform does not offer it (Session.load reads a log without the lock)"
                ) from exc
            except OSError as exc:
                os.close(fd)
                raise os_error(log_path, exc, "lock") from None
            except BaseException:
                os.close(fd)
                raise
            if not taken:
                os.close(fd)
                raise SessionLockedError(
                    f"{log_path} is already open by another writer (pid {_holder(info)}); a session log has one "
                    "writer at a time: close the other Session first (Session.load reads it without a lock)"
                )
            try:
                current = os.stat(log_path)
            except OSError:
                current = None
            if current is not None and same_file(current, info):
                return cls(log_path, fd, info, locking)
            _unlock_and_close(fd, locking)  # replaced (by repair) between our open and our lock: lock the new file
        raise SessionError(f"cannot lock {log_path}: the file keeps being replaced while it is being locked")

    def read(self) -> bytes:
        """The whole locked file, read through the locked descriptor (so it is the file that is locked)."""
        try:
            return _read_all(self.fd)
        except OSError as exc:
            raise os_error(self.path, exc, "read") from None

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            _unlock_and_close(fd, self.locking)


def _unlock_and_close(fd: int, locking: Locking) -> None:
    """Unlocks explicitly (Windows releases a lock left at close only "eventually"), then closes."""
    try:
        locking.unlock(fd)
    except OSError:
        pass  # closing the descriptor releases the lock anyway
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    """From offset 0 to the end: ``pread`` where there is one, else seek and read (the Windows lock moved the
    position)."""
    parts: list[bytes] = []
    offset = 0
    pread = getattr(os, "pread", None)
    if pread is None:
        os.lseek(fd, 0, os.SEEK_SET)
    while True:
        part = pread(fd, 1 << 20, offset) if pread is not None else os.read(fd, 1 << 20)
        if not part:
            return b"".join(parts)
        parts.append(part)
        offset += len(part)


def _holder(info: os.stat_result) -> str:
    """The pid holding a flock on this inode, from Linux's ``/proc/locks``; ``unknown`` elsewhere."""
    major, minor = getattr(os, "major", None), getattr(os, "minor", None)
    if major is None or minor is None:
        return "unknown"
    key = f"{major(info.st_dev):02x}:{minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as file:
            for row in file:
                fields = row.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == key and fields[3] == "WRITE":
                    return fields[4]
    except OSError:
        pass
    return "unknown"
