"""The session log on disk: the line format, round trips, seeding, durable appends, torn tails and the lock."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from session_builders import (
    assistant,
    call_block,
    line_of,
    open_session,
    record_tool_turn,
    tool_call,
    tool_result,
    tool_turn,
    user,
    write_log,
)

from pipeline.session import (
    Session,
    SessionCorruptionError,
    SessionLockedError,
    SessionTornTailWarning,
    SessionWriteError,
    check,
    repair,
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


def test_tool_calling_turn_round_trips_through_close_and_reopen(log: Path) -> None:
    with Session.open(log) as session:
        record_tool_turn(session)
        written = session.events
    assert [event.seq for event in written] == list(range(1, 11))
    with Session.open(log) as reopened:
        assert reopened.events == written
        assert not reopened.recovered_torn_tail
        assert reopened.next_turn() == 2
    assert Session.load(log) == written


def test_log_lines_are_compact_ordered_json_with_consecutive_seq(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        record_tool_turn(session)
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""
    first = lines[0].decode()
    assert first.startswith('{"v":1,"seq":1,"type":"user/message","data":{"id":"u1"')
    assert list(json.loads(first)) == ["v", "seq", "type", "data"]
    assert "ü" in log.read_text(encoding="utf-8")  # ensure_ascii=False


def test_seed_writes_all_events_or_none(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        seeded = session.seed([{"type": t, "data": d} for t, d in tool_turn(1)])
        assert [event.seq for event in seeded] == list(range(1, 9))
        before = log.read_bytes()
        second = [user(id="u2"), assistant(2, 1, call_block()), tool_call(2, 1), tool_result(2, 1, "")]
        bad = [{"type": t, "data": d} for t, d in second]
        with pytest.raises(
            SessionWriteError, match=re.escape("seed tool/result at index 3: message must have tool source")
        ):
            session.seed(bad)
        assert log.read_bytes() == before
        assert session.events == seeded


def test_seed_names_a_message_without_id_the_anchors_way(log: Path) -> None:
    with (
        Session.open(log, fsync=False) as session,
        pytest.raises(SessionWriteError, match="seed user/message at index 0 lacks an identified message"),
    ):
        session.seed([{"type": "user/message", "data": user(id="")[1]}])


# -- durability ---------------------------------------------------------------------------------------------------


def test_each_append_is_one_write_of_one_line_then_fsync(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int]] = []
    real_write, real_fsync = os.write, os.fsync
    with Session.open(log) as session:

        def write(fd: int, data: bytes) -> int:
            calls.append(("write", len(data)))
            assert bytes(data).endswith(b"\n")
            assert bytes(data).count(b"\n") == 1
            return real_write(fd, data)

        def fsync(fd: int) -> None:
            calls.append(("fsync", 0))
            real_fsync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)
        session.append_user_message("hi")
        session.append_user_message("again")
    assert [name for name, _ in calls] == ["write", "fsync", "write", "fsync"]


def test_short_write_is_rolled_back_and_nothing_is_recorded(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    with open_session(log, [user()]) as session:
        before = log.read_bytes()
        monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:7]))
        with pytest.raises(SessionWriteError, match="short write"):
            session.append_user_message("lost", id="u2")
        monkeypatch.setattr(os, "write", real_write)
        assert log.read_bytes() == before
        assert len(session.events) == 1
        assert session.append_user_message("kept", id="u3").seq == 2
    assert [event.data["id"] for event in Session.load(log)] == ["u1", "u3"]


def test_failed_fsync_is_rolled_back_and_nothing_is_recorded(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Session.open(log) as session:
        session.append_user_message("hi", id="u1")
        before = log.read_bytes()

        def fail(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "fsync", fail)
        with pytest.raises(SessionWriteError, match="Input/output error"):
            session.append_user_message("lost", id="u2")
        monkeypatch.undo()
        assert log.read_bytes() == before
        assert [event.seq for event in session.events] == [1]


def test_torn_last_line_is_reported_and_truncated_without_losing_a_complete_line(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        record_tool_turn(session)
        complete = log.read_bytes()
        events = session.events
    with open(log, "ab") as file:
        file.write(line_of(11, user(id="u2")).encode()[:25])
    with pytest.warns(SessionTornTailWarning, match="line 11 is torn"):
        reopened = Session.open(log, fsync=False)
    with reopened:
        assert reopened.recovered_torn_tail
        assert reopened.events == events
        assert log.read_bytes() == complete
        assert reopened.append_user_message("next", id="u2").seq == 11
    assert len(Session.load(log)) == 11


def test_load_ignores_a_torn_last_line_without_changing_the_file(log: Path) -> None:
    write_log(log, tool_turn(1))
    with open(log, "ab") as file:
        file.write(b'{"v":1,"seq":9,"ty')
    torn = log.read_bytes()
    with pytest.warns(SessionTornTailWarning, match="it was ignored"):
        assert len(Session.load(log)) == 8
    assert log.read_bytes() == torn
    assert check(log) == [
        "line 9, seq unknown: torn last line (18 bytes of an interrupted write; repairable: `session repair` moves "
        "it to the quarantine file)"
    ]


def test_garbage_after_the_last_newline_is_a_torn_tail_but_garbage_in_the_middle_is_corruption(log: Path) -> None:
    write_log(log, [user()])
    with open(log, "ab") as file:
        file.write(b"\x00\x00\x00\x00\n")
    with pytest.warns(SessionTornTailWarning):
        assert len(Session.load(log)) == 1
    with open(log, "ab") as file:
        file.write(line_of(2, user(id="u2")).encode())
    with pytest.raises(SessionCorruptionError, match="line 2, seq unknown: line 2 is not JSON"):
        Session.load(log)


def test_second_writer_in_the_same_process_is_refused(log: Path) -> None:
    with Session.open(log, fsync=False):
        with pytest.raises(SessionLockedError, match=rf"already open by another writer \(pid {os.getpid()}\)"):
            Session.open(log, fsync=False)
        with pytest.raises(SessionLockedError):
            repair(log)
    with Session.open(log, fsync=False) as again:
        assert again.events == []


@pytest.mark.server
def test_second_writer_in_another_process_is_refused(log: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys; from pipeline.session import Session\n"
                f"s = Session.open({str(log)!r})\nprint('ready', flush=True)\nsys.stdin.read()\ns.close()"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[3],
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"ready"
        with pytest.raises(SessionLockedError, match=rf"\(pid {holder.pid}\)"):
            Session.open(log)
    finally:
        holder.communicate(b"")
    Session.open(log).close()


def test_log_is_created_owner_only_and_no_lock_file_beside_it(log: Path) -> None:
    with Session.open(log) as session:
        session.append_user_message("secret")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert sorted(path.name for path in log.parent.iterdir()) == [log.name]


def test_open_without_create_refuses_a_missing_log(log: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Session.open(log, create=False)
    assert not log.exists()


def test_closed_session_refuses_appends(log: Path) -> None:
    session = Session.open(log, fsync=False)
    session.close()
    session.close()
    with pytest.raises(SessionWriteError, match="closed"):
        session.append_user_message("late")


@pytest.mark.server
def test_import_works_where_fcntl_is_missing_and_only_taking_the_lock_needs_it(log: Path) -> None:
    script = (
        "import sys\n"
        "sys.modules['fcntl'] = None  # what a platform without fcntl looks like to an import\n"
        "import pipeline\n"
        "from pipeline.session import Session, SessionError\n"
        "assert 'fcntl' not in {name for name, module in sys.modules.items() if module is not None}\n"
        f"assert Session.load({str(log)!r})[0].type == 'user/message'\n"
        "try:\n"
        f"    Session.open({str(log)!r})\n"
        "except SessionError as exc:\n"
        "    print(exc)\n"
    )
    write_log(log, [user()])
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=Path(__file__).parents[3], check=False
    )
    assert done.returncode == 0, done.stderr
    assert "needs fcntl.flock" in done.stdout
