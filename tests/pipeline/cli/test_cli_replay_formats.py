"""``llm-stream replay --format``: each wire format replayed to the same assembled object, named or detected."""

from __future__ import annotations

import json

import pytest
from corpus import FIXTURES, GEMINI_PEER_STREAMS

from pipeline.cli import main

SHARED = FIXTURES
RESPONSES_TOOL = SHARED / "responses" / "02-vercel-ai-reasoning-summary-function-call.sse"
CHAT = sorted((SHARED / "sse" / "real").glob("*.sse"))[0]


def assembled(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["replay", "--assembled", *argv]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_replay_format_responses_prints_the_assembled_object_of_a_responses_stream(
    capsys: pytest.CaptureFixture[str],
) -> None:
    named = assembled(capsys, "--format", "responses", str(RESPONSES_TOOL))
    assert set(named) == {"text", "reasoning", "tool_calls", "usage", "finish"}
    assert named["tool_calls"] == [
        {"id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "name": "calculator", "arguments": '{"a":12,"b":7,"op":"add"}'}
    ]
    assert named["finish"] == {"kind": "tool-calls", "code": None, "message": None}
    assert assembled(capsys, str(RESPONSES_TOOL)) == named  # detected from the first event


def test_replay_shows_what_a_reasoning_block_carries_by_size_never_its_content(
    capsys: pytest.CaptureFixture[str],
) -> None:
    signed = SHARED / "messages" / "11-pydantic-ai-thinking-signature.sse"
    redacted = SHARED / "messages" / "12-pydantic-ai-redacted-thinking.sse"
    assert main(["replay", "--color", "never", str(signed)]) == 0
    assert main(["replay", "--color", "never", str(redacted)]) == 0
    out = capsys.readouterr().out
    ends = [line for line in out.splitlines() if "■ end" in line and "reasoning" in line]
    assert "signed (" in ends[0]
    assert "encrypted (744 characters)" in ends[1]
    raw = [json.loads(line[5:]) for line in redacted.read_text().splitlines() if line.startswith("data:")]
    blocks = [e["content_block"] for e in raw if "content_block" in e]
    data = next(block["data"] for block in blocks if block.get("type") == "redacted_thinking")
    assert data not in out


def test_replay_format_chat_is_what_detection_gives_for_a_chat_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert assembled(capsys, "--format", "chat", str(CHAT)) == assembled(capsys, str(CHAT))


def test_replay_refuses_an_unknown_format_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["replay", "--format", "bedrock", str(CHAT)])
    assert raised.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.server
@pytest.mark.parametrize("api", ["messages", "responses"])
def test_chat_api_speaks_each_format_to_the_emulator(capsys: pytest.CaptureFixture[str], api: str) -> None:
    from pipeline.emulator import Emulator

    with Emulator() as emu:
        code = main(["chat", "weather?", "--base-url", emu.base_url, "--model", "clean-tool", "--api", api,
                     "--assembled"])
        sent = [r.path for r in emu.state.requests]
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["arguments"]) for c in result["tool_calls"]] == [("get_weather", '{"city": "Paris"}')]
    assert sent == [f"/v1/{api}"]


def test_replay_format_gemini_prints_the_assembled_object_of_a_gemini_stream(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream = GEMINI_PEER_STREAMS / "04-vercel-fixture-text-then-call-with-wire-id.sse"
    named = assembled(capsys, "--format", "gemini", str(stream))
    assert named["text"] == "Let me check."
    assert named["tool_calls"] == [{"id": "g1bmv6il", "name": "get_weather", "arguments": '{"city":"San Francisco"}'}]
    assert named["finish"] == {"kind": "tool-calls", "code": None, "message": None}
    assert assembled(capsys, str(stream)) == named  # detected from the first event
