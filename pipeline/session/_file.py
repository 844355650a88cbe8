"""The JSON Lines file and its durability: whole-line appends, fsync, rollback, torn-tail detection, atomic replace.

Each append is a single ``os.write`` of whole lines on an ``O_APPEND`` descriptor, followed by ``os.fsync``; a failed
or short write is cut back with ``ftruncate``. A crash can therefore leave only the last line incomplete, and
``split_lines`` tells it apart: only ``b"\\n"`` ends a line, and a last line without one, or one that is not JSON, is
torn (docs/decisions/0011-session-durability.md). Files are created with mode 0600.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from .._json import depth_over, dumps, loads
from ._errors import (
    SessionCorruptionError,
    SessionError,
    SessionTornTailWarning,
    SessionValidationError,
    SessionWriteError,
)
from ._events import FORMAT_VERSION, SessionEvent
from ._lock import CLOEXEC, NOFOLLOW, open_regular, os_error
from ._rules import SessionState, adopt_event
from ._shape import seq_of

__all__ = ["FILE_MODE", "Line", "Loaded", "LogWriter", "append_file", "encode_line", "fsync_directory", "is_event_line",
           "lines_bytes", "load_bytes", "parse_line", "read_bytes", "refuse_foreign", "replace_file", "split_lines",
           "subject", "warn_torn"]

FILE_MODE: Final = 0o600


@attrs.frozen
class Line:
    number: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's first byte."""
    raw: bytes
    """The line without its newline."""


def encode_line(seq: int, event_type: object, data: object) -> bytes:
    """A plain envelope as one compact line. Raises ``ValueError`` / ``TypeError`` for what JSON (or UTF-8) cannot
    hold, and ``ValueError`` for data nested deeper than ``MAX_DEPTH`` (it could not be read back)."""
    if depth_over(data, MAX_DEPTH - 1):
        raise ValueError(_TOO_DEEP)
    envelope = {"v": FORMAT_VERSION, "seq": seq, "type": event_type, "data": data}
    return dumps(envelope).encode("utf-8") + b"\n"


def parse_line(raw: bytes) -> Any:
    """One line's JSON value. Raises ``ValueError`` (bad UTF-8, bad JSON, NaN or Infinity, nesting deeper than
    ``MAX_DEPTH``)."""
    try:
        value = loads(raw)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    if depth_over(value, MAX_DEPTH):
        raise ValueError(_TOO_DEEP)
    return value


MAX_DEPTH = 100  # a line's nesting (the envelope is one level): refused on write, corruption on read (decision 0011)
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


def split_lines(raw: bytes) -> tuple[list[Line], Line | None]:
    """The complete lines, and the torn last line if there is one.

    Only ``b"\\n"`` ends a line (JSON text may hold U+2028 and friends unescaped). The last line is torn when it
    has no newline, or when it has one but is not JSON: a crash can leave either, and only at the end.
    """
    lines: list[Line] = []
    offset = 0
    while offset < len(raw):
        end = raw.find(b"\n", offset)
        if end < 0:
            return lines, Line(len(lines) + 1, offset, raw[offset:])
        lines.append(Line(len(lines) + 1, offset, raw[offset:end]))
        offset = end + 1
    if lines:
        try:
            parse_line(lines[-1].raw)
        except ValueError:
            return lines[:-1], lines[-1]
    return lines, None


def subject(seq: int | None, line: int) -> str:
    return f"session event at seq {seq}" if seq is not None else f"session event on line {line}"


@attrs.frozen
class Loaded:
    events: list[SessionEvent]
    state: SessionState
    size: int
    """Length of the complete lines, in bytes."""
    torn: Line | None


def load_bytes(raw: bytes, path: Path) -> Loaded:
    """Every complete line through ``validate_event``; ``SessionCorruptionError`` at the first that breaks a rule."""
    lines, torn = split_lines(raw)
    state = SessionState()
    events: list[SessionEvent] = []
    for line in lines:
        try:
            value = parse_line(line.raw)
        except ValueError as exc:
            if not events:
                refuse_foreign(path, lines, torn)
            raise SessionCorruptionError(path, line.number, None, f"line {line.number} is not JSON ({exc})") from exc
        seq = seq_of(value)
        try:
            event, state = adopt_event(value, state, subject=subject(seq, line.number))
        except SessionValidationError as exc:
            if not events:
                refuse_foreign(path, lines, torn)
            raise SessionCorruptionError(path, line.number, seq, exc.reason) from exc
        events.append(event)
    if torn is not None and not events:
        refuse_foreign(path, lines, torn)
    return Loaded(events, state, torn.offset if torn is not None else len(raw), torn)


