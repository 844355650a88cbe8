"""Cancelling a turn: during the stream, during a pending retry, and while the tools run; each ends ``aborted``
with a log that loads."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from turn_helpers import (
    LIMIT,
    Tools,
    make_client,
    new_key,
    of_type,
    replay_config,
    requests_for,
    turn_end,
    types_of,
)

from operators import Code, Failure, Finish, FinishReason, RetryPolicy, TextDelta
from pipeline import (
    Session,
    ToolRegistry,
    TurnEvent,
    run_turn,
    run_turn_to_end,
)
from pipeline.emulator import Emulator, EmulatorConfig


@pytest.fixture(scope="module")
def emulator_config(tmp_path_factory: pytest.TempPathFactory) -> EmulatorConfig:
    return replay_config(tmp_path_factory)


async def test_cancel_after_the_first_chunk_ends_the_turn_aborted(emu: Emulator, tmp_path: Path) -> None:
    tools = Tools()
    path = tmp_path / "s.jsonl"
    cancel = asyncio.Event()
    seen: list[TurnEvent] = []
    started = time.monotonic()
    async with asyncio.timeout(LIMIT), make_client(emu, "slow-drip", headers={"x-emulator-drip-ms": "600"}) as client:
        with Session.open(path) as session:
            async for event in run_turn(client, session, tools.registry, "Hello?", cancel=cancel):
                seen.append(event)
                if event.kind == "chunk":
                    cancel.set()
    elapsed = time.monotonic() - started

    assert elapsed < 2.5  # the whole stream would take 7 x 600 ms (a bound a loaded machine keeps)
    assert seen[0].kind == "step-start"
    assert seen[-1].kind == "turn-end"
    chunks = [event.data for event in seen[1:-1]]
    assert all(event.kind == "chunk" for event in seen[1:-1])
    # what had already arrived with the first chunk is delivered, then the aborted finish: the stream stopped
    assert [chunk.text for chunk in chunks if isinstance(chunk, TextDelta)] == ["Hello"]
    assert chunks[-1] == Finish(FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")))
    assert seen[-1].data["kind"] == "aborted"
    assert seen[-1].data["failure"]["code"] == Code.ABORTED
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "turn/end"]
    assert turn_end(loaded)["kind"] == "aborted"
    assert of_type(loaded, "assistant/attempt")[0]["failure"]["code"] == Code.ABORTED


async def test_cancel_during_a_pending_retry_ends_the_turn_aborted_at_once(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    tools = Tools()
    path = tmp_path / "s.jsonl"
    cancel = asyncio.Event()
    policy = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5000)
    seen: list[TurnEvent] = []
    cancelled_at = 0.0
    headers = {"x-emulator-fail-first": "5", "x-emulator-retry-after": "5"}
    client = make_client(emu, "rate-limit", key=key, policy=policy, headers=headers)
    async with asyncio.timeout(LIMIT), client:
        with Session.open(path) as session:
            async for event in run_turn(client, session, tools.registry, "Hello?", cancel=cancel):
                seen.append(event)
                if event.kind == "retry":
                    cancelled_at = time.monotonic()
                    cancel.set()
    elapsed = time.monotonic() - cancelled_at

    retry = next(event for event in seen if event.kind == "retry")
    assert retry.data.delay_ms == 5000  # the provider's Retry-After: the retry was really pending for 5 s
    assert retry.data.failure.code == Code.RATE_LIMIT
    assert elapsed < 2.5  # not the 5 s wait (a bound a loaded machine keeps)
    assert seen[-1].kind == "turn-end"
    assert seen[-1].data["kind"] == "aborted"
    assert len(requests_for(emu, key)) == 1
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "llm/retry", "assistant/attempt", "turn/end"]
    assert [data["failure"]["code"] for data in of_type(loaded, "assistant/attempt")] == [Code.RATE_LIMIT, Code.ABORTED]
    assert turn_end(loaded)["kind"] == "aborted"


async def test_cancel_while_tools_run_abandons_them_with_error_results(emu: Emulator, tmp_path: Path) -> None:
    cancel = asyncio.Event()
    finished: list[str] = []
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Never answers on its own: it sets cancel and waits."""
        try:
            cancel.set()
            async with asyncio.timeout(LIMIT):
                await asyncio.Event().wait()
            return "unreachable"
        finally:
            finished.append(city)

    path = tmp_path / "s.jsonl"
    async with asyncio.timeout(LIMIT), make_client(emu, "clean-tool") as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, registry, "Weather?", cancel=cancel)
        await asyncio.sleep(0)  # let the abandoned tool task see its cancellation

    assert events[-1].data["kind"] == "aborted"
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end"]
    block = of_type(loaded, "tool/result")[0]["message"]["content"][0]
    assert block["is_error"] is True
    assert block["content"][0]["text"].startswith("cancelled")
    assert finished == ["Paris"]
