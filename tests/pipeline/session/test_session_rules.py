"""Every session rule, from one table, on the write path, the read path and in ``validate_event`` itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
from session_builders import (
    CALLED,
    FAILURE,
    OPEN_CALL,
    RESOLVED,
    Event,
    assistant,
    attempt,
    call_block,
    line_of,
    open_session,
    result_message,
    retry,
    step_end,
    text,
    tool_call,
    tool_result,
    tool_turn,
    turn_end,
    user,
    write_log,
)

from pipeline.session import (
    Session,
    SessionCorruptionError,
    SessionState,
    SessionValidationError,
    SessionWriteError,
)
from pipeline.session._rules import adopt_event, validate_event


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
        "assistant reasoning with an empty signature",
        [user()],
        assistant(1, 1, {"type": "reasoning", "text": "t", "signature": ""}, text()),
        "the reasoning block at content[0] must have a non-empty string signature or none, got ''",
    ),
    Rule(
        "assistant reasoning with non-string encrypted reasoning",
        [user()],
        assistant(1, 1, {"type": "reasoning", "text": "", "encrypted": 7}, text()),
        "the reasoning block at content[0] must have a non-empty string encrypted or none, got 7",
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
        assistant(1, 1, text(), usage={"input_tokens": 1, "output_tokens": "2"}),
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
    Rule(
        "tool call of another kind than the model's",
        OPEN_CALL,
        tool_call(kind="shell"),
        "tool/call call_1 is a 'shell' call; the assistant/message's is a 'function' call",
    ),
    Rule("tool call with an empty kind", OPEN_CALL, tool_call(kind=""), "tool/call must have a non-empty string kind"),
    Rule(
        "custom tool call block with an empty id",
        [user()],
        assistant(1, 1, {**call_block("", "run_sql", "SELECT 1"), "kind": "custom"}),
        "the tool call at content[0] must have a non-empty string id, got ''",
    ),
    Rule(
        "tool call block with an empty kind",
        [user()],
        assistant(1, 1, {**call_block(), "kind": ""}),
        "the tool call at content[0] must have a non-empty string kind, got ''",
    ),
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
        _, state = adopt_event({"v": 1, "seq": seq, "type": event_type, "data": data}, state, subject="setup")
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
