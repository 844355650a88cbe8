"""Session events are typed, frozen values decoded by their ``type`` tag; the file format is the one written before
they were typed, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from session_builders import FAILURE, attempt, open_session, record_tool_turn, retry, tool_turn, user, write_log

from operators import LlmStreamError, Usage
from pipeline.session import (
    AssistantAttemptEvent,
    AssistantMessageEvent,
    LlmRetryEvent,
    Session,
    SessionCorruptionError,
    SessionError,
    SessionLockedError,
    SessionValidationError,
    SessionWriteError,
    StepEndEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)
from pipeline.session._events import event_line
from pipeline.session._values import TextPart


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


GOLDEN = (
    b'{"v":1,"seq":1,"type":"user/message","data":{"id":"u1","role":"user","source":{"kind":"user"},"content":'
    b'[{"type":"text","text":"what is in a?"}]}}\n'
    b'{"v":1,"seq":2,"type":"assistant/attempt","data":{"turn":1,"step":1,"attempt":1,"stream":[{"type":"block-start",'
    b'"index":0,"block_type":"tool-call"},{"type":"tool-call-delta","index":0,"id":"","name":"read_file",'
    b'"arguments_delta":"{\\"pa"}],"failure":{"code":"STREAM_CLOSED","message":"the bytes ended before [DONE]"}}}\n'
    b'{"v":1,"seq":3,"type":"llm/retry","data":{"turn":1,"step":1,"retry":1,"max_retries":3,"delay_ms":500.0,'
    b'"failure":{"code":"STREAM_CLOSED","message":"the bytes ended before [DONE]"}}}\n'
    b'{"v":1,"seq":4,"type":"assistant/message","data":{"turn":1,"step":1,"message":{"id":"a1","role":"assistant",'
    b'"source":{"kind":"model","provider":"openai","model":"gpt-4o"},"content":[{"type":"text","text":"Let me look."},'
    b'{"type":"tool-call","id":"call_1","name":"read_file","arguments":"{\\"path\\":\\"a\\"}"}],'
    b'"usage":{"input_tokens":10,"output_tokens":5},"finish":{"kind":"tool-calls"}}}}\n'
    b'{"v":1,"seq":5,"type":"tool/call","data":{"turn":1,"step":1,"call_id":"call_1","name":"read_file",'
    b'"arguments":"{\\"path\\":\\"a\\"}"}}\n'
    b'{"v":1,"seq":6,"type":"tool/result","data":{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":'
    b'{"kind":"tool","call_id":"call_1"},"content":[{"type":"tool-result","tool_call_id":"call_1","content":'
    b'[{"type":"text","text":"a: 1 \xe2\x80\x94 \xc3\xbcn\xc3\xafcode\xe2\x80\xa8line"}],"is_error":false}]}}}\n'
    b'{"v":1,"seq":7,"type":"step/end","data":{"turn":1,"step":1}}\n'
    b'{"v":1,"seq":8,"type":"assistant/message","data":{"turn":1,"step":2,"message":{"id":"a2","role":"assistant",'
    b'"source":{"kind":"model","provider":"openai","model":"gpt-4o"},"content":'
    b'[{"type":"reasoning","text":"a holds 1"},{"type":"text","text":"a holds 1."}],'
    b'"usage":null,"finish":{"kind":"stop"}}}}\n'
    b'{"v":1,"seq":9,"type":"step/end","data":{"turn":1,"step":2}}\n'
    b'{"v":1,"seq":10,"type":"turn/end","data":{"turn":1,"reason":{"kind":"stop"}}}\n'
)
"""What ``record_tool_turn`` wrote before session events were typed (the dict-based writer)."""


def test_the_typed_appends_write_the_format_written_before_events_were_typed(log: Path) -> None:
    with Session.open(log, fsync=False) as session:
        record_tool_turn(session)
    assert log.read_bytes() == GOLDEN


def test_a_log_written_before_events_were_typed_loads_and_encodes_back_byte_for_byte(log: Path) -> None:
    log.write_bytes(GOLDEN)
    events = Session.load(log)
    assert b"".join(event_line(event) for event in events) == GOLDEN
    assert [type(event) for event in events] == [
        UserMessageEvent,
        AssistantAttemptEvent,
        LlmRetryEvent,
        AssistantMessageEvent,
        ToolCallEvent,
        ToolResultEvent,
        StepEndEvent,
        AssistantMessageEvent,
        StepEndEvent,
        TurnEndEvent,
    ]
    assert [event.type for event in events][:3] == ["user/message", "assistant/attempt", "llm/retry"]


def test_each_event_type_decodes_to_its_own_class_with_typed_fields(log: Path) -> None:
    log.write_bytes(GOLDEN)
    first, _, retried, called, call, result, *_, end = Session.load(log)
    assert isinstance(first, UserMessageEvent)
    assert first.content == (TextPart("what is in a?"),)
    assert isinstance(retried, LlmRetryEvent)
    assert (retried.retry, retried.max_retries, retried.delay_ms, retried.failure.code) == (
        1,
        3,
        500.0,
        "STREAM_CLOSED",
    )
    assert isinstance(called, AssistantMessageEvent)
    assert [(part.id, part.name) for part in called.message.tool_calls] == [("call_1", "read_file")]
    assert isinstance(call, ToolCallEvent)
    assert (call.turn, call.step, call.call_id) == (1, 1, "call_1")
    assert isinstance(result, ToolResultEvent)
    assert result.call_id == "call_1"
    assert not result.message.content[0].is_error
    assert isinstance(end, TurnEndEvent)
    assert end.reason.kind == "stop"


def test_mutating_event_data_cannot_change_the_history_messages_sends(log: Path) -> None:
    """The issue's example: ``s.events[0].data["content"][0]["text"] = "x"`` used to change ``messages()``."""
    with Session.open(log, fsync=False) as s:
        record_tool_turn(s)
        before = s.messages()
        s.events[0].data["content"][0]["text"] = "x"
        s.events[3].data["message"]["content"].clear()
        s.messages()[0]["content"] = "y"
        assert s.messages() == before
        assert s.messages()[0] == {"role": "user", "content": "what is in a?"}
        assert s.events[0].data["content"][0]["text"] == "what is in a?"
        first = s.events[0]
        assert isinstance(first, UserMessageEvent)
        with pytest.raises(AttributeError):
            first.content = ()  # type: ignore[misc]
        with pytest.raises(AttributeError):
            first.content[0].text = "x"  # type: ignore[misc]
        assert isinstance(first.content, tuple)
        recorded = s.events[1]
        assert isinstance(recorded, AssistantAttemptEvent)
        assert isinstance(recorded.stream[0], MappingProxyType)
        with pytest.raises(TypeError):
            recorded.stream[0]["index"] = 7  # type: ignore[index]
    assert log.read_bytes() == GOLDEN


