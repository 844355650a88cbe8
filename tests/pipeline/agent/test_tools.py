"""The tool registry: schemas from type hints, validation, and a ``call`` that never raises."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.agent import Tool, ToolRegistry, ToolResult, schema_from_signature, validate

# ---------------------------------------------------------------------------------------------------------------------
# Types the tools below are annotated with (module level: the string annotations resolve against these globals)


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@attrs.define
class Window:
    start: int
    _end: int = 10  # attrs strips the underscore: the argument (and property) is "end"


@dataclasses.dataclass
class Span:
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError("end precedes start")


@dataclasses.dataclass
class Node:
    child: Node | None = None


# ---------------------------------------------------------------------------------------------------------------------
# Helpers


def params(func: Callable[..., Any]) -> dict[str, Any]:
    """The derived schema of ``func``."""
    return schema_from_signature(func)


def prop(func: Callable[..., Any], name: str) -> Any:
    """The derived schema of one parameter of ``func``."""
    return schema_from_signature(func)["properties"][name]


def args(**values: Any) -> str:
    """Tool arguments as the model writes them: a JSON string."""
    return json.dumps(values)


def error(text: str) -> ToolResult:
    return ToolResult(text, is_error=True)


def weather_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str, unit: Unit = Unit.CELSIUS) -> str:
        """Current weather for a city."""
        return f"{city}: 21 degrees {unit.value}"

    @registry.register
    async def get_time(zone: str) -> str:
        """Current time in a zone."""
        return f"12:00 in {zone}"

    return registry


# ---------------------------------------------------------------------------------------------------------------------
# Schema derivation


def test_primitive_hints_map_to_json_types() -> None:
    def tool(s: str, i: int, f: float, b: bool, n: None) -> None: ...

    assert params(tool)["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "null"},
    }


def test_schema_is_an_object_that_forbids_unknown_properties() -> None:
    def tool(city: str) -> None: ...

    assert params(tool) == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_parameterless_function_has_no_required_list() -> None:
    def tool() -> None: ...

    assert params(tool) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_list_of_x_is_an_array_of_x() -> None:
    def tool(tags: list[str], anything: list) -> None: ...  # type: ignore[type-arg]

    assert prop(tool, "tags") == {"type": "array", "items": {"type": "string"}}
    assert prop(tool, "anything") == {"type": "array"}


def test_dict_of_str_to_x_is_an_object_whose_values_are_x() -> None:
    def tool(scores: dict[str, int]) -> None: ...

    assert prop(tool, "scores") == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_dict_with_non_string_keys_is_rejected() -> None:
    def tool(scores: dict[int, int]) -> None: ...

    with pytest.raises(TypeError, match="non-string keys"):
        params(tool)


def test_optional_parameter_accepts_null_and_is_not_required() -> None:
    def tool(city: str, country: str | None) -> None: ...

    assert prop(tool, "country") == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert params(tool)["required"] == ["city"]


def test_parameter_with_a_default_is_not_required() -> None:
    def tool(city: str, days: int = 1) -> None: ...

    assert params(tool)["required"] == ["city"]
    assert prop(tool, "days") == {"type": "integer"}


def test_literal_becomes_an_enum_of_its_values() -> None:
    def tool(unit: Literal["c", "f"], level: Literal[1, 2, 3]) -> None: ...

    assert prop(tool, "unit") == {"type": "string", "enum": ["c", "f"]}
    assert prop(tool, "level") == {"type": "integer", "enum": [1, 2, 3]}


def test_enum_subclass_becomes_an_enum_of_its_values() -> None:
    def tool(unit: Unit) -> None: ...

    assert prop(tool, "unit") == {"type": "string", "enum": ["celsius", "fahrenheit"]}


def test_typeddict_becomes_a_nested_object_with_its_required_keys() -> None:
    def tool(address: Address) -> None: ...

    assert prop(tool, "address") == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_dataclass_becomes_a_nested_object_whose_defaulted_fields_are_optional() -> None:
    def tool(at: Point) -> None: ...

    assert prop(tool, "at") == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_attrs_class_becomes_a_nested_object_keyed_by_init_argument() -> None:
    def tool(window: Window) -> None: ...

    assert prop(tool, "window") == {
        "type": "object",
        "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
        "required": ["start"],
        "additionalProperties": False,
    }


def test_annotated_text_becomes_the_description() -> None:
    def tool(city: Annotated[str, "City name, e.g. Paris"]) -> None: ...

    assert prop(tool, "city") == {"type": "string", "description": "City name, e.g. Paris"}


def test_annotated_mapping_is_merged_into_the_schema() -> None:
    def tool(days: Annotated[int, "Forecast length", {"minimum": 1, "maximum": 14}]) -> None: ...

    assert prop(tool, "days") == {"type": "integer", "description": "Forecast length", "minimum": 1, "maximum": 14}


def test_unannotated_parameter_accepts_anything() -> None:
    def tool(value, other: Any) -> None:  # type: ignore[no-untyped-def]
        ...

    assert prop(tool, "value") == {}
    assert prop(tool, "other") == {}
    assert params(tool)["required"] == ["value", "other"]


@pytest.mark.parametrize("star", ["*args", "**kwargs"])
def test_star_args_and_star_star_kwargs_are_rejected(star: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def tool(city, {star}): pass", namespace)

    with pytest.raises(TypeError, match=r"takes \*{1,2}(args|kwargs).*parameters= explicitly"):
        schema_from_signature(namespace["tool"])


def test_unsupported_hint_names_the_parameter() -> None:
    def tool(when: datetime.datetime) -> None: ...

    with pytest.raises(TypeError, match=r"parameter 'when' of .*tool: unsupported type hint"):
        params(tool)


def test_recursive_type_is_rejected() -> None:
    def tool(tree: Node) -> None: ...

    with pytest.raises(TypeError, match="recursive types are not supported"):
        params(tool)


# ---------------------------------------------------------------------------------------------------------------------
# Registration


def test_register_as_a_bare_decorator_returns_the_function_unchanged() -> None:
    registry = ToolRegistry()

    async def get_weather(city: str) -> str:
        return city

    assert registry.register(get_weather) is get_weather
    assert "get_weather" in registry


def test_register_with_options_names_and_describes_the_tool() -> None:
    registry = ToolRegistry()

    @registry.register(name="weather", description="The weather.")
    def get_weather(city: str) -> str:
        return city

    tool = registry.get("weather")
    assert tool is not None
    assert (tool.name, tool.description, tool.func) == ("weather", "The weather.", get_weather)


def test_name_defaults_to_the_function_name_and_description_to_the_first_docstring_paragraph() -> None:
    registry = ToolRegistry()

    @registry.register
    def get_weather(city: str) -> str:
        """Current weather
        for a city.

        Details the model does not need.
        """
        return city

    tool = registry.get("get_weather")
    assert tool is not None
    assert tool.description == "Current weather for a city."


def test_explicit_schema_wins_over_type_hints() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    registry = ToolRegistry()

    @registry.register(parameters=schema)
    def search(**arguments: Any) -> str:
        return json.dumps(arguments)

    tool = registry.get("search")
    assert tool is not None
    assert tool.parameters == schema


async def test_tool_with_explicit_schema_receives_the_json_values_as_keywords() -> None:
    registry = ToolRegistry()

    @registry.register(parameters={"type": "object", "properties": {"unit": {"type": "string"}}})
    async def convert(unit: Unit) -> str:
        return repr(unit)

    assert await registry.call("convert", args(unit="celsius")) == ToolResult("'celsius'")


def test_a_second_tool_with_the_same_name_is_rejected() -> None:
    registry = weather_registry()

    with pytest.raises(ValueError, match='"get_time" is already registered'):
        registry.register(name="get_time")(lambda: None)


@pytest.mark.parametrize("name", ["", "has space", "dotted.name", "x" * 65])
def test_a_name_the_api_would_refuse_is_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="is not valid"):
        Tool(name=name, description="", parameters={"type": "object"}, func=lambda: None)


def test_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValueError, match="of type 'object'"):
        Tool(name="t", description="", parameters={"type": "string"}, func=lambda: None)


def test_registry_is_a_collection_of_tools_in_registration_order() -> None:
    registry = weather_registry()

    assert len(registry) == 2
    assert [tool.name for tool in registry] == ["get_weather", "get_time"]
    assert "get_time" in registry
    assert "nope" not in registry
    assert 3 not in registry
    assert registry.get("nope") is None


def test_registry_accepts_tools_at_construction() -> None:
    tool = Tool.from_function(lambda: "pong", name="ping")

    assert list(ToolRegistry([tool])) == [tool]


def test_schemas_are_openai_function_entries() -> None:
    registry = ToolRegistry()

    @registry.register
    def get_time(zone: str) -> str:
        """Current time in a zone."""
        return zone

    assert registry.schemas() == [
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "description": "Current time in a zone.",
                "parameters": {
                    "type": "object",
                    "properties": {"zone": {"type": "string"}},
                    "required": ["zone"],
                    "additionalProperties": False,
                },
            },
        }
    ]


async def test_mutating_a_returned_schema_does_not_change_the_tool() -> None:
    registry = weather_registry()

    registry.schemas()[1]["function"]["parameters"]["properties"]["zone"]["type"] = "integer"

    assert await registry.call("get_time", args(zone="UTC")) == ToolResult("12:00 in UTC")


# ---------------------------------------------------------------------------------------------------------------------
# call(): every way the model can get it wrong is a ToolResult, never an exception


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


# ---------------------------------------------------------------------------------------------------------------------
# call(): success


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


# ---------------------------------------------------------------------------------------------------------------------
# call_many()


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


# ---------------------------------------------------------------------------------------------------------------------
# from_module()


def write_module(tmp_path: Path, source: str, name: str = "my_tools.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


TOOLS_MODULE = """
    from __future__ import annotations

    import dataclasses

    from pipeline.agent import Tool


    @dataclasses.dataclass
    class Box:
        size: int


    async def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return f"sunny in {city}"


    def measure(box: Box) -> int:
        return box.size * 2


    TOOLS = [get_weather, measure, Tool.from_function(lambda: "pong", name="ping")]
