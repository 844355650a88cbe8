"""Shared pieces of the tool tests: the types tools are annotated with, and small builders.

A tool defined in a test module resolves its string annotations against that module's globals: import the types
used there from here."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import attrs

from pipeline.agent import ToolRegistry, ToolResult, schema_from_signature

__all__ = ["Address", "Node", "Point", "Span", "Unit", "Window", "args", "error", "params", "prop", "weather_registry"]


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
