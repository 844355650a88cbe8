"""A tool call's signature (Gemini's ``thoughtSignature`` on a ``functionCall`` part, decision 0071) reaches the
chat-shaped history as ``extra_content.google.thought_signature``, through ``AssistantMessage.to_message()`` and the
session log; a call without one, and a log written before the field, are unchanged; the Messages and Responses
builders leave it out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from operators import BlockEnd, BlockStart, Finish, FinishReason, ToolCallBlock, chunk_from_dict
from pipeline.compose import assemble
from pipeline.formats import messages_request, responses_request
from pipeline.session import Session

SIGNED = ToolCallBlock("gemini-made-0", "get_weather", '{"city":"Paris"}', signature="CiQBsig")
PLAIN = ToolCallBlock("call-2", "get_time", "{}")


def answer(*calls: ToolCallBlock) -> Any:
    starts = [BlockStart(i, "tool-call") for i in range(len(calls))]
    ends = [BlockEnd(i, call) for i, call in enumerate(calls)]
    return assemble([*starts, *ends, Finish(FinishReason("tool-calls"))])


def test_the_block_json_has_the_signature_only_when_set_and_reads_back() -> None:
    assert SIGNED.to_dict()["signature"] == "CiQBsig"
    assert "signature" not in PLAIN.to_dict()
    for call in (SIGNED, PLAIN):
        assert chunk_from_dict(BlockEnd(0, call).to_dict()) == BlockEnd(0, call)


def test_to_message_puts_a_calls_signature_in_googles_extra_content() -> None:
    calls = answer(SIGNED, PLAIN).to_message()["tool_calls"]
    assert calls[0]["extra_content"] == {"google": {"thought_signature": "CiQBsig"}}
    assert "extra_content" not in calls[1]


def test_the_session_log_keeps_a_calls_signature_and_its_history_sends_it_back(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    message = answer(SIGNED, PLAIN)
    with Session.open(log, fsync=False) as session:
        session.append_user_message("weather?")
        session.append_assistant_message(
            1, 1, content=list(message.tool_calls), provider="p", model="m", usage=None, finish=message.finish
        )
        first = session.messages()
    with Session.open(log, fsync=False) as loaded:
        assert loaded.messages() == first
    assert first[1] == message.to_message()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    stored = next(line for line in lines if line.get("type") == "assistant/message")["data"]["message"]["content"]
    assert stored[0]["signature"] == "CiQBsig"
    assert "signature" not in stored[1]  # a call without one is written as before


def test_other_formats_builders_leave_the_signature_out() -> None:
    history = [
        {"role": "user", "content": "weather?"},
        answer(SIGNED).to_message(),
        {"role": "tool", "tool_call_id": "gemini-made-0", "content": "sunny"},
    ]
    assert "CiQBsig" not in json.dumps(messages_request(history, model="m"))
    assert "CiQBsig" not in json.dumps(responses_request(history, model="m"))