def test_data_is_the_line_s_data_object_as_plain_json(log: Path) -> None:
    log.write_bytes(GOLDEN)
    lines = GOLDEN.split(b"\n")[:-1]  # only a newline byte ends a line (U+2028 does not)
    for event, line in zip(Session.load(log), lines, strict=True):
        assert event.data == json.loads(line)["data"]
        assert event.to_dict() == json.loads(line)


def test_integer_numbers_stay_integers(log: Path) -> None:
    with open_session(log, [user()]) as session:
        session.append_retry(1, 1, 1, None, 2000, FAILURE)
    line = log.read_bytes().splitlines()[-1]
    assert b'"max_retries":null,"delay_ms":2000,' in line


def test_fields_the_types_do_not_know_are_not_written(log: Path) -> None:
    """The log holds what the typed event holds: an unknown key in ``data`` is validated away, not stored."""
    with Session.open(log, fsync=False) as session:
        event_type, data = user()
        event = session.append(event_type, {**data, "mood": "curious"})
    assert "mood" not in event.data
    assert b"mood" not in log.read_bytes()


def test_a_stored_attempt_stream_is_kept_as_written(log: Path) -> None:
    """An id not known yet is left out of a recorded delta (no empty call id in the log) and stays left out."""
    stream = [{"type": "tool-call-delta", "index": 0, "name": "read_file", "arguments_delta": "{"}]
    write_log(log, [user(), attempt(stream=stream)])
    (recorded,) = [event for event in Session.load(log) if isinstance(event, AssistantAttemptEvent)]
    assert recorded.data["stream"] == stream


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"input_tokens": "10", "output_tokens": 5},
            "message has invalid usage (Expected `int | float | null`, got `str` at usage.input_tokens)",
            id="usage",
        ),
        pytest.param(
            {"input_tokens": 10, "output_tokens": [5]},
            "message has invalid usage (Expected `int | float | null`, got `array` at usage.output_tokens)",
            id="usage field of the wrong type",
        ),
    ],
)
def test_shape_errors_name_the_field_and_what_was_expected(log: Path, data: dict[str, Any], message: str) -> None:
    with open_session(log, [user()]) as session, pytest.raises(SessionWriteError) as refused:
        session.append_assistant_message(
            1, 1, content=[], provider="openai", model="gpt-4o", usage=data, finish={"kind": "stop"}
        )
    assert message in str(refused.value)


