"""``Session.messages``: the history of the next request, built from immutable events."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_builders import (
    assistant,
    attempt,
    call_block,
    open_session,
    record_tool_turn,
    retry,
    step_end,
    turn_end,
    user,
)

from operators import BlockEnd, Finish, FinishReason, ToolCallBlock
from pipeline.session import NOT_RUN_TOOL_RESULT, Session, SessionWriteError


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


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
        BlockEnd(0, ToolCallBlock("call_1", "read_file", "{}")).to_dict(),
        Finish(FinishReason.error("X", "x")).to_dict(),
    ]
    with open_session(log, [user(), attempt(stream=stream), retry()]) as session:
        assert session.messages() == [{"role": "user", "content": "hi"}]
        with pytest.raises(SessionWriteError, match="no assistant/message in turn 1 step 1"):
            session.append_tool_call(1, 1, "call_1", "read_file", "{}")
