"""Session edges (issue 21): a symbolic or hard link to an existing file that is not a session log is never followed,
empty or not; ``repair`` (and ``llm-stream session repair``) never empties a file that was not a session log, such as
a notes file holding one envelope-shaped line. docs/decisions/0016-session-file-safety.md."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from session_builders import tool_turn, write_log

from pipeline.cli import main
from pipeline.session import Session, SessionError, repair

Link = Callable[[Path, Path], None]
LINKS: dict[str, Link] = {
    "symlink": lambda target, link: link.symlink_to(target),
    "hard-link": lambda target, link: os.link(target, link),
}


@pytest.mark.parametrize("content", [b"", b"my notes\n"], ids=["empty", "notes"])
@pytest.mark.parametrize("kind", sorted(LINKS))
def test_a_link_to_an_existing_file_that_is_not_a_session_log_is_never_followed(
    tmp_path: Path, kind: str, content: bytes
) -> None:
    target = tmp_path / "notes.txt"
    target.write_bytes(content)
    link = tmp_path / "session.jsonl"
    LINKS[kind](target, link)

    with pytest.raises(SessionError, match="not a session log"):
        Session.open(link, fsync=False)

    assert target.read_bytes() == content


@pytest.mark.parametrize("kind", sorted(LINKS))
def test_a_link_to_a_session_log_is_still_a_path_to_it(tmp_path: Path, kind: str) -> None:
    log = write_log(tmp_path / "session.jsonl", tool_turn(1))
    link = tmp_path / "alias.jsonl"
    LINKS[kind](log, link)

    with Session.open(link, fsync=False) as session:
        session.append_user_message("more", id="u2")

    assert len(Session.load(log)) == 9


def test_an_empty_regular_file_still_starts_a_new_log(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    path.touch()

    with Session.open(path, fsync=False) as session:
        session.append_user_message("hi", id="u1")

    assert len(Session.load(path)) == 1


NOTES = b'{"v": 1, "seq": 1, "type": "note", "data": {}}\nmy important notes\n'


def test_repair_never_empties_a_notes_file_holding_one_envelope_shaped_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(NOTES)

    with pytest.raises(SessionError, match="is not a session log"):
        repair(notes)

    assert notes.read_bytes() == NOTES
    assert list(tmp_path.iterdir()) == [notes]  # no quarantine file either


def test_session_repair_on_the_command_line_leaves_such_a_file_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(NOTES)

    status = main(["session", "repair", str(notes)])

    assert status != 0
    assert "is not a session log" in capsys.readouterr().err
    assert notes.read_bytes() == NOTES