def test_a_usage_count_the_provider_did_not_give_is_stored_absent_and_loads_back(log: Path) -> None:
    """Decision 0046: an unknown count is left out (never 0), in the log as in the protocol."""
    with open_session(log, [user()]) as session:
        session.append_assistant_message(
            1, 1, content=[], provider="openai", model="gpt-4o", usage=Usage(None, 5), finish={"kind": "stop"}
        )
    assert '"usage":{"output_tokens":5}' in log.read_text()
    (stored,) = [event for event in Session.load(log) if isinstance(event, AssistantMessageEvent)]
    assert stored.data["message"]["usage"] == {"output_tokens": 5}


def test_a_finish_failure_must_match_its_kind(log: Path) -> None:
    write_log(log, [user()])
    with open_session(log) as session, pytest.raises(SessionWriteError, match="stop with a failure"):
        session.append_turn_end(1, {"kind": "stop", "failure": FAILURE})
    with open_session(log) as session, pytest.raises(SessionWriteError, match="error without a failure"):
        session.append_turn_end(1, {"kind": "error"})


def test_a_retry_event_is_decoded_from_its_tag_alone() -> None:
    value = {"type": "llm/retry", "seq": 3, **retry()[1]}
    event = msgspec.convert(value, LlmRetryEvent | StepEndEvent, strict=True)
    assert isinstance(event, LlmRetryEvent)
    assert event.type == "llm/retry"


def test_every_session_error_derives_from_the_library_root() -> None:
    for error in (SessionError, SessionValidationError, SessionWriteError, SessionCorruptionError, SessionLockedError):
        assert issubclass(error, LlmStreamError)


def test_a_whole_tool_turn_is_typed_end_to_end(log: Path) -> None:
    with open_session(log, tool_turn(1)) as session:
        assert [event.type for event in session.events] == [event_type for event_type, _ in tool_turn(1)]
        assert [event.data for event in session.events] == [data for _, data in tool_turn(1)]


def test_a_retry_keeps_the_providers_wait_and_say_and_an_older_float_wait_still_loads(log: Path) -> None:
    failure = {"code": "RATE_LIMIT", "message": "slow down", "status": 429, "retry_after_ms": 40, "should_retry": True}
    older = {**failure, "retry_after_ms": 1500.0}
    with open_session(log) as session:
        written = [session.append(*retry(failure=failure)), session.append(*retry(number=2, failure=older))]

    loaded = Session.load(log)

    assert loaded == written
    assert [event.data["failure"] for event in loaded] == [failure, older]
