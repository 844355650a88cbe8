"""``Session``: an open session log, the events so far, and the only writer of the file.

Every append encodes the caller's ``data`` as plain JSON and decodes it back (so the write path validates exactly what
the read path will read), runs the one ``validate_event`` on it (nothing is written on refusal), writes the typed
event's line with one ``os.write``, fsyncs, and only then adds the typed event to ``events``
(docs/decisions/0011-session-durability.md). The line written is the typed event's own encoding, so the file and
``events`` cannot disagree: a key of ``data`` the event types do not know is not stored.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from operators import Code

from ._appends import TypedAppends
from ._errors import SessionError, SessionValidationError, SessionWriteError
from ._events import SessionEvent, event_line
from ._file import FILE_MODE, LogWriter, encode_line, fsync_directory, load_bytes, parse_line, read_bytes, warn_torn
from ._history import history
from ._lock import CLOEXEC, NOFOLLOW, Lock, open_regular, os_error, same_file
from ._rules import SessionState, adopt_event

__all__ = ["INTERRUPTED_TOOL_RESULT", "Session"]

INTERRUPTED_TOOL_RESULT: Final = "interrupted: the tool result was not recorded"
"""The text of the error result ``Session.recover`` records for a tool call whose result never reached the log."""


class Session(TypedAppends):
    """An open session log. Build it with ``Session.open``; use it as a context manager or call ``close()``.

    ``append`` and ``seed`` take events as ``(type, data)`` JSON; the ``append_*`` methods (``TypedAppends``) build
    that JSON from protocol values. Either way the recorded event comes back typed and immutable.
    """

    def __init__(self, path: Path, *, writer: LogWriter, lock: Lock, events: list[SessionEvent], state: SessionState):
        self._path = path
        self._writer = writer
        self._lock = lock
        self._events = events
        self._state = state
        self._mutex = threading.RLock()
        self.recovered_torn_tail = False
        """True when ``open`` found an incomplete last line and truncated it away."""

    # -- opening and loading

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, fsync: bool = True, create: bool = True) -> Session:
        """Loads and validates the log, truncates a torn last line, and becomes its only writer.

        Raises ``SessionLockedError`` if another ``Session`` (in any process, through any path to the same file)
        has it open, ``SessionCorruptionError`` if a stored event breaks a rule, ``SessionError`` for a file that is
        not a session log (left unchanged; an empty file reached through a symbolic or hard link included), a
        directory, a read-only or unreadable file, and ``FileNotFoundError`` if it does not exist and ``create`` is
        false. A new log is created with mode 0600.
        """
        log_path = Path(path)
        created = _create(log_path, create=create, fsync=fsync)
        lock = Lock.acquire(log_path)
        try:
            fd, info = open_regular(log_path, os.O_RDWR | os.O_APPEND, "open for writing")
            try:
                if not same_file(info, lock.info):
                    raise SessionError(f"cannot open session log {log_path}: it was replaced while being opened")
                if not info.st_mode & 0o222:
                    raise SessionError(
                        f"cannot open session log {log_path}: it is read-only (mode {stat.S_IMODE(info.st_mode):o}); "
                        "a session needs a writable log (Session.load reads it without writing)"
                    )
                loaded = load_bytes(lock.read(), log_path)
                if not created and not loaded.events and _is_link(log_path, info):
                    raise SessionError(
                        f"refusing to open {log_path}: it is a link (symbolic, or a hard link) to an existing file "
                        "that is not a session log, so it was left unchanged. Give the path of a session log, or of "
                        "a file that does not exist yet to start one."
                    )
                if loaded.torn is not None:
                    warn_torn(log_path, loaded.torn, "it was truncated away")
                    os.ftruncate(fd, loaded.size)
                    if fsync:
                        os.fsync(fd)
                if created and fsync:
                    os.fsync(fd)
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            lock.release()
            raise
        writer = LogWriter(log_path, fd, loaded.size, fsync=fsync)
        session = cls(log_path, writer=writer, lock=lock, events=loaded.events, state=loaded.state)
        session.recovered_torn_tail = loaded.torn is not None
        return session

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> list[SessionEvent]:
        """Reads and validates the whole log without taking the lock or changing the file.

        Raises ``SessionCorruptionError`` naming the line and seq of the first violation. A torn last line is
        reported with ``SessionTornTailWarning`` and ignored.
        """
        log_path = Path(path)
        loaded = load_bytes(read_bytes(log_path), log_path)
        if loaded.torn is not None:
            warn_torn(log_path, loaded.torn, "it was ignored")
        return loaded.events

    @property
    def path(self) -> Path:
        return self._path

    @property
    def events(self) -> list[SessionEvent]:
        """The adopted events, in order: a new list of immutable events."""
        with self._mutex:
            return list(self._events)

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def closed(self) -> bool:
        return self._writer.fd < 0

    def close(self) -> None:
        """Releases the file and the lock. Calling it again does nothing."""
        with self._mutex:
            if self._writer.fd >= 0:
                try:
                    self._writer.close()
                finally:
                    self._lock.release()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- appending

    def append(self, event_type: str, data: Mapping[str, Any]) -> SessionEvent:
        """Validates, writes and adopts one event. ``append_*`` are the typed ways to call it.

        Raises ``SessionWriteError`` when the event breaks a rule or cannot be written; the file and ``events``
        are then unchanged.
        """
        with self._mutex:
            self._writer.check_writable()
            seq = self._state.last_seq + 1
            try:
                event, state = adopt_event(self._decoded(seq, event_type, data), self._state, subject=_at(seq))
            except SessionValidationError as exc:
                raise SessionWriteError(f"refused to append {event_type}: {exc.reason}. Nothing was written.") from exc
            self._writer.write(event_line(event), event_type)
            self._state = state
            self._events.append(event)
            return event

    def seed(self, events: Iterable[Mapping[str, Any]]) -> list[SessionEvent]:
        """Appends ``{"type", "data"}`` events all together or not at all (one write).

        Each is validated after the ones before it, with the subject ``seed <type> at index i``.
        """
        with self._mutex:
            self._writer.check_writable()
            state = self._state
            adopted: list[SessionEvent] = []
            for index, item in enumerate(events):
                event_type = item.get("type")
                decoded = self._decoded(state.last_seq + 1, event_type, item.get("data"))
                try:
                    event, state = adopt_event(decoded, state, subject=f"seed {event_type} at index {index}")
                except SessionValidationError as exc:
                    raise SessionWriteError(f"refused to seed: {exc.reason}. Nothing was written.") from exc
                adopted.append(event)
            if adopted:
                self._writer.write(b"".join(event_line(event) for event in adopted), "seed")
                self._state = state
                self._events.extend(adopted)
            return adopted

    # -- reading

    def next_turn(self) -> int:
        """The number of the next turn: one more than the last turn seen, 1 for an empty session.

        A turn still open (interrupted) must be closed first: see ``recover``.
        """
        last = self._state.last_turn
        return 1 if last is None else last + 1

    def messages(self) -> list[dict[str, Any]]:
        """The chat history for the next request, in OpenAI chat format (see ``_history``): fresh dicts built from
        the immutable events, so nothing a caller does to an earlier answer or to ``events`` changes it."""
        with self._mutex:
            return history(self._events)

    # -- recovery

    def recover(self) -> list[SessionEvent]:
        """Closes an interrupted last turn (one without ``turn/end``) and returns the events it appended.

        Only the missing closers are synthesised, each through ``validate_event``: an error ``tool/result``
        (``INTERRUPTED_TOOL_RESULT``) for each recorded ``tool/call`` without a result, then ``step/end``, then
        ``turn/end`` aborted. A tool call with a real result gets no second one; nothing is re-run. A session
        with no open turn is left as it is.
        """
        with self._mutex:
            state = self._state
            turn = state.open_turn
            if turn is None:
                return []
            added: list[SessionEvent] = []
            if state.step is not None:
                number = state.step.number
                for call_id in state.step.unresolved():
                    added.append(self.append_tool_result(turn, number, call_id, INTERRUPTED_TOOL_RESULT, is_error=True))
                added.append(self.append_step_end(turn, number))
            reason = {"kind": "aborted", "failure": {"code": Code.ABORTED, "message": "session interrupted"}}
            added.append(self.append_turn_end(turn, reason))
            return added

    # -- internals

    @staticmethod
    def _decoded(seq: int, event_type: object, data: object) -> Any:
        """The event as it reads back from plain JSON, so that the write path validates what the read path will.

        ``SessionWriteError`` for what JSON (or UTF-8) cannot hold: NaN, a lone surrogate, an unknown object."""
        try:
            return parse_line(encode_line(seq, event_type, data))
        except (TypeError, ValueError) as exc:
            raise SessionWriteError(
                f"refused to append {event_type}: the event is not JSON-serialisable as UTF-8 ({exc}). "
                "Nothing was written."
            ) from exc


def _is_link(path: Path, info: os.stat_result) -> bool:
    """Whether ``path`` reaches its file through a link: a symbolic link, or a file with more than one hard link."""
    return path.is_symlink() or info.st_nlink > 1


def _create(path: Path, *, create: bool, fsync: bool) -> bool:
    """Creates an empty log (mode 0600) where nothing exists; True when it did. Never through a symlink: a dangling
    one at ``path`` is refused rather than followed to create a file elsewhere."""
    if os.path.lexists(path):
        return False
    if not create:
        raise FileNotFoundError(errno.ENOENT, "session log does not exist (create=False)", str(path))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False  # created by someone else meanwhile: open it as it is
    except OSError as exc:
        raise os_error(path, exc, "create") from None
    os.close(fd)
    if fsync:
        fsync_directory(path.parent)
    return True


def _at(seq: int) -> str:
    return f"session event at seq {seq}"
