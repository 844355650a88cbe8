"""A tool result longer than ``ToolRegistry(max_result_chars=)`` (100,000 unless given) is cut there with a marker
saying so: a tool returning 100 MB is written neither whole into the session nor into the next request.
docs/decisions/0041-tool-result-size.md."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from turn_helpers import LIMIT, make_client, messages_of, new_key, replay_config, requests_for

from pipeline import Session, ToolRegistry, run_turn_to_end
from pipeline.agent import ToolDefinitionError
from pipeline.emulator import Emulator, EmulatorConfig

HUNDRED_MB = 100 * 1024 * 1024


@pytest.fixture(scope="module")
def emulator_config(tmp_path_factory: pytest.TempPathFactory) -> EmulatorConfig:
    return replay_config(tmp_path_factory)


async def test_a_result_over_the_limit_is_cut_with_a_marker_saying_so() -> None:
    registry = ToolRegistry(max_result_chars=1000)
    registry.register(lambda: "x" * 5000, name="big", description="Returns a lot.")

    result = await registry.call("big", "{}")

    assert result.text.startswith("x" * 1000)
    assert result.text.endswith("[truncated: the tool returned 5,000 characters; only the first 1,000 are shown]")
    assert len(result.text) < 1100
    assert not result.is_error


async def test_a_result_within_the_limit_is_unchanged_and_none_means_no_limit() -> None:
    registry = ToolRegistry(max_result_chars=None)
    registry.register(lambda: "y" * 200_000, name="big", description="Returns a lot.")

    assert (await registry.call("big", "{}")).text == "y" * 200_000


def test_the_limit_is_a_positive_int_or_none() -> None:
    for bad in (0, -1, 1.5, "10"):
        with pytest.raises(ToolDefinitionError, match="max_result_chars"):
            ToolRegistry(max_result_chars=bad)  # type: ignore[arg-type]


async def test_a_tool_returning_100_mb_is_written_neither_into_the_session_nor_the_next_request(
    emu: Emulator, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return "z" * HUNDRED_MB

    key = new_key()
    path = tmp_path / "s.jsonl"
    async with asyncio.timeout(LIMIT * 3), make_client(emu, "clean-tool", key=key) as client:
        with Session.open(path) as session:
            await run_turn_to_end(client, session, registry, "Weather?", max_steps=2)

    assert path.stat().st_size < 1_000_000
    assert "[truncated: the tool returned 104,857,600 characters; only the first 100,000 are shown]" in (
        path.read_text(encoding="utf-8")
    )
    follow_up = requests_for(emu, key)[1]
    [tool_message] = [m for m in messages_of(follow_up) if m["role"] == "tool"]
    assert len(tool_message["content"]) < 101_000