"""


async def test_from_module_loads_tools_from_a_python_file(tmp_path: Path) -> None:
    registry = ToolRegistry.from_module(str(write_module(tmp_path, TOOLS_MODULE)))

    assert [tool.name for tool in registry] == ["get_weather", "measure", "ping"]
    assert await registry.call_many([("get_weather", args(city="Oslo")), ("measure", args(box={"size": 4}))]) == [
        ToolResult("sunny in Oslo"),
        ToolResult("8"),
    ]


def test_from_module_imports_a_dotted_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, TOOLS_MODULE, name="dotted_tools_for_test.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        registry = ToolRegistry.from_module("dotted_tools_for_test")
    finally:
        sys.modules.pop("dotted_tools_for_test", None)

    assert "get_weather" in registry


def test_from_module_returns_the_registry_a_module_exposes(tmp_path: Path) -> None:
    source = """
        from pipeline.agent import ToolRegistry

        registry = ToolRegistry()

        @registry.register
        def ping() -> str:
            return "pong"
    """
    registry = ToolRegistry.from_module(str(write_module(tmp_path, source)))

    assert [tool.name for tool in registry] == ["ping"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("X = 1\n", "exposes no tools: define TOOLS"),
        ("TOOLS = 'get_weather'\n", "TOOLS is a str, expected a list"),
        ("TOOLS = [42]\n", r"TOOLS\[0\]: 42 is a int, expected a function or a Tool"),
        ("def f(*args): pass\nTOOLS = [f]\n", r"TOOLS\[0\]: f takes \*args"),
        ("registry = {}\n", "registry is a dict, expected a ToolRegistry"),
        (
            "from pipeline.agent import ToolRegistry\nregistry = ToolRegistry()\nTOOLS = []\n",
            "both TOOLS and registry",
        ),
    ],
)
def test_from_module_without_usable_tools_is_a_clear_value_error(tmp_path: Path, source: str, message: str) -> None:
    path = write_module(tmp_path, source)

    with pytest.raises(ValueError, match=message):
        ToolRegistry.from_module(str(path))


def test_from_module_with_a_missing_file_or_module_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        ToolRegistry.from_module(str(tmp_path / "absent.py"))
    with pytest.raises(ValueError, match="cannot be imported"):
        ToolRegistry.from_module("no_such_package_for_tools.tools")


# ---------------------------------------------------------------------------------------------------------------------
# validate()


@pytest.mark.parametrize(("value", "valid"), [(3, True), (3.0, True), (1.5, False), (True, False), ("3", False)])
def test_integer_accepts_whole_numbers_only(value: object, valid: bool) -> None:
    assert (validate(value, {"type": "integer"}) == []) is valid


@pytest.mark.parametrize(("value", "valid"), [(3, True), (1.5, True), (False, False), (None, False)])
def test_number_accepts_ints_and_floats_but_not_booleans(value: object, valid: bool) -> None:
    assert (validate(value, {"type": "number"}) == []) is valid


def test_enum_does_not_confuse_booleans_with_numbers() -> None:
    assert validate(True, {"enum": [1, 2]}) == ["$: expected one of 1, 2, got true"]
    assert validate(1, {"enum": [True]}) == ["$: expected one of true, got 1"]


def test_bounds_on_numbers_strings_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "s": {"type": "string", "minLength": 2, "maxLength": 3},
            "a": {"type": "array", "minItems": 1},
        },
    }

    assert validate({"n": 0, "s": "abcd", "a": []}, schema) == [
        "$.n: expected a number >= 1, got 0",
        "$.s: expected at most 3 characters, got 4",
        "$.a: expected at least 1 item, got 0",
    ]
    assert validate({"n": 5, "s": "ab", "a": [1]}, schema) == []


def test_optional_value_of_the_wrong_type_names_both_alternatives() -> None:
    assert validate(3, {"anyOf": [{"type": "string"}, {"type": "null"}]}) == ["$: expected string or null, got integer"]


def test_optional_object_reports_the_problems_inside_it() -> None:
    schema = {"anyOf": [{"type": "object", "required": ["x"]}, {"type": "null"}]}

    assert validate({}, schema) == ['$: missing required property "x"']


def test_one_of_rejects_a_value_matching_several_alternatives() -> None:
    assert validate(1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}) == [
        "$: matches 2 of the oneOf alternatives, expected exactly one"
    ]


def test_property_names_that_are_not_identifiers_are_bracketed() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}

    assert validate({"a b": 1}, schema) == ['$["a b"]: expected string, got integer']


def test_unknown_keywords_are_ignored() -> None:
    assert validate("x", {"type": "string", "format": "email", "pattern": "^y$", "x-custom": 1}) == []


# ---------------------------------------------------------------------------------------------------------------------
# The invariant: call() never raises


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
