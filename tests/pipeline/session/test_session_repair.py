"""Offline tools and recovery: ``check`` lists every fault, ``repair`` quarantines broken turns, ``recover`` closes
an interrupted turn."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from session_builders import (
    CALLED,
    OPEN_CALL,
    RESOLVED,
    Event,
    assistant,
    attempt,
    broken_turn,
    call_block,
    line_of,
    record_tool_turn,
    retry,
    step_end,
    text,
    tool_call,
    tool_result,
    tool_turn,
    user,
    write_log,
)

from pipeline.session import INTERRUPTED_TOOL_RESULT, Session, SessionTornTailWarning, check, repair


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


def test_check_reports_every_fault_with_its_line_and_seq(log: Path) -> None:
    write_log(log, [*tool_turn(1), *broken_turn(2), *tool_turn(3, user_id="u3")])
    assert check(log) == [
        "line 10, seq 10: session event at seq 10: message has invalid content: the tool call at content[0] must have "
        "a non-empty string id, got ''",
        "line 11, seq 11: session event at seq 11: tool/call must have a non-empty string call_id, got ''",
        "line 12, seq 12: session event at seq 12: message must have tool source",
    ]


def test_check_reports_a_seq_gap_once(log: Path) -> None:
    log.write_text(line_of(1, user()) + line_of(5, user(id="u2")) + line_of(6, user(id="u3")), encoding="utf-8")
    assert check(log) == ["line 2, seq 5: session event at seq 5: seq 5 does not follow seq 1 (expected 2)"]


def test_repair_quarantines_the_broken_turn_and_leaves_a_loadable_log(log: Path) -> None:
    events = [*tool_turn(1), *broken_turn(2), *tool_turn(3, user_id="u3")]
    write_log(log, events)
    original_lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    faults = check(log)

    report = repair(log)

    assert report.turns_quarantined == [2]
    assert report.quarantined == 5
    assert report.kept == len(events) - 5
    assert report.problems == faults
    assert report.quarantine_path == log.with_name("session.quarantine.jsonl")
    assert report.quarantine_path.read_text(encoding="utf-8") == "".join(original_lines[9:14])
    loaded = Session.load(log)
    assert [event.seq for event in loaded] == list(range(1, report.kept + 1))
    assert [event.data.get("turn") for event in loaded if event.type == "turn/end"] == [1, 3]
    assert "u2" in [event.data.get("id") for event in loaded]  # the user's words are kept
    assert check(log) == []
    for path in (log, report.quarantine_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with Session.open(log, fsync=False) as session:
        assert session.next_turn() == 4


def test_repair_appends_to_an_existing_quarantine(log: Path) -> None:
    write_log(log, broken_turn(1))
    first = repair(log)
    assert first.quarantine_path is not None
    with open(log, "a", encoding="utf-8") as file:
        for seq, event in enumerate(broken_turn(2), 2):
            file.write(line_of(seq, event))
    repair(log)
    assert len(first.quarantine_path.read_text(encoding="utf-8").splitlines()) == 10


def test_repair_of_a_valid_log_changes_nothing(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        record_tool_turn(session)
    before = log.read_bytes()
    report = repair(log)
    assert (report.kept, report.quarantined, report.quarantine_path, report.problems) == (10, 0, None, [])
    assert log.read_bytes() == before


def test_repair_closes_the_gap_an_abandoned_turn_leaves(log: Path) -> None:
    """A writer that crashed in turn 1 and went on with turn 2: turn 1 is the broken one, not turn 2."""
    write_log(log, [*CALLED, *tool_turn(2, user_id="u2")])
    report = repair(log)
    assert report.turns_quarantined == [1]
    assert [event.type for event in Session.load(log)][:2] == ["user/message", "user/message"]


def test_repair_moves_a_torn_tail_and_a_garbage_line_to_quarantine(log: Path) -> None:
    log.write_text(line_of(1, user()) + "garbage\n" + line_of(3, user(id="u3")) + '{"v":1,', encoding="utf-8")
    report = repair(log)
    assert (report.kept, report.quarantined, report.turns_quarantined) == (2, 2, [])
    assert report.quarantine_path is not None
    assert report.quarantine_path.read_text(encoding="utf-8") == 'garbage\n{"v":1,\n'
    assert [event.data["id"] for event in Session.load(log)] == ["u1", "u3"]


# -- recovery -----------------------------------------------------------------------------------------------------


def test_recover_synthesises_only_the_missing_closers(log: Path) -> None:
    interrupted = [
        user(),
        assistant(1, 1, call_block("call_1"), call_block("call_2", name="grep")),
        tool_call(1, 1, "call_1"),
        tool_result(1, 1, "call_1"),
        tool_call(1, 1, "call_2", name="grep"),
    ]
    write_log(log, interrupted)
    with Session.open(log, fsync=False) as session:
        added = session.recover()
        assert [(event.seq, event.type) for event in added] == [(6, "tool/result"), (7, "step/end"), (8, "turn/end")]
        block = added[0].data["message"]["content"][0]
        assert (block["tool_call_id"], block["is_error"]) == ("call_2", True)
        assert block["content"] == [{"type": "text", "text": INTERRUPTED_TOOL_RESULT}]
        assert added[2].data["reason"] == {
            "kind": "aborted",
            "failure": {"code": "ABORTED", "message": "session interrupted"},
        }
        assert session.recover() == []
        assert session.next_turn() == 2
    results = [e.data["message"]["source"]["call_id"] for e in Session.load(log) if e.type == "tool/result"]
    assert results == ["call_1", "call_2"]  # the real result of call_1 is not duplicated


@pytest.mark.parametrize(
    ("events", "closers"),
    [
        pytest.param([user(), attempt(), retry()], ["step/end", "turn/end"], id="after a failed attempt"),
        pytest.param(OPEN_CALL, ["step/end", "turn/end"], id="tool call never started"),
        pytest.param(RESOLVED, ["step/end", "turn/end"], id="every result recorded"),
        pytest.param([*RESOLVED, step_end()], ["turn/end"], id="between steps"),
        pytest.param(tool_turn(1), [], id="nothing interrupted"),
        pytest.param([], [], id="empty session"),
    ],
)
def test_recover_closes_an_interrupted_turn(log: Path, events: list[Event], closers: list[str]) -> None:
    write_log(log, events)
    with Session.open(log, fsync=False) as session:
        assert [event.type for event in session.recover()] == closers
        assert "tool/call" not in closers  # nothing is re-run
    assert check(log) == []


def test_crash_mid_turn_recovers_to_a_session_that_continues(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        session.seed([{"type": t, "data": d} for t, d in CALLED])
    with open(log, "ab") as file:
        file.write(line_of(4, tool_result())[:30].encode())
    with pytest.warns(SessionTornTailWarning):
        session = Session.open(log, fsync=False)
    with session:
        session.recover()
        session.append_user_message("still there?", id="u2")
        turn = session.next_turn()
        session.append_assistant_message(
            turn, 1, content=[text("yes")], provider="openai", model="gpt-4o", usage=None, finish={"kind": "stop"}
        )
        assert session.messages()[-3:] == [
            {"role": "tool", "tool_call_id": "call_1", "content": INTERRUPTED_TOOL_RESULT},
            {"role": "user", "content": "still there?"},
            {"role": "assistant", "content": "yes"},
        ]