def is_event_line(line: Line) -> bool:
    """Whether the line is a session event's envelope: an object of this format's version with a ``seq`` and a
    ``type`` (its contents may still break a rule)."""
    try:
        value = parse_line(line.raw)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("v") == FORMAT_VERSION and "seq" in value and "type" in value


def refuse_foreign(path: Path, lines: Sequence[Line], torn: Line | None) -> None:
    """``SessionError`` when no line of a non-empty file is a session event's envelope: it is not a session log (a
    key, a note, random bytes, ``{}``), and nothing may truncate, replace or append to it. A log whose very first
    write was torn looks the same and is refused too: only a log with a complete event has a tail to cut."""
    if any(is_event_line(line) for line in lines):
        return
    raise SessionError(
        f"{path} is not a session log: none of its {len(lines) + (torn is not None)} line(s) is a complete session "
        "event, so it was left unchanged. Give the path of a session log (.jsonl), or of a file that does not exist "
        "yet to start one; if this is a log whose first write was interrupted, remove it to start again."
    )


def warn_torn(path: Path, torn: Line, action: str) -> None:
    warnings.warn(
        SessionTornTailWarning(
            f"{path}: line {torn.number} is torn ({len(torn.raw)} bytes of an interrupted write); {action}. "
            "No complete line was lost."
        ),
        stacklevel=3,
    )


def read_bytes(path: Path) -> bytes:
    """The whole file; ``SessionError`` for a directory, a device or FIFO, or a file that cannot be read."""
    fd, _ = open_regular(path, os.O_RDONLY, "read")
    try:
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read()
    except OSError as exc:
        raise os_error(path, exc, "read") from None
    finally:
        os.close(fd)


class LogWriter:
    """The append side of an open log: one descriptor, the size of its complete lines, and whether it can still be
    trusted (a failed rollback leaves the file's end unknown)."""

    def __init__(self, path: Path, fd: int, size: int, *, fsync: bool) -> None:
        self.path = path
        self.fd = fd
        self.size = size
        self.fsync = fsync
        self.broken: str | None = None

    def check_writable(self) -> None:
        if self.fd < 0:
            raise SessionWriteError(f"{self.path}: the session is closed; open it again to append")
        if self.broken is not None:
            raise SessionWriteError(f"{self.path}: {self.broken}; close the session and open it again")

    def write(self, data: bytes, what: object) -> None:
        """One ``os.write`` of whole lines, then fsync. On any failure the file is cut back to its old size."""
        try:
            written = os.write(self.fd, data)
            if written != len(data):
                raise OSError(errno.EIO, f"short write: {written} of {len(data)} bytes")
            if self.fsync:
                os.fsync(self.fd)
        except BaseException as exc:
            self._roll_back()
            if isinstance(exc, OSError):
                message = f"could not write {what} to {self.path}: {exc}. Nothing was recorded."
                raise SessionWriteError(message) from exc
            raise
        self.size += len(data)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def _roll_back(self) -> None:
        try:
            os.ftruncate(self.fd, self.size)
            if self.fsync:
                os.fsync(self.fd)
        except OSError as exc:
            self.broken = f"a failed write could not be rolled back ({exc}), so the file's end is unknown"


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_directory(directory: Path) -> None:
    """Makes a new or replaced entry durable (POSIX); Windows cannot open a directory for fsync, and NTFS journals
    the entry itself."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_file(path: Path, data: bytes) -> None:
    """Appends and fsyncs (the directory too when the file is new). Refuses (``SessionError``) a symlink, a hard
    link or anything but a regular file at ``path``: it writes only a file of its own."""
    created = not path.exists()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | CLOEXEC | NOFOLLOW, FILE_MODE)
    except OSError as exc:
        raise os_error(path, exc, "append to") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise SessionError(f"refusing to append to {path}: it is not a regular file with a single link")
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_directory(path.parent)


def replace_file(path: Path, data: bytes) -> None:
    """Atomically: a temporary file beside ``path``, fsync, ``os.replace``, fsync of the directory."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            if hasattr(os, "fchmod"):  # not on Windows before Python 3.13, where the mode bits mean little anyway
                os.fchmod(fd, FILE_MODE)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def lines_bytes(lines: Sequence[Line]) -> bytes:
    return b"".join(line.raw + b"\n" for line in lines)
