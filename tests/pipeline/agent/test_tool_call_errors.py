"""ToolRegistry.call: every way the model can get a call wrong is a ToolResult, never an exception."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tool_builders import Address, Point, Unit, Window, args, error, weather_registry

from pipeline.agent import ToolRegistry, ToolResult


async def test_unknown_tool_lists_the_available_tools() -> None:
    result = await weather_registry().call("get_news", "{}")

    assert result == error('unknown tool "get_news"; available tools: get_weather, get_time')


async def test_unknown_tool_close_to_a_known_one_suggests_it() -> None:
    result = await weather_registry().call("get_wether", "{}")

    assert result.is_error
    assert result.text.endswith('(did you mean "get_weather"?)')


async def test_empty_tool_name_is_unknown() -> None:
    result = await weather_registry().call("", "{}")

    assert result == error('unknown tool ""; available tools: get_weather, get_time')


@pytest.mark.parametrize("name", [None, 7, ["get_time"], {"name": "get_time"}])
async def test_non_string_tool_name_is_unknown(name: object) -> None:
    result = await weather_registry().call(name, "{}")

    assert result.is_error
    assert result.text.startswith("unknown tool ")
    assert "a tool name is a string" in result.text
    assert result.text.endswith("available tools: get_weather, get_time")


async def test_unknown_tool_in_an_empty_registry_says_there_are_none() -> None:
    assert await ToolRegistry().call("x", "{}") == error('unknown tool "x"; available tools: (none)')


@pytest.mark.parametrize("arguments", [{"zone": "UTC"}, None, b'{"zone": "UTC"}'])
async def test_arguments_that_are_not_a_string_are_an_error(arguments: object) -> None:
    result = await weather_registry().call("get_time", arguments)

    assert result.is_error
    assert result.text.startswith('arguments for tool "get_time" must be a string of JSON, got ')


async def test_arguments_that_are_not_json_are_quoted_back() -> None:
    result = await weather_registry().call("get_time", "{zone: UTC}")

    assert result.is_error
    assert result.text.startswith('arguments for tool "get_time" are not valid JSON (')
    assert result.text.endswith(': "{zone: UTC}"')


async def test_long_bad_arguments_are_quoted_to_the_first_200_characters() -> None:
    result = await weather_registry().call("get_time", "x" * 1000)

    assert result.is_error
    assert "x" * 200 in result.text
    assert "x" * 201 not in result.text
    assert "(1000 characters)" in result.text


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_non_standard_json_constants_are_not_json(constant: str) -> None:
    result = await weather_registry().call("get_time", f'{{"zone": {constant}}}')

    assert result.is_error
    assert f"{constant} is not valid JSON" in result.text


@pytest.mark.parametrize(("arguments", "kind"), [("[1, 2]", "array"), ('"UTC"', "string"), ("null", "null")])
async def test_arguments_that_are_not_an_object_are_an_error(arguments: str, kind: str) -> None:
    result = await weather_registry().call("get_time", arguments)

    assert result == error(f'arguments for tool "get_time" must be a JSON object, got {kind}: {json.dumps(arguments)}')


async def test_empty_arguments_mean_no_arguments() -> None:
    registry = ToolRegistry()

    @registry.register
    def ping() -> str:
        return "pong"

    assert await registry.call("ping", "") == ToolResult("pong")
    assert await registry.call("ping", "  ") == ToolResult("pong")


async def test_argument_of_the_wrong_type_names_its_path() -> None:
    result = await weather_registry().call("get_time", args(zone=3))

    assert result == error('invalid arguments for tool "get_time":\n- $.zone: expected string, got integer')


async def test_missing_required_argument_is_named() -> None:
    result = await weather_registry().call("get_time", "{}")

    assert result == error('invalid arguments for tool "get_time":\n- $: missing required property "zone"')


async def test_unexpected_argument_is_named_with_the_allowed_ones() -> None:
    result = await weather_registry().call("get_time", args(zone="UTC", tz="UTC"))

    assert result == error('invalid arguments for tool "get_time":\n- $: unexpected property "tz" (allowed: zone)')


async def test_every_problem_is_listed_with_its_nested_path() -> None:
    registry = ToolRegistry()

    @registry.register
    def plot(points: list[Point], unit: Unit) -> str:
        return "ok"

    result = await registry.call("plot", args(points=[{"x": 1}, {"x": "2", "z": 0}], unit="kelvin"))

    assert result == error(
        'invalid arguments for tool "plot":\n'
        '- $.points[1].x: expected number, got string\n- $.points[1]: unexpected property "z" (allowed: x, y)\n'
        '- $.unit: expected one of "celsius", "fahrenheit", got "kelvin"'
    )


async def test_a_tool_that_raises_reports_the_exception() -> None:
    registry = ToolRegistry()

    @registry.register
    async def explode(city: str) -> str:
        raise LookupError(f"no weather station in {city}")

    result = await registry.call("explode", args(city="Atlantis"))

    assert result == error("tool explode failed: LookupError: no weather station in Atlantis")


async def test_a_sync_tool_that_raises_without_a_message_reports_the_exception_type() -> None:
    registry = ToolRegistry()

    @registry.register
    def explode() -> str:
        raise RuntimeError

    assert await registry.call("explode", "{}") == error("tool explode failed: RuntimeError")


async def test_cancelling_a_call_cancels_the_tool() -> None:
    registry = ToolRegistry()
    started = asyncio.Event()

    @registry.register
    async def wait_forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    task = asyncio.create_task(registry.call("wait_forever", "{}"))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task


# -- the invariant: call() never raises --------------------------------------------------------------------------------


def property_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register
    async def typed(
        city: Annotated[str, "City", {"minLength": 1}],
        unit: Unit = Unit.CELSIUS,
        at: Point | None = None,
        tags: list[str] | None = None,
        address: Address | None = None,
        window: Window | None = None,
        level: Literal[1, 2] = 1,
    ) -> dict[str, Any]:
        return {"city": city, "unit": unit, "at": at, "tags": tags, "address": address, "window": window}

    @registry.register
    def sync_echo(value: Any = None) -> Any:
        return value

    @registry.register
    async def explode(reason: str = "") -> str:
        raise RuntimeError(reason)

    @registry.register(parameters={"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}})
    async def loose(**arguments: Any) -> Any:
        return arguments

    return registry


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
tool_names = st.sampled_from(["typed", "sync_echo", "explode", "loose"]) | st.text() | st.none() | st.integers()
argument_objects = st.dictionaries(
    st.sampled_from(["city", "unit", "at", "tags", "address", "window", "level", "value", "reason", "n"]) | st.text(),
    json_values,
    max_size=5,
)
arguments = (
    argument_objects.map(json.dumps)
    | json_values.map(json.dumps)
    | st.text()
    | json_values
    | st.binary()
    | argument_objects
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=tool_names, arguments=arguments)
def test_call_never_raises_for_any_name_and_any_arguments(name: object, arguments: object) -> None:
    result = asyncio.run(property_registry().call(name, arguments))

    assert isinstance(result, ToolResult)
    assert isinstance(result.text, str)
    result.text.encode("utf-8")  # always sendable back to the model
    if not isinstance(name, str) or name not in {"typed", "sync_echo", "explode", "loose"}:
        assert result.is_error
        assert result.text.startswith("unknown tool ")
