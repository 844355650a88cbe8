"""A turn's session log over time: continuing in a reopened session, a torn last line, a second writer, an older
writer's log (check and repair), and a session a crash left mid-turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from turn_helpers import (
    AGENT_TYPES,
    LIMIT,
    Tools,
    assert_no_empty_call_id,
    interrupted_log,
    make_client,
    messages_of,
    new_key,
    of_type,
    replay_config,
    requests_for,
    run_agent,
    turn_end,
    types_of,
)

from pipeline import (
    Session,
    SessionCorruptionError,
    SessionError,
    SessionLockedError,
    ToolRegistry,
    check,
    repair,
    run_turn_to_end,
)
from pipeline.cli import main
from pipeline.emulator import Emulator, EmulatorConfig
from pipeline.session import SessionTornTailWarning


@pytest.fixture(scope="module")
def emulator_config(tmp_path_factory: pytest.TempPathFactory) -> EmulatorConfig:
    return replay_config(tmp_path_factory)


# -- continuing, crashes, writers -------------------------------------------------------------------------------------


async def test_second_turn_in_a_reopened_session_continues_the_history(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), key)
    with Session.open(path) as reader:
        history = reader.messages()

    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        with Session.open(path) as session:
            assert session.next_turn() == 2
            events = await run_turn_to_end(client, session, Tools().registry, "And tomorrow?")

    assert {event.turn for event in events} == {2}
    assert events[-1].data == {"kind": "stop"}
    request = requests_for(emu, key)[-1]
    assert request.profile == "clean"
    assert messages_of(request) == [*history, {"role": "user", "content": "And tomorrow?"}]
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    assert types_of(loaded)[len(AGENT_TYPES) :] == ["user/message", "assistant/message", "step/end", "turn/end"]


async def test_torn_last_line_is_truncated_and_every_complete_event_survives(emu: Emulator, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), new_key())
    complete = path.read_bytes()
    before = Session.load(path)
    with open(path, "ab") as file:  # a crash in the middle of the next append
        file.write(b'{"v":1,"seq":19,"type":"user/message","data":{"id":"msg_x","ro')

    with pytest.warns(SessionTornTailWarning, match="line 19 is torn"):
        session = Session.open(path)
    with session:
        assert session.recovered_torn_tail
        assert session.events == before
        assert session.next_turn() == 2
    assert path.read_bytes() == complete
    assert Session.load(path) == before


async def test_second_writer_is_refused_with_a_clear_error(emu: Emulator, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), new_key())
    with Session.open(path) as first:
        with pytest.raises(SessionLockedError, match="already open by another writer") as raised:
            Session.open(path)
        assert str(path) in str(raised.value)
        assert "one writer at a time" in str(raised.value)
        assert not first.closed
    with Session.open(path) as again:  # released on close
        assert again.next_turn() == 2


# -- an older writer's log: check and repair --------------------------------------------------------------------------


def older_writer_log(path: Path) -> None:
    """What an older writer left: turn 1 recorded its tool call with an empty id everywhere; turn 2 is fine."""

    def user(message_id: str, text: str) -> tuple[str, dict[str, Any]]:
        return "user/message", {
            "id": message_id,
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": text}],
        }

    def assistant(turn: int, content: list[dict[str, Any]], finish: str) -> tuple[str, dict[str, Any]]:
        message = {
            "id": f"a{turn}",
            "role": "assistant",
            "source": {"kind": "model", "provider": "gateway", "model": "m"},
            "content": content,
            "usage": None,
            "finish": {"kind": finish},
        }
        return "assistant/message", {"turn": turn, "step": 1, "message": message}

    result = {
        "id": "r1",
        "role": "user",
        "source": {"kind": "tool", "call_id": ""},
        "content": [{"type": "tool-result", "tool_call_id": "", "content": [{"type": "text", "text": "sunny"}],
                     "is_error": False}],
    }
    events = [
        user("u1", "Weather in Paris?"),
        assistant(1, [{"type": "tool-call", "id": "", "name": "get_weather", "arguments": '{"city":"Paris"}'}],
                  "tool-calls"),
        ("tool/call", {"turn": 1, "step": 1, "call_id": "", "name": "get_weather", "arguments": '{"city":"Paris"}'}),
        ("tool/result", {"turn": 1, "step": 1, "message": result}),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "stop"}}),
        user("u2", "Thanks"),
        assistant(2, [{"type": "text", "text": "You are welcome."}], "stop"),
        ("step/end", {"turn": 2, "step": 1}),
        ("turn/end", {"turn": 2, "reason": {"kind": "stop"}}),
    ]
    with open(path, "w", encoding="utf-8") as file:
        for seq, (event_type, data) in enumerate(events, 1):
            file.write(json.dumps({"v": 1, "seq": seq, "type": event_type, "data": data}) + "\n")


def assert_repaired(path: Path, original: list[str]) -> None:
    loaded = Session.load(path)
    assert [event.seq for event in loaded] == list(range(1, len(loaded) + 1))
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [2]
    assert [data["id"] for data in of_type(loaded, "user/message")] == ["u1", "u2"]  # the user's words are kept
    assert check(path) == []
    assert assert_no_empty_call_id(path) == 0
    quarantine = path.with_name(path.stem + ".quarantine.jsonl")
    assert quarantine.read_text(encoding="utf-8").splitlines() == original[1:6]  # turn 1, verbatim
    with Session.open(path) as session:
        assert session.next_turn() == 3


def test_repair_recovers_a_log_with_empty_call_ids_and_check_reported_them(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    older_writer_log(path)
    original = path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(SessionCorruptionError, match="line 2, seq 2") as raised:
        Session.load(path)
    assert "non-empty string id" in str(raised.value)

    faults = check(path)
    assert [fault.split(":")[0] for fault in faults] == ["line 2, seq 2", "line 3, seq 3", "line 4, seq 4"]
    assert "non-empty string id, got ''" in faults[0]
    assert "tool/call must have a non-empty string call_id, got ''" in faults[1]
    assert "message must have tool source" in faults[2]

    report = repair(path)
    assert report.problems == faults
    assert report.turns_quarantined == [1]
    assert report.quarantined == 5
    assert report.kept == len(original) - 5
    assert report.quarantine_path == path.with_name("old.quarantine.jsonl")
    assert_repaired(path, original)


def test_session_check_and_repair_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.jsonl"
    older_writer_log(path)
    original = path.read_text(encoding="utf-8").splitlines()

    assert main(["session", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "line 2, seq 2" in out
    assert "line 3, seq 3" in out
    assert "line 4, seq 4" in out
    assert f"{path}: 3 violations" in out

    assert main(["session", "repair", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("fixed: ") == 3
    assert "quarantined 5 (turns 1)" in out
    assert "the log loads" in out

    assert main(["session", "check", str(path)]) == 0
    assert f"{path}: ok, loadable" in capsys.readouterr().out
    assert_repaired(path, original)


# -- continuing a session a crash left mid-turn -----------------------------------------------------------------------


async def test_run_turn_on_an_interrupted_session_recovers_or_refuses_before_writing(
    emu: Emulator, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    kept = await interrupted_log(emu, path, keep=5)  # crash after step/end, before turn/end
    key = new_key()
    async with asyncio.timeout(LIMIT), make_client(emu, "clean", key=key) as client:
        with Session.open(path) as session:
            try:
                events = await run_turn_to_end(client, session, ToolRegistry(), "Again?")
            except SessionError:  # refusing is fine, but then nothing may have happened
                assert path.read_text(encoding="utf-8") == "".join(kept)
                assert requests_for(emu, key) == []
                return
    # or it recovered turn 1 (P3: only the missing closer) and ran turn 2
    assert events[-1].data == {"kind": "stop"}
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    assert turn_end(loaded[:6])["kind"] == "aborted"
