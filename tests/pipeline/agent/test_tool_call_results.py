"""ToolRegistry.call and call_many when the call is right: the result text, argument conversion, where a tool
runs, concurrency and order."""

from __future__ import annotations

import asyncio
import datetime
import threading
from typing import Any

from tool_builders import Point, Span, Unit, Window, args, error, weather_registry

from pipeline.agent import ToolRegistry, ToolResult


async def test_string_result_is_the_text_as_it_is() -> None:
    assert await weather_registry().call("get_weather", args(city="Paris")) == ToolResult("Paris: 21 degrees celsius")


async def test_other_results_are_json_keeping_non_ascii_text() -> None:
    registry = ToolRegistry()

    @registry.register
    async def lookup(city: str) -> dict[str, Any]:
        return {"city": city, "temperature": 21.5, "rain": None}

    assert await registry.call("lookup", args(city="Zürich")) == ToolResult(
        '{"city": "Zürich", "temperature": 21.5, "rain": null}'
    )


async def test_results_json_cannot_encode_become_text() -> None:
    registry = ToolRegistry()

    @registry.register
    def today() -> dict[str, Any]:
        return {"date": datetime.date(2024, 5, 1), "at": Point(1.0, 2.0), "unit": Unit.CELSIUS}

    assert await registry.call("today", "{}") == ToolResult(
        '{"date": "2024-05-01", "at": {"x": 1.0, "y": 2.0}, "unit": "celsius"}'
    )


async def test_arguments_are_converted_to_the_annotated_types() -> None:
    registry = ToolRegistry()
    received: dict[str, Any] = {}

    @registry.register
    async def record(unit: Unit, at: Point, window: Window, scale: float, note: str | None) -> str:
        received.update(unit=unit, at=at, window=window, scale=scale, note=note)
        return "ok"

    result = await registry.call("record", args(unit="fahrenheit", at={"x": 1}, window={"start": 2, "end": 5}, scale=3))

    assert result == ToolResult("ok")
    assert received == {
        "unit": Unit.FAHRENHEIT,
        "at": Point(1.0, 0.0),
        "window": Window(2, 5),
        "scale": 3.0,
        "note": None,
    }
    assert isinstance(received["scale"], float)


async def test_a_constructor_refusing_an_argument_is_an_invalid_argument() -> None:
    registry = ToolRegistry()

    @registry.register
    def schedule(span: Span) -> str:
        return "ok"

    result = await registry.call("schedule", args(span={"start": 5, "end": 1}))

    assert result == error(
        'invalid arguments for tool "schedule":\n- $.span: Span rejected the value: ValueError: end precedes start'
    )


async def test_sync_tool_runs_in_a_worker_thread() -> None:
    registry = ToolRegistry()

    @registry.register
    def where() -> str:
        return threading.current_thread().name

    result = await registry.call("where", "{}")

    assert not result.is_error
    assert result.text != threading.current_thread().name


async def test_async_tool_runs_on_the_event_loop() -> None:
    registry = ToolRegistry()

    @registry.register
    async def where() -> str:
        return threading.current_thread().name

    assert await registry.call("where", "{}") == ToolResult(threading.current_thread().name)


# -- call_many() ----------------------------------------------------------------------------------------------------


async def test_call_many_runs_the_calls_concurrently() -> None:
    registry = ToolRegistry()
    ping_ready, pong_ready = asyncio.Event(), asyncio.Event()

    @registry.register
    async def ping() -> str:
        ping_ready.set()
        await pong_ready.wait()
        return "ping"

    @registry.register
    async def pong() -> str:
        pong_ready.set()
        await ping_ready.wait()
        return "pong"

    # Run one after the other, each would wait forever for the other.
    results = await asyncio.wait_for(registry.call_many([("ping", "{}"), ("pong", "{}")]), timeout=5)

    assert results == [ToolResult("ping"), ToolResult("pong")]


async def test_call_many_returns_results_in_the_order_of_the_calls() -> None:
    registry = ToolRegistry()

    @registry.register
    async def sleep_then_echo(delay: float, text: str) -> str:
        await asyncio.sleep(delay)
        return text

    results = await registry.call_many(
        [
            ("sleep_then_echo", args(delay=0.03, text="first")),
            ("nope", "{}"),
            ("sleep_then_echo", args(delay=0.0, text="third")),
        ]
    )

    assert results == [
        ToolResult("first"),
        error('unknown tool "nope"; available tools: sleep_then_echo'),
        ToolResult("third"),
    ]
