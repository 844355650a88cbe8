"""Shared pieces of the turn-loop tests: a loopback emulator per module, clients keyed per test, recording tools,
and readers of the turn events and of the session log.

The ``agent`` profile scripts a multi-step conversation by the number of assistant messages in the request: step 1
is the seed's bug (two ``get_weather`` calls whose continuation deltas repeat identity as ``""`` and ``null``), step
2 is first a never-identified call (refused with ``MALFORMED_TOOL_CALL`` and retried) and then two parallel calls,
later steps a plain text answer. The step-2 counter is keyed by ``x-emulator-key``, so each test uses its own key.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from operators import RetryPolicy
from pipeline import (
    ChatClient,
    Session,
    SessionEvent,
    ToolRegistry,
    TurnEvent,
    run_turn_to_end,
)
from pipeline.emulator import Emulator, EmulatorConfig, RecordedRequest

__all__ = [
    "AGENT_KINDS",
    "AGENT_TYPES",
    "FAST",
    "LIMIT",
    "PARALLEL_WAIT",
    "Tools",
    "assert_no_empty_call_id",
    "call_ids_in",
    "interrupted_log",
    "kinds",
    "make_client",
    "messages_of",
    "new_key",
    "of_type",
    "replay_config",
    "requests_for",
    "run_agent",
    "turn_end",
    "types_of",
]

FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5)
"""Retries without real waiting."""

LIMIT = 10.0
"""Seconds any single conversation may take before the test fails instead of hanging."""

PARALLEL_WAIT = 2.0
"""How long each parallel tool waits for the other to start: only reached when they do not run concurrently."""


def replay_config(tmp_path_factory: pytest.TempPathFactory) -> EmulatorConfig:
    """The emulator configuration of a test module (its ``emulator_config`` fixture): replaying from a fresh folder."""
    return EmulatorConfig(replay_dirs=[tmp_path_factory.mktemp("replay")])


def new_key() -> str:
    return f"test-turn-{uuid.uuid4().hex}"


def make_client(
    emu: Emulator,
    model: str,
    *,
    key: str | None = None,
    policy: RetryPolicy = FAST,
    headers: Mapping[str, str] | None = None,
) -> ChatClient:
    sent = dict(headers or {})
    if key is not None:
        sent["x-emulator-key"] = key
    return ChatClient(emu.base_url, model=model, retry_policy=policy, headers=sent)


def requests_for(emu: Emulator, key: str) -> list[RecordedRequest]:
    return [request for request in emu.state.requests if request.headers.get("x-emulator-key") == key]


def messages_of(request: RecordedRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = request.body["messages"]
    return messages


class Tools:
    """``get_weather`` and ``get_time``, recording their calls.

    With ``rendezvous``, the third ``get_weather`` call (the parallel step's) and ``get_time`` each wait for the
    other to have started: run one after the other, each would time out and return an error result instead.
    """

    def __init__(self, *, with_time: bool = True, rendezvous: bool = True) -> None:
        self.calls: list[tuple[str, str]] = []
        self.weather_started = asyncio.Event()
        self.time_started = asyncio.Event()
        self.met = False
        self.registry = ToolRegistry()
        rendezvous_weather = rendezvous

        async def get_weather(city: str) -> str:
            """Current weather for a city."""
            self.calls.append(("get_weather", city))
            if rendezvous_weather and sum(1 for name, _ in self.calls if name == "get_weather") == 3:
                self.weather_started.set()
                async with asyncio.timeout(PARALLEL_WAIT):
                    await self.time_started.wait()
                self.met = True
            return f"{city}: sunny, 21 C"

        async def get_time(timezone: str) -> str:
            """Current time in a timezone."""
            self.calls.append(("get_time", timezone))
            self.time_started.set()
            async with asyncio.timeout(PARALLEL_WAIT):
                await self.weather_started.wait()
            return f"12:00 in {timezone}"

        self.registry.register(get_weather)
        if with_time:
            self.registry.register(get_time)


def kinds(events: Sequence[TurnEvent]) -> list[str]:
    """The turn events a UI sees, without the chunks."""
    return [event.kind for event in events if event.kind != "chunk"]


def types_of(events: Sequence[SessionEvent]) -> list[str]:
    return [event.type for event in events]


def of_type(events: Sequence[SessionEvent], event_type: str) -> list[Mapping[str, Any]]:
    return [event.data for event in events if event.type == event_type]


def call_ids_in(value: Any) -> Iterator[tuple[str, Any]]:
    """Every call id in a decoded JSON value: ``call_id``, ``tool_call_id`` and the ``id`` of a tool-call block."""
    if isinstance(value, dict):
        for key in ("call_id", "tool_call_id"):
            if key in value:
                yield key, value[key]
        if value.get("type") == "tool-call":
            yield "tool-call id", value.get("id")
        for item in value.values():
            yield from call_ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from call_ids_in(item)


def assert_no_empty_call_id(path: Path) -> int:
    """Scans every line of the log; returns how many call ids it saw (so a vacuous pass is visible)."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for key, value in call_ids_in(json.loads(line)):
            assert isinstance(value, str), f"line {number}: {key} is {value!r}"
            assert value != "", f"line {number}: {key} is empty"
            seen += 1
    return seen


def turn_end(events: Sequence[SessionEvent]) -> Mapping[str, Any]:
    ends = of_type(events, "turn/end")
    assert len(ends) >= 1
    reason: Mapping[str, Any] = ends[-1]["reason"]
    return reason


AGENT_KINDS = [
    "step-start",
    "assistant-message",
    "tool-call",
    "tool-call",
    "tool-result",
    "tool-result",
    "step-end",
    "step-start",
    "attempt-failed",
    "retry",
    "assistant-message",
    "tool-call",
    "tool-call",
    "tool-result",
    "tool-result",
    "step-end",
    "step-start",
    "assistant-message",
    "step-end",
    "turn-end",
]

AGENT_TYPES = [
    "user/message",
    "assistant/message",
    "tool/call",
    "tool/call",
    "tool/result",
    "tool/result",
    "step/end",
    "assistant/attempt",
    "llm/retry",
    "assistant/message",
    "tool/call",
    "tool/call",
    "tool/result",
    "tool/result",
    "step/end",
    "assistant/message",
    "step/end",
    "turn/end",
]


async def run_agent(emu: Emulator, path: Path, tools: Tools, key: str, prompt: str = "Weather?") -> list[TurnEvent]:
    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, prompt)
            assert Session.load(path) == session.events
    return events


async def interrupted_log(emu: Emulator, path: Path, keep: int) -> list[str]:
    """A one-step tool-calling turn, cut after its first ``keep`` lines (a crash between two appends)."""
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny, 21 C"

    async with asyncio.timeout(LIMIT), make_client(emu, "clean-tool") as client:
        with Session.open(path) as session:
            await run_turn_to_end(client, session, registry, "Weather?", max_steps=1)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [json.loads(line)["type"] for line in lines] == [
        "user/message", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end",
    ]
    path.write_text("".join(lines[:keep]), encoding="utf-8")
    return lines[:keep]
