"""The session log touches nothing but its own files (issue 10): aliases share one lock, no lock file is written,
a file that is not a log is refused unchanged, and a directory, a read-only file or a line nested too deep is a
one-line ``SessionError`` (docs/decisions/0016-session-file-safety.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from session_builders import broken_turn, line_of, tool_result, tool_turn, user, write_log

from pipeline.cli import main
from pipeline.session import Session, SessionCorruptionError, SessionError, SessionLockedError, check, repair

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_log(tmp_path / "session.jsonl", tool_turn(1))


def test_second_writer_through_a_symlinked_alias_is_refused(log: Path) -> None:
    alias = log.with_name("alias.jsonl")
    alias.symlink_to(log)
    with Session.open(log, fsync=False) as session:
        with pytest.raises(SessionLockedError, match=rf"already open by another writer \(pid {os.getpid()}\)"):
            Session.open(alias, fsync=False)
        session.append_user_message("still mine", id="u2")
    assert len(Session.load(log)) == 9


def test_second_writer_through_a_hard_link_is_refused(log: Path) -> None:
    alias = log.with_name("hard.jsonl")
    os.link(log, alias)
    with Session.open(alias, fsync=False):
        with pytest.raises(SessionLockedError, match="already open by another writer"):
            Session.open(log, fsync=False)
        with pytest.raises(SessionLockedError):
            repair(log)


def test_symlink_planted_at_the_lock_path_leaves_its_target_intact(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\x00bytes\n")
    new_log = tmp_path / "new.jsonl"
    new_log.with_name(new_log.name + ".lock").symlink_to(victim)
    existing = write_log(tmp_path / "old.jsonl", tool_turn(1))
    existing.with_name(existing.name + ".lock").symlink_to(victim)
    with Session.open(new_log, fsync=False) as session:
        session.append_user_message("hi")
    with Session.open(existing, fsync=False):
        pass
    repair(existing)
    assert victim.read_bytes() == b"precious\x00bytes\n"


def test_symlink_planted_at_the_quarantine_path_leaves_its_target_intact(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    broken = write_log(tmp_path / "s.jsonl", [*tool_turn(1), *broken_turn(2)])
    (tmp_path / "s.quarantine.jsonl").symlink_to(victim)
    with pytest.raises(SessionError, match="quarantine"):
        repair(broken)
    assert victim.read_bytes() == b"precious\n"


@pytest.mark.parametrize(
    "content",
    [
        b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host\n",
        b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
        bytes(range(256)) * 4,
        b"{}\n",
        b'{"hello": "world"}\n{"x": 1}\n',
        DEEP + b"\n",
    ],
    ids=["public key", "public key without newline", "random bytes", "empty object", "foreign json", "deep"],
)
def test_a_file_that_is_not_a_session_log_is_refused_and_left_unchanged(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "key.pub"
    path.write_bytes(content)
    for action in (lambda: Session.open(path, fsync=False), lambda: Session.load(path), lambda: check(path)):
        with pytest.raises(SessionError, match="is not a session log"):
            action()
    with pytest.raises(SessionError, match="is not a session log"):
        repair(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.pub"]


def test_an_empty_or_absent_file_starts_a_new_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    for path in (empty, tmp_path / "absent.jsonl"):
        with Session.open(path, fsync=False) as session:
            assert session.events == []
            session.append_user_message("hi")
        assert len(Session.load(path)) == 1


def test_torn_tail_is_cut_only_after_a_complete_event(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first = line_of(1, user()).encode()
    path.write_bytes(first[:20])
    with pytest.raises(SessionError, match="first write was interrupted, remove it"):
        Session.open(path, fsync=False)
    assert path.read_bytes() == first[:20]
    path.write_bytes(first + first[:20])
    with pytest.warns(UserWarning, match="torn"):
        Session.open(path, fsync=False).close()
    assert path.read_bytes() == first


def test_a_dangling_symlink_is_not_followed_to_create_a_file(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "created.jsonl"
    target.parent.mkdir()
    link = tmp_path / "s.jsonl"
    link.symlink_to(target)
    with pytest.raises(SessionError, match="No such file"):
        Session.open(link, fsync=False)
    assert not target.exists()


def test_a_directory_is_a_session_error(tmp_path: Path) -> None:
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    for action in (Session.open, Session.load, check, repair):
        with pytest.raises(SessionError, match="is a directory"):
            action(directory)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for action in (Session.open, Session.load, check):
        with pytest.raises(SessionError, match="not a regular file"):
            action(fifo)


def test_a_read_only_file_is_a_session_error_and_left_unchanged(log: Path) -> None:
    # The mode check works as root too, where permissions would not stop the write.
    before = log.read_bytes()
    log.chmod(0o444)
    with pytest.raises(SessionError, match="read-only"):
        Session.open(log, fsync=False)
    broken = write_log(log.with_name("broken.jsonl"), broken_turn(1))
    broken.chmod(0o444)
    with pytest.raises(SessionError, match="read-only"):
        repair(broken)
    assert not log.with_name("broken.quarantine.jsonl").exists()
    assert len(Session.load(log)) == 8
    assert log.read_bytes() == before
    assert stat.S_IMODE(log.stat().st_mode) == 0o444


def test_a_line_nested_too_deep_is_a_session_error(log: Path) -> None:
    with open(log, "ab") as file:
        file.write(DEEP + b"\n" + line_of(9, user(id="u2")).encode())
    with pytest.raises(SessionCorruptionError, match="line 9 is not JSON \\(nested deeper than 100 levels\\)"):
        Session.open(log, fsync=False)
    assert any("nested deeper than 100 levels" in problem for problem in check(log))


@pytest.mark.parametrize("kind", ["directory", "read-only", "deep", "public key"])
@pytest.mark.parametrize("command", ["check", "repair", "chat"])
def test_cli_prints_one_line_for_a_file_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, command: str
) -> None:
    path = tmp_path / "s.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "read-only":
        write_log(path, broken_turn(1)).chmod(0o444)
    elif kind == "deep":
        path.write_bytes(DEEP + b"\n")
    else:
        path.write_bytes(b"ssh-ed25519 AAAA user@host\n")
    if kind == "read-only" and command == "check":
        pytest.skip("checking a read-only log is allowed")
    before = path.read_bytes() if path.is_file() else None
    if command == "chat":
        argv = ["chat", "hi", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--session", str(path)]
    else:
        argv = ["session", command, str(path)]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("llm-stream: ")
    assert "Traceback" not in err
    if before is not None:
        assert path.read_bytes() == before


def test_repair_rolls_back_a_turn_that_breaks_after_some_of_its_events_were_kept(tmp_path: Path) -> None:
    second = tool_turn(2, "call_2", user_id="u2")
    second[3] = tool_result(2, 1, "nope", id="r2")  # after its assistant message and tool call were adopted
    path = write_log(tmp_path / "s.jsonl", [*tool_turn(1), *second, *tool_turn(3, "call_3", user_id="u3")])
    report = repair(path)
    assert report.turns_quarantined == [2]
    assert (report.kept, report.quarantined) == (17, 7)
    events = Session.load(path)
    assert [event.seq for event in events] == list(range(1, 18))
    assert [event.type for event in events].count("turn/end") == 2
