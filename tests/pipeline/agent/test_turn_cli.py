"""``llm-stream chat`` with a session and tools: the same loop from the command line, continuing a session, and one
a crash left mid-turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from turn_helpers import (
    AGENT_TYPES,
    assert_no_empty_call_id,
    interrupted_log,
    messages_of,
    of_type,
    replay_config,
    types_of,
)

from pipeline import (
    Session,
)
from pipeline.cli import main
from pipeline.emulator import Emulator, EmulatorConfig


@pytest.fixture(scope="module")
def emulator_config(tmp_path_factory: pytest.TempPathFactory) -> EmulatorConfig:
    return replay_config(tmp_path_factory)


# -- the CLI chat with a session and tools ----------------------------------------------------------------------------

TOOLS_MODULE = '''
"""Tools for the CLI test."""


async def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21 C"


async def get_time(timezone: str) -> str:
    """Current time in a timezone."""
    return f"12:00 in {timezone}"


TOOLS = [get_weather, get_time]
'''


def test_cli_chat_with_a_session_and_tools_runs_the_loop_and_continues(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "my_tools.py"
    module.write_text(TOOLS_MODULE, encoding="utf-8")
    path = tmp_path / "chat.jsonl"
    # The CLI sends no x-emulator-key, so the agent's step-2 counter is the default key's. Spend its one refusal
    # here, so the CLI's step 2 needs no retry (the CLI's backoff is the default 500 ms, a real wait).
    httpx.post(
        f"{emu.base_url}/chat/completions",
        json={"model": "agent", "stream": False, "messages": [{"role": "user", "content": "x"},
                                                             {"role": "assistant", "content": "y"}]},
        timeout=5.0,
    ).raise_for_status()
    first_request = len(emu.state.requests)
    argv = ["--session", str(path), "--tools", str(module), "--base-url", emu.base_url, "--model", "agent"]

    assert main(["chat", "Weather?", *argv]) == 0
    out = capsys.readouterr().out
    assert "-- turn 1 ended: stop" in out
    loaded = Session.load(path)
    assert types_of(loaded) == [t for t in AGENT_TYPES if t not in ("assistant/attempt", "llm/retry")]
    texts = [data["message"]["content"][0]["content"][0]["text"] for data in of_type(loaded, "tool/result")]
    assert texts == ["Paris: sunny, 21 C", "Berlin: sunny, 21 C", "Paris: sunny, 21 C", "12:00 in Europe/Paris"]
    assert assert_no_empty_call_id(path) >= 12

    assert main(["chat", "And tomorrow?", *argv]) == 0
    assert "-- turn 2 ended: stop" in capsys.readouterr().out
    again = Session.load(path)
    assert again[: len(loaded)] == loaded
    assert [data["turn"] for data in of_type(again, "turn/end")] == [1, 2]
    last = messages_of(emu.state.requests[-1])
    assert last[0] == {"role": "user", "content": "Weather?"}
    assert last[-1] == {"role": "user", "content": "And tomorrow?"}
    assert len(emu.state.requests) - first_request == 4


async def test_cli_chat_continues_a_session_a_crash_left_mid_turn(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    kept = await interrupted_log(emu, path, keep=3)  # crash after tool/call, before its result
    argv = ["chat", "Again?", "--session", str(path), "--base-url", emu.base_url, "--model", "clean"]
    code = await asyncio.to_thread(main, argv)
    if code == 2:  # a clean refusal
        assert "llm-stream:" in capsys.readouterr().err
        assert path.read_text(encoding="utf-8") == "".join(kept)
        return
    assert code == 0
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    result = of_type(loaded, "tool/result")[0]["message"]["content"][0]
    assert result["is_error"] is True  # the interrupted call's synthesised closer; the tool was not re-run


def test_cli_chat_reports_a_tools_module_whose_own_registration_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "bad_tools.py"
    module.write_text(BAD_TOOLS_MODULE, encoding="utf-8")

    assert main(["chat", "Hi", "--tools", str(module), "--base-url", "http://127.0.0.1:9", "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "cannot load tools from" in err
    assert "spread takes *values" in err


def test_cli_chat_refuses_a_custom_tool_for_an_api_other_than_responses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "custom_tools.py"
    module.write_text("from pipeline import CustomTool\nTOOLS = [CustomTool('echo', 'Echoes.', str)]\n")
    argv = ["--tools", str(module), "--base-url", "http://127.0.0.1:9", "--model", "m", "--session",
            str(tmp_path / "s.jsonl")]
    assert main(["chat", "Hi", *argv]) == 2
    err = capsys.readouterr().err
    assert "declares a 'custom' tool, which only the Responses API takes; this client speaks api='chat'" in err
    assert Session.load(tmp_path / "s.jsonl") == []  # refused before anything was written


BAD_TOOLS_MODULE = """
from pipeline.agent import ToolRegistry

registry = ToolRegistry()


@registry.register
def spread(*values: int) -> int:
    return sum(values)
"""
