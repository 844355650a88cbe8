"""ToolRegistry: registering tools (decorator, options, explicit schemas), its collection behaviour, the
schemas it sends, and loading the tools of a module."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tool_builders import Unit, args, weather_registry

from operators import LlmStreamError
from pipeline.agent import Tool, ToolDefinitionError, ToolRegistry, ToolResult, schema_from_signature


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


def test_a_description_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="a tool's description must be a string, got int: 3"):
        Tool(name="t", description=3, parameters={"type": "object"}, func=lambda: None)  # type: ignore[arg-type]


def _star_args(*values: int) -> None: ...


def _duplicate() -> None:
    registry = weather_registry()
    registry.register(lambda: None, name="get_time")


@pytest.mark.parametrize(
    ("define", "builtin"),
    [
        pytest.param(lambda: Tool.from_function(lambda: None, name="a b"), ValueError, id="a name the API refuses"),
        pytest.param(
            lambda: Tool(name="t", description="", parameters={"type": "array"}, func=len), ValueError, id="parameters"
        ),
        pytest.param(lambda: Tool.from_function(3), TypeError, id="not callable"),  # type: ignore[arg-type]
        pytest.param(lambda: ToolRegistry().add(len), TypeError, id="a function given to add"),  # type: ignore[arg-type]
        pytest.param(_duplicate, ValueError, id="a second tool of the same name"),
        pytest.param(lambda: schema_from_signature(_star_args), TypeError, id="*args"),
        pytest.param(lambda: ToolRegistry.from_module("absent_tools.py"), ValueError, id="a missing tools module"),
    ],
)
def test_a_bad_tool_definition_is_a_tool_definition_error_and_still_the_builtin_it_was(
    define: Callable[[], object], builtin: type[Exception]
) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        define()

    assert isinstance(raised.value, LlmStreamError)
    assert isinstance(raised.value, builtin)


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


# -- from_module() ----------------------------------------------------------------------------------------------------


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
        ("TOOLS = [42]\n", r"TOOLS\[0\]: 42 is a int, expected a function, a Tool or a CustomTool"),
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


def test_a_module_whose_own_registration_fails_is_a_tool_definition_error(tmp_path: Path) -> None:
    source = """
        from pipeline.agent import ToolRegistry

        registry = ToolRegistry()

        @registry.register
        def spread(*values: int) -> int:
            return sum(values)
    """

    with pytest.raises(ToolDefinitionError, match=r"spread takes \*values"):
        ToolRegistry.from_module(str(write_module(tmp_path, source)))


def test_from_module_with_a_missing_file_or_module_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        ToolRegistry.from_module(str(tmp_path / "absent.py"))
    with pytest.raises(ValueError, match="cannot be imported"):
        ToolRegistry.from_module("no_such_package_for_tools.tools")
