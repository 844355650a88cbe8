"""The session lock behind one function pair (docs/decisions/0021-portable-session-lock.md).

The POSIX path (``flock``) is tested for real, in this process and from a second one. CI has no Windows, so the
Windows path is tested as far as Linux allows, honestly labelled: which lock ``os.name == "nt"`` selects, the byte
range it locks (a real seek to it on this file system), and the calls ``Lock`` makes, through a stand-in ``msvcrt``
that keeps Windows' per-handle range-lock bookkeeping. Whether real Windows honours that range is not verified here.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from session_builders import tool_turn, write_log

from pipeline.session import Session, SessionError, SessionLockedError, _lock

LK_UNLCK, LK_NBLCK = 0, 2  # the values of msvcrt's constants


class FakeMsvcrt(types.ModuleType):
    """``msvcrt.locking`` as Windows documents it: it locks ``nbytes`` from the descriptor's current position; a
    range locked by another handle (descriptor) fails with ``EACCES``; unlocking a range not locked fails too."""

    LK_UNLCK = LK_UNLCK
    LK_NBLCK = LK_NBLCK

    def __init__(self, fail_with: int | None = None) -> None:
        super().__init__("msvcrt")
        self.calls: list[tuple[int, int, int]] = []  # (mode, nbytes, position)
        self.held: dict[tuple[int, int, int, int], int] = {}  # (dev, ino, position, nbytes) -> fd
        self.fail_with = fail_with

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((mode, nbytes, position))
        if self.fail_with is not None:
            raise OSError(self.fail_with, os.strerror(self.fail_with))
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino, position, nbytes)
        if mode == LK_NBLCK:
            if key in self.held:
                raise OSError(errno.EACCES, "Permission denied")
            self.held[key] = fd
        elif mode == LK_UNLCK:
            if self.held.get(key) != fd:
                raise OSError(errno.EACCES, "Permission denied")
            del self.held[key]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_log(tmp_path / "session.jsonl", tool_turn(1))


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> FakeMsvcrt:
    """The Windows lock selected, over the stand-in ``msvcrt``."""
    fake = FakeMsvcrt()
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(_lock, "LOCKING", _lock.locking_for("nt"))
    return fake


def test_locking_for_selects_msvcrt_on_windows_and_flock_elsewhere() -> None:
    assert _lock.locking_for("nt").name == "msvcrt.locking"
    assert _lock.locking_for("posix").name == "fcntl.flock"
    assert _lock.locking_for("java").name == "fcntl.flock"
    assert _lock.LOCKING is _lock.locking_for(os.name)


def test_the_windows_lock_byte_lies_past_any_log_and_can_be_seeked_to(log: Path) -> None:
    assert _lock.WINDOWS_LOCK_OFFSET >= 1 << 40  # 1 TiB: no session log is that long
    assert _lock.WINDOWS_LOCK_OFFSET + _lock.WINDOWS_LOCK_LENGTH <= 1 << 44  # within a 16 TiB file system limit
    assert 0 < _lock.WINDOWS_LOCK_LENGTH < 1 << 31  # msvcrt.locking takes a C long
    fd = os.open(log, os.O_RDONLY)
    try:
        assert os.lseek(fd, _lock.WINDOWS_LOCK_OFFSET, os.SEEK_SET) == _lock.WINDOWS_LOCK_OFFSET
        assert os.read(fd, 1) == b""  # far past the data: a reader there would read nothing
    finally:
        os.close(fd)


def test_windows_path_locks_the_far_byte_and_unlocks_it_before_close(log: Path, windows: FakeMsvcrt) -> None:
    offset, length = _lock.WINDOWS_LOCK_OFFSET, _lock.WINDOWS_LOCK_LENGTH
    with Session.open(log, fsync=False) as session:
        assert windows.calls == [(LK_NBLCK, length, offset)]
        session.append_user_message("written while locked", id="u2")
    assert windows.calls == [(LK_NBLCK, length, offset), (LK_UNLCK, length, offset)]
    assert windows.held == {}
    assert Session.load(log)[-1].type == "user/message"


def test_windows_path_refuses_a_second_writer_through_a_symlink(log: Path, windows: FakeMsvcrt) -> None:
    alias = log.with_name("alias.jsonl")
    alias.symlink_to(log)
    with Session.open(log, fsync=False), pytest.raises(SessionLockedError, match="already open by another writer"):
        Session.open(alias, fsync=False)
    with Session.open(alias, fsync=False):  # released: the next writer gets it
        pass


def test_windows_path_reads_the_log_from_its_start_without_pread(
    log: Path, windows: FakeMsvcrt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pread")  # Windows has no os.pread; the lock left the position at the far byte
    expected = len(Session.load(log))
    with Session.open(log, fsync=False) as session:
        assert len(session.events) == expected


def test_windows_path_an_unexpected_locking_error_is_a_one_line_session_error(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "msvcrt", FakeMsvcrt(fail_with=errno.EINVAL))
    monkeypatch.setattr(_lock, "LOCKING", _lock.locking_for("nt"))
    with pytest.raises(SessionError, match=r"cannot lock session log .*: Invalid argument") as caught:
        Session.open(log, fsync=False)
    assert not isinstance(caught.value, SessionLockedError)


def test_windows_path_without_msvcrt_is_a_session_error_naming_it(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msvcrt", None)
    monkeypatch.setattr(_lock, "LOCKING", _lock.locking_for("nt"))
    with pytest.raises(SessionError, match=r"needs msvcrt\.locking"):
        Session.open(log, fsync=False)


def test_flock_pair_conflicts_between_two_descriptors_and_unlock_releases(log: Path) -> None:
    posix = _lock.locking_for("posix")
    first, second = os.open(log, os.O_RDONLY), os.open(log, os.O_RDONLY)
    try:
        assert posix.try_lock(first) is True
        assert posix.try_lock(second) is False
        posix.unlock(first)
        assert posix.try_lock(second) is True
        assert posix.try_lock(first) is False
    finally:
        os.close(first)
        os.close(second)


@pytest.mark.server
def test_a_second_process_is_refused_while_this_one_writes_and_admitted_after(log: Path) -> None:
    script = (
        "import sys\n"
        "from pipeline.session import Session, SessionLockedError\n"
        "try:\n"
        "    Session.open(sys.argv[1], fsync=False).close()\n"
        "    print('admitted')\n"
        "except SessionLockedError as exc:\n"
        "    print(exc)\n"
    )

    def other_writer() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, str(log)],
            capture_output=True, text=True, cwd=Path(__file__).parents[3], check=True,
        )
        return done.stdout.strip()

    with Session.open(log, fsync=False):
        assert "already open by another writer" in other_writer()
    assert other_writer() == "admitted"
