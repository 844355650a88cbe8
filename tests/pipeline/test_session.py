"""The session log: one validation function on the write path and the read path, durable appends, recovery."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias, cast

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators._chunks import (
    BlockEnd,
    BlockStart,
    Failure,
    Finish,
    FinishReason,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
)
from pipeline._session import (
    INTERRUPTED_TOOL_RESULT,
    NOT_RUN_TOOL_RESULT,
    Session,
    SessionCorruptionError,
    SessionLockedError,
    SessionState,
    SessionTornTailWarning,
    SessionValidationError,
    SessionWriteError,
    adopt_event,
    check,
    repair,
    validate_event,
)

Event: TypeAlias = tuple[str, dict[str, Any]]
"""An event before it is numbered: ``(type, data)``."""

# -- builders -----------------------------------------------------------------------------------------------------

FAILURE = {"code": "SERVER", "message": "upstream 502", "status": 502}
STOP = {"kind": "stop"}


def text(value: str = "hello") -> dict[str, Any]:
    return {"type": "text", "text": value}


def reasoning(value: str = "thinking") -> dict[str, Any]:
    return {"type": "reasoning", "text": value}


def call_block(call_id: str = "call_1", name: str = "read_file", arguments: str = '{"path":"a"}') -> dict[str, Any]:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def user(value: str = "hi", *, id: str = "u1") -> Event:
    return ("user/message", {"id": id, "role": "user", "source": {"kind": "user"}, "content": [text(value)]})


def assistant_message(*blocks: dict[str, Any], id: str = "a1", **overrides: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": id,
        "role": "assistant",
        "source": {"kind": "model", "provider": "openai", "model": "gpt-4o"},
        "content": list(blocks),
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "finish": {"kind": "tool-calls" if any(b["type"] == "tool-call" for b in blocks) else "stop"},
    }
    message.update(overrides)
    return message


def assistant(turn: int = 1, step: int = 1, *blocks: dict[str, Any], **overrides: Any) -> Event:
    return ("assistant/message", {"turn": turn, "step": step, "message": assistant_message(*blocks, **overrides)})


def attempt(turn: int = 1, step: int = 1, number: int = 1, stream: list[Any] | None = None) -> Event:
    chunks = stream if stream is not None else [TextDelta(0, "par").to_json()]
    return ("assistant/attempt", {"turn": turn, "step": step, "attempt": number, "stream": chunks, "failure": FAILURE})


def retry(turn: int = 1, step: int = 1, number: int = 1, **overrides: Any) -> Event:
    data = {"turn": turn, "step": step, "retry": number, "max_retries": 3, "delay_ms": 250.0, "failure": FAILURE}
    data.update(overrides)
    return ("llm/retry", data)


def tool_call(
    turn: int = 1, step: int = 1, call_id: Any = "call_1", name: Any = "read_file", **overrides: Any
) -> Event:
    data = {"turn": turn, "step": step, "call_id": call_id, "name": name, "arguments": '{"path":"a"}'}
    data.update(overrides)
    return ("tool/call", data)


def result_message(call_id: Any = "call_1", value: str = "ok", *, id: str = "r1", **overrides: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": id,
        "role": "user",
        "source": {"kind": "tool", "call_id": call_id},
        "content": [{"type": "tool-result", "tool_call_id": call_id, "content": [text(value)], "is_error": False}],
    }
    message.update(overrides)
    return message


def tool_result(turn: int = 1, step: int = 1, call_id: Any = "call_1", **overrides: Any) -> Event:
    return ("tool/result", {"turn": turn, "step": step, "message": result_message(call_id, **overrides)})


def step_end(turn: int = 1, step: int = 1) -> Event:
    return ("step/end", {"turn": turn, "step": step})


def turn_end(turn: int = 1, reason: dict[str, Any] | None = None) -> Event:
    return ("turn/end", {"turn": turn, "reason": reason if reason is not None else STOP})


def tool_turn(turn: int = 1, call_id: str = "call_1", *, user_id: str = "u1") -> list[Event]:
    """A whole turn: the user asks, the model calls one tool, gets its result, then answers."""
    return [
        user("read a", id=user_id),
        assistant(turn, 1, call_block(call_id), id=f"a{turn}.1"),
        tool_call(turn, 1, call_id),
        tool_result(turn, 1, call_id, id=f"r{turn}"),
        step_end(turn, 1),
        assistant(turn, 2, text("a says hi"), id=f"a{turn}.2"),
        step_end(turn, 2),
        turn_end(turn),
    ]


def line_of(seq: int, event: Event) -> str:
    """What a plain writer would put in the file (not our compact encoding)."""
    return json.dumps({"v": 1, "seq": seq, "type": event[0], "data": event[1]}) + "\n"


def write_log(path: Path, events: Sequence[Event]) -> Path:
    path.write_text("".join(line_of(seq, event) for seq, event in enumerate(events, 1)), encoding="utf-8")
    return path


def open_session(path: Path, events: Sequence[Event] = ()) -> Session:
    session = Session.open(path, fsync=False)
    for event_type, data in events:
        session.append(event_type, data)
    return session


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


# -- one table of rules, checked on both paths --------------------------------------------------------------------


@attrs.frozen
class Rule:
    name: str
    before: list[Event]
    bad: Event
    message: str


OPEN_CALL = [user(), assistant(1, 1, call_block("call_1"))]
CALLED = [*OPEN_CALL, tool_call(1, 1, "call_1")]
RESOLVED = [*CALLED, tool_result(1, 1, "call_1")]

RULES = [
    # P1, the anchor's message rules
    Rule("user message without id", [], user(id=""), "session event at seq 1 lacks an identified message"),
    Rule(
        "assistant event without message",
        [user()],
        ("assistant/message", {"turn": 1, "step": 1}),
        "session event at seq 2 lacks an identified message",
    ),
    Rule(
        "tool result without message id",
        CALLED,
        tool_result(id=""),
        "session event at seq 4 lacks an identified message",
    ),
    Rule(
        "user message with assistant role",
        [],
        ("user/message", {**user()[1], "role": "assistant"}),
        'message must have role "user"',
    ),
    Rule(
        "assistant message with user role",
        [user()],
        assistant(1, 1, text(), role="user"),
        'message must have role "assistant"',
    ),
    Rule("tool result with assistant role", CALLED, tool_result(role="assistant"), 'message must have role "user"'),
    Rule(
        "message without source kind",
        [user()],
        assistant(1, 1, text(), source={"kind": ""}),
        "message has invalid source",
    ),
    Rule(
        "message with non-object source",
        [],
        ("user/message", {**user()[1], "source": "user"}),
        "message has invalid source",
    ),
    Rule(
        "message with non-list content",
        [],
        ("user/message", {**user()[1], "content": "hi"}),
        "message has invalid content",
    ),
    Rule(
        "user message with a tool-call block",
        [],
        ("user/message", {**user()[1], "content": [call_block()]}),
        "message has invalid content",
    ),
    Rule(
        "assistant message from a user source",
        [user()],
        assistant(1, 1, text(), source={"kind": "user"}),
        "message must have model source",
    ),
    Rule(
        "assistant message without provider",
        [user()],
        assistant(1, 1, text(), source={"kind": "model", "provider": "", "model": "m"}),
        "message must have model source",
    ),
    Rule("tool result with empty call id", CALLED, tool_result(call_id=""), "message must have tool source"),
    Rule("tool result with non-string call id", CALLED, tool_result(call_id=7), "message must have tool source"),
    Rule(
        "tool result from a user source",
        CALLED,
        tool_result(source={"kind": "user", "call_id": "call_1"}),
        "message must have tool source",
    ),
    Rule(
        "tool result with two blocks",
        CALLED,
        tool_result(content=[result_message()["content"][0], result_message()["content"][0]]),
        "message must contain one tool-result block",
    ),
    Rule(
        "tool result block without list content",
        CALLED,
        tool_result(content=[{"type": "tool-result", "tool_call_id": "call_1", "content": "ok", "is_error": False}]),
        "message must contain one tool-result block",
    ),
    Rule(
        "tool result block ids disagree",
        CALLED,
        tool_result(content=[{"type": "tool-result", "tool_call_id": "call_2", "content": [], "is_error": False}]),
        "message has mismatched tool call ids",
    ),
    Rule("step end with a call unanswered", CALLED, step_end(), "step/end leaves unresolved tool call call_1"),
    # assistant tool-call blocks
    Rule(
        "assistant tool call with empty id",
        [user()],
        assistant(1, 1, call_block("")),
        "the tool call at content[0] must have a non-empty string id, got ''",
    ),
    Rule(
        "assistant tool call with empty name",
        [user()],
        assistant(1, 1, call_block("call_1", name="")),
        "the tool call at content[0] must have a non-empty string name, got ''",
    ),
    Rule(
        "assistant tool calls sharing an id",
        [user()],
        assistant(1, 1, call_block("c"), call_block("c")),
        "duplicate tool call id c",
    ),
    Rule(
        "assistant message with invalid usage",
        [user()],
        assistant(1, 1, text(), usage={"input_tokens": 1}),
        "message has invalid usage",
    ),
    Rule(
        "assistant message with error finish lacking failure",
        [user()],
        assistant(1, 1, text(), finish={"kind": "error"}),
        "message has invalid finish",
    ),
    Rule(
        "second assistant message in a step",
        [*OPEN_CALL[:1], assistant(1, 1, text())],
        assistant(1, 1, text(), id="a2"),
        "assistant/message of turn 1 step 1 is already recorded",
    ),
    # tool/call
    Rule(
        "tool call with empty call id",
        OPEN_CALL,
        tool_call(call_id=""),
        "tool/call must have a non-empty string call_id, got ''",
    ),
    Rule(
        "tool call with non-string call id",
        OPEN_CALL,
        tool_call(call_id=1),
        "tool/call must have a non-empty string call_id, got 1",
    ),
    Rule("tool call with empty name", OPEN_CALL, tool_call(name=""), "tool/call must have a non-empty string name"),
    Rule(
        "tool call with non-string arguments",
        OPEN_CALL,
        tool_call(arguments={"path": "a"}),
        "tool/call arguments must be a string",
    ),
    Rule(
        "tool call after a failed attempt only",
        [user(), attempt()],
        tool_call(),
        "tool/call call_1 has no assistant/message in turn 1 step 1",
    ),
    Rule(
        "tool call the model never made",
        OPEN_CALL,
        tool_call(call_id="call_9"),
        "tool/call call_9 is not a tool call of the assistant/message of turn 1 step 1",
    ),
    Rule(
        "tool call under another name",
        OPEN_CALL,
        tool_call(name="rm"),
        "tool/call call_1 names 'rm'; the assistant/message calls 'read_file'",
    ),
    Rule("tool call recorded twice", CALLED, tool_call(), "tool/call call_1 is already recorded"),
    # tool/result pairing
    Rule("tool result before its call", OPEN_CALL, tool_result(), "tool result for unknown tool call call_1"),
    Rule(
        "tool result for another step",
        [*RESOLVED, step_end(), assistant(1, 2, text(), id="a2")],
        tool_result(1, 2, "call_1", id="r2"),
        "tool result for unknown tool call call_1",
    ),
    Rule(
        "tool result recorded twice",
        RESOLVED,
        tool_result(id="r2"),
        "tool result for tool call call_1 is already recorded",
    ),
    # structure
    Rule(
        "turn end with a call unanswered",
        CALLED,
        turn_end(1, {"kind": "error", "failure": FAILURE}),
        "turn/end leaves unresolved tool call call_1",
    ),
    Rule("turn end with an unknown kind", [user()], turn_end(1, {"kind": "done"}), "turn/end has invalid reason"),
    Rule("event in an ended turn", [*RESOLVED, step_end(), turn_end()], step_end(1, 2), "turn 1 has already ended"),
    Rule(
        "turn begins while another is open",
        RESOLVED,
        assistant(2, 1, text(), id="a2"),
        "turn 2 begins while turn 1 is still open",
    ),
    Rule("turn goes backwards", [*tool_turn(2)], assistant(1, 1, text(), id="a9"), "turn 1 does not follow turn 2"),
    Rule("step already ended", [*RESOLVED, step_end()], retry(1, 1), "step 1 of turn 1 has already ended"),
    Rule(
        "step begins while another is open",
        CALLED,
        assistant(1, 2, text(), id="a2"),
        "step 2 of turn 1 begins while step 1 is still open",
    ),
    Rule(
        "user message inside an open step", CALLED, user(id="u2"), "user/message arrives while step 1 of turn 1 is open"
    ),
    Rule("negative turn", [user()], step_end(-1, 1), "step/end has invalid turn -1"),
    Rule("boolean step", [user()], step_end(1, cast(int, True)), "step/end has invalid step True"),
    Rule(
        "attempt with a non-chunk in its stream",
        [user()],
        attempt(stream=[{"type": "bogus"}]),
        "assistant/attempt has invalid stream: chunk 0 is not a chunk",
    ),
    Rule("attempt numbered zero", [user()], attempt(number=0), "assistant/attempt has invalid attempt 0"),
    Rule("retry with a negative delay", [user()], retry(delay_ms=-1), "llm/retry has invalid delay_ms -1"),
    Rule(
        "retry without failure code",
        [user()],
        retry(failure={"code": "", "message": "x"}),
        "llm/retry has invalid failure",
    ),
    # envelope (reachable through the raw append)
    Rule("unknown event type", [], ("agent/thought", {}), "unknown event type 'agent/thought'"),
    Rule("data that is not an object", [], ("step/end", cast(dict[str, Any], [1, 1])), "data is not an object"),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_refuses_the_append_and_leaves_the_file_untouched(log: Path, rule: Rule) -> None:
    with open_session(log, rule.before) as session:
        before, events = log.read_bytes(), session.events
        with pytest.raises(SessionWriteError) as refused:
            session.append(*rule.bad)
        assert rule.message in str(refused.value)
        assert f"session event at seq {len(rule.before) + 1}" in str(refused.value)
        assert "Nothing was written" in str(refused.value)
        assert log.read_bytes() == before
        assert session.events == events
    assert Session.load(log) == events


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_makes_a_stored_log_unloadable_naming_line_and_seq(log: Path, rule: Rule) -> None:
    write_log(log, [*rule.before, rule.bad])
    bad = len(rule.before) + 1
    with pytest.raises(SessionCorruptionError) as corrupt:
        Session.load(log)
    assert (corrupt.value.line, corrupt.value.seq) == (bad, bad)
    assert rule.message in corrupt.value.reason
    assert corrupt.value.reason.startswith(f"session event at seq {bad}")
    assert f"line {bad}, seq {bad}" in str(corrupt.value)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_is_stated_by_validate_event_itself(rule: Rule) -> None:
    state = SessionState()
    for seq, (event_type, data) in enumerate(rule.before, 1):
        state = adopt_event({"v": 1, "seq": seq, "type": event_type, "data": data}, state, subject="setup")
    seq = len(rule.before) + 1
    bad = {"v": 1, "seq": seq, "type": rule.bad[0], "data": rule.bad[1]}
    with pytest.raises(SessionValidationError, match=re.escape(rule.message)):
        validate_event(bad, state, subject=f"session event at seq {seq}")


# -- envelope rules only a stored file can break ------------------------------------------------------------------


def raw_line(**fields: Any) -> str:
    return json.dumps({"v": 1, "seq": 2, "type": "step/end", "data": {"turn": 1, "step": 1}} | fields) + "\n"


@pytest.mark.parametrize(
    ("line", "seq", "message"),
    [
        pytest.param(raw_line(v=2), 2, "unsupported format version 2", id="version 2"),
        pytest.param(raw_line(v=True), 2, "unsupported format version True", id="boolean version"),
        pytest.param(raw_line(seq=3), 3, "seq 3 does not follow seq 1 (expected 2)", id="seq gap"),
        pytest.param(raw_line(seq=1), 1, "seq 1 does not follow seq 1", id="seq repeated"),
        pytest.param(raw_line(seq="2"), None, "seq must be an integer, got '2'", id="string seq"),
        pytest.param("[1, 2]\n", None, "session event on line 2 is not an object", id="not an object"),
        pytest.param("{not json}\n", None, "line 2 is not JSON", id="not json"),
        pytest.param('{"v": 1, "seq": 2, "data": NaN}\n', None, "line 2 is not JSON", id="NaN"),
    ],
)
def test_envelope_rule_makes_a_stored_log_unloadable(log: Path, line: str, seq: int | None, message: str) -> None:
    log.write_text(line_of(1, user()) + line + line_of(3, user(id="u3")), encoding="utf-8")
    with pytest.raises(SessionCorruptionError) as corrupt:
        Session.load(log)
    assert (corrupt.value.line, corrupt.value.seq) == (2, seq)
    assert message in str(corrupt.value)


def test_corrupt_log_refuses_to_open_and_releases_the_lock(log: Path) -> None:
    write_log(log, [*CALLED, tool_result(call_id="")])
    for _ in range(2):  # the second open fails the same way, not with SessionLockedError
        with pytest.raises(SessionCorruptionError, match="message must have tool source"):
            Session.open(log, fsync=False)


# -- the typed appends refuse a bad call id -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call_id", "message"),
    [
        pytest.param("", "tool/call must have a non-empty string call_id, got ''", id="empty"),
        pytest.param(None, "tool/call must have a non-empty string call_id, got None", id="none"),
        pytest.param(42, "tool/call must have a non-empty string call_id, got 42", id="int"),
        pytest.param("call_9", "tool/call call_9 is not a tool call of the assistant/message", id="unknown"),
    ],
)
def test_append_tool_call_refuses_bad_call_id(log: Path, call_id: Any, message: str) -> None:
    with open_session(log, OPEN_CALL) as session:
        before = log.read_bytes()
        with pytest.raises(SessionWriteError, match=re.escape(message)):
            session.append_tool_call(1, 1, call_id, "read_file", "{}")
        assert log.read_bytes() == before


@pytest.mark.parametrize(
    ("call_id", "message"),
    [
        pytest.param("", "message must have tool source", id="empty"),
        pytest.param(None, "message must have tool source", id="none"),
        pytest.param(42, "message must have tool source", id="int"),
        pytest.param("call_9", "tool result for unknown tool call call_9", id="unpaired"),
    ],
)
def test_append_tool_result_refuses_bad_call_id(log: Path, call_id: Any, message: str) -> None:
    with open_session(log, CALLED) as session:
        before = log.read_bytes()
        with pytest.raises(SessionWriteError, match=re.escape(message)):
            session.append_tool_result(1, 1, call_id, "ok")
        assert log.read_bytes() == before


def test_append_refuses_values_json_cannot_hold(log: Path) -> None:
    with open_session(log, [user()]) as session:
        before = log.read_bytes()
        with pytest.raises(SessionWriteError, match="not JSON-serialisable"):
            session.append_retry(1, 1, 1, 3, float("nan"), FAILURE)
        with pytest.raises(SessionWriteError, match="not JSON-serialisable"):
            session.append_user_message("\ud800")
        assert log.read_bytes() == before


# -- a full turn --------------------------------------------------------------------------------------------------


def record_tool_turn(session: Session) -> None:
    """What the loop writes for a turn with a failed attempt, a retry, one tool call and a final answer."""
    turn = session.next_turn()
    session.append_user_message("what is in a?", id="u1")
    session.append_attempt(
        turn,
        1,
        1,
        [BlockStart(0, "tool-call"), ToolCallDelta(0, "", "read_file", '{"pa')],
        Failure("STREAM_CLOSED", "the bytes ended before [DONE]"),
    )
    session.append_retry(turn, 1, 1, 3, 500.0, Failure("STREAM_CLOSED", "the bytes ended before [DONE]"))
    session.append_assistant_message(
        turn,
        1,
        content=[TextBlock("Let me look."), ToolCallBlock("call_1", "read_file", '{"path":"a"}')],
        provider="openai",
        model="gpt-4o",
        usage=Usage(10, 5),
        finish=FinishReason("tool-calls"),
        id="a1",
    )
    session.append_tool_call(turn, 1, "call_1", "read_file", '{"path":"a"}')
    session.append_tool_result(turn, 1, "call_1", "a: 1 — ünïcode\u2028line", id="r1")
    session.append_step_end(turn, 1)
    session.append_assistant_message(
        turn,
        2,
        content=[reasoning("a holds 1"), text("a holds 1.")],
        provider="openai",
        model="gpt-4o",
        usage=None,
        finish={"kind": "stop"},
        id="a2",
    )
    session.append_step_end(turn, 2)
    session.append_turn_end(turn, {"kind": "stop"})


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


def test_messages_replay_the_history_in_openai_chat_format(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        record_tool_turn(session)
        assert session.messages() == [
            {"role": "user", "content": "what is in a?"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a: 1 — ünïcode\u2028line"},
            {"role": "assistant", "content": "a holds 1."},
        ]


def test_messages_answer_a_never_run_tool_call_of_a_closed_step(log: Path) -> None:
    with open_session(log, [user(), assistant(1, 1, call_block("call_1")), step_end(), turn_end()]) as session:
        assert session.messages()[1:] == [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": NOT_RUN_TOOL_RESULT},
        ]


def test_failed_attempt_is_kept_but_never_replayed_and_never_calls_tools(log: Path) -> None:
    stream = [
        BlockEnd(0, ToolCallBlock("call_1", "read_file", "{}")).to_json(),
        Finish(FinishReason.error("X", "x")).to_json(),
    ]
    with open_session(log, [user(), attempt(stream=stream), retry()]) as session:
        assert session.messages() == [{"role": "user", "content": "hi"}]
        with pytest.raises(SessionWriteError, match="no assistant/message in turn 1 step 1"):
            session.append_tool_call(1, 1, "call_1", "read_file", "{}")


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
    assert check(log) == []


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


def test_second_writer_in_another_process_is_refused(log: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys; from pipeline._session import Session\n"
                f"s = Session.open({str(log)!r})\nprint('ready', flush=True)\nsys.stdin.read()\ns.close()"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"ready"
        with pytest.raises(SessionLockedError, match=rf"\(pid {holder.pid}\)"):
            Session.open(log)
    finally:
        holder.communicate(b"")
    Session.open(log).close()


def test_log_and_lock_are_created_owner_only(log: Path) -> None:
    with Session.open(log) as session:
        session.append_user_message("secret")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.with_name(log.name + ".lock").stat().st_mode) == 0o600


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


# -- check and repair ---------------------------------------------------------------------------------------------


def broken_turn(turn: int) -> list[Event]:
    """What an older writer left: a tool call closed with ``id:""`` and its pair (anchor P4)."""
    return [
        user("read b", id=f"u{turn}"),
        assistant(turn, 1, call_block(""), id=f"a{turn}"),
        tool_call(turn, 1, ""),
        tool_result(turn, 1, "", id=f"r{turn}"),
        step_end(turn, 1),
        turn_end(turn),
    ]


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


# -- properties ---------------------------------------------------------------------------------------------------

texts = st.text(max_size=12)
call_ids = st.text(min_size=1, max_size=6)


@st.composite
def conversations(draw: st.DrawFn) -> list[Event]:
    """Any prefix of a valid session: turns of steps with attempts, retries, tool calls and their results."""
    events: list[Event] = []
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        events.append(user(draw(texts), id=f"u{turn}"))
        steps = draw(st.integers(1, 2))
        for step in range(1, steps + 1):
            for number in range(1, draw(st.integers(0, 2)) + 1):
                events.append(attempt(turn, step, number, [TextDelta(0, draw(texts)).to_json()]))
                events.append(retry(turn, step, number, delay_ms=draw(st.floats(0, 1e6))))
            ids = draw(st.lists(call_ids, unique=True, max_size=3))
            blocks = [reasoning(draw(texts)), text(draw(texts)), *(call_block(i, arguments=draw(texts)) for i in ids)]
            events.append(assistant(turn, step, *blocks, id=f"a{turn}.{step}"))
            for call_id in ids:
                events.append(tool_call(turn, step, call_id, arguments=blocks[2 + ids.index(call_id)]["arguments"]))
                events.append(tool_result(turn, step, call_id, value=draw(texts), id=f"r{turn}.{call_id}"))
            events.append(step_end(turn, step))
        events.append(turn_end(turn, draw(st.sampled_from([STOP, {"kind": "max-steps"}]))))
    return events[: draw(st.integers(0, len(events)))]


@contextlib.contextmanager
def fresh_log() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory) / "session.jsonl"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_load_returns_exactly_the_appended_events(events: list[Event]) -> None:
    with fresh_log() as path:
        with Session.open(path, fsync=False) as session:
            appended = [session.append(event_type, data) for event_type, data in events]
        assert [(event.type, event.data) for event in appended] == events
        assert Session.load(path) == appended
        assert check(path) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations().filter(bool), st.data())
def test_open_keeps_every_complete_line_before_a_torn_one(events: list[Event], data: st.DataObject) -> None:
    with fresh_log() as path:
        with Session.open(path, fsync=False) as session:
            appended = [session.append(event_type, payload) for event_type, payload in events]
        lines = [line + b"\n" for line in path.read_bytes().split(b"\n")[:-1]]  # only a newline byte ends a line
        assert len(lines) == len(appended)
        torn_index = data.draw(st.integers(0, len(lines) - 1), label="torn line")
        cut = data.draw(st.integers(0, len(lines[torn_index]) - 1), label="bytes kept")
        complete = b"".join(lines[:torn_index])
        path.write_bytes(complete + lines[torn_index][:cut])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reopened = Session.open(path, fsync=False)
        with reopened:
            assert reopened.events == appended[:torn_index]
            assert reopened.recovered_torn_tail == (cut > 0)
            assert [w.category for w in caught] == ([SessionTornTailWarning] if cut else [])
        assert path.read_bytes() == complete
