"""``run_turn`` with ``ChatClient(api="messages" | "responses")`` against the emulator's ``agent`` profile of each
format, over loopback: the seed's broken tool call assembled, the tool run, its result sent back, a final answer,
and a session log that loads again."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import ChatClient, Session, ToolRegistry, run_turn
from pipeline.emulator import Emulator

pytestmark = pytest.mark.server  # tests/tiers.py


@pytest.mark.parametrize("api", ["messages", "responses"])
async def test_a_tool_turn_completes_on_each_format_and_the_log_loads(tmp_path: Path, api: str) -> None:
    registry = ToolRegistry()
    calls: list[str] = []

    @registry.register
    async def get_weather(city: str) -> str:
        """Current weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    log = tmp_path / "session.jsonl"
    async with Emulator() as emu, ChatClient(emu.base_url, model="agent", api=api) as client:  # type: ignore[arg-type]
        with Session.open(log) as session:
            kinds = [event.kind async for event in run_turn(client, session, registry, "weather in Paris?")]
        sent = [r for r in emu.state.requests if r.path.endswith(f"/{api}")]
    assert [k for k in kinds if k != "chunk"] == [
        "step-start", "assistant-message", "tool-call", "tool-result", "step-end",
        "step-start", "assistant-message", "step-end", "turn-end",
    ]
    assert calls == ["Paris"]
    assert len(sent) == 2  # the second request carries the call and its result in the API's own shape
    second = sent[1].body
    text = str(second)
    assert "sunny in Paris" in text
    assert ("tool_result" in text) if api == "messages" else ("function_call_output" in text)
    with Session.open(log) as reloaded:
        assert reloaded.state is not None


@pytest.mark.parametrize(("api", "profile"), [("messages", "thinking-tool"), ("responses", "reasoning-tool")])
async def test_a_tool_turn_sends_the_reasoning_back_as_the_provider_requires(
    tmp_path: Path, api: str, profile: str
) -> None:
    """The emulator refuses (400) a follow-up without the signed thinking and redacted_thinking blocks (Messages)
    or the reasoning item with its encrypted_content (Responses), exactly as sent: the turn completing proves the
    round trip (docs/decisions/0028-reasoning-round-trip.md); the log keeps the blocks and loads again."""
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Current weather in a city."""
        return f"sunny in {city}"

    log = tmp_path / "session.jsonl"
    async with Emulator() as emu, ChatClient(emu.base_url, model=profile, api=api) as client:  # type: ignore[arg-type]
        with Session.open(log) as session:
            events = [event async for event in run_turn(client, session, registry, "weather in Paris?")]
        sent = [r for r in emu.state.requests if r.path.endswith(f"/{api}")]
    kinds = [event.kind for event in events if event.kind != "chunk"]
    assert kinds[-1] == "turn-end"
    assert kinds.count("assistant-message") == 2
    assert "tool-result" in kinds
    assert len(sent) == 2  # a refused follow-up (HTTP 400, INVALID_REQUEST) is not retried: it would end the turn
    with Session.open(log) as reloaded:
        history = reloaded.messages()
    blocks = history[1]["reasoning_blocks"]
    if api == "messages":
        assert [bool(b.get("signature")) for b in blocks] == [True, False]
        assert blocks[1]["text"] == ""
        assert blocks[1]["encrypted"]
    else:
        assert blocks[0]["item_id"].startswith("rs_")
        assert blocks[0]["encrypted"]
