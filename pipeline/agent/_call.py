"""The two edges of one tool call: the model's arguments in (parsed, validated, converted to the annotated types),
and the tool's return value out (a ``ToolResult``). Every way the model gets the arguments wrong is a
``ToolResult(is_error=True)`` that says what was expected; the registry's module docstring lists the messages."""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from typing import Any

import attrs

from .._json import loads
from ._convert import Binder, ConversionError
from ._quote import describe, excerpt, safe_repr, show
from ._tool import Tool, ToolResult
from ._validate import json_type, validate

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "MAX_PROBLEMS", "Call", "bounded_result", "prepare", "result_from_value"]

MAX_PROBLEMS = 20
"""Schema problems listed in one ``ToolResult``; the rest are counted."""

Call: typing.TypeAlias = tuple[list[Any], dict[str, Any]]
"""The positional and keyword arguments of a call."""


def prepare(tool: Tool, binder: Binder | None, arguments: object) -> ToolResult | Call:
    """The call's arguments, or the error result to send back instead of calling.

    Without a binder (the tool's schema is not the one its hints give) the JSON values are the keyword arguments.
    """
    parsed = _parse_arguments(tool.name, arguments)
    if isinstance(parsed, ToolResult):
        return parsed
    problems = validate(parsed, tool.parameters)
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more")
        listing = "\n".join(f"- {problem}" for problem in shown)
        return ToolResult(f'invalid arguments for tool "{tool.name}":\n{listing}', is_error=True)
    if binder is None:
        return [], parsed
    try:
        return binder.bind(parsed)
    except ConversionError as exc:
        return ToolResult(f'invalid arguments for tool "{tool.name}":\n- {exc}', is_error=True)


def _parse_arguments(tool: str, arguments: object) -> dict[str, Any] | ToolResult:
    if not isinstance(arguments, str):
        return ToolResult(
            f'arguments for tool "{tool}" must be a string of JSON, got {type(arguments).__name__}: '
            f"{excerpt(safe_repr(arguments))}",
            is_error=True,
        )
    if not arguments.strip():
        return {}
    try:
        value = loads(arguments)
    except (ValueError, RecursionError) as exc:
        return ToolResult(
            f'arguments for tool "{tool}" are not valid JSON ({describe(exc)}): {show(arguments)}', is_error=True
        )
    if not isinstance(value, dict):
        return ToolResult(
            f'arguments for tool "{tool}" must be a JSON object, got {json_type(value)}: {show(arguments)}',
            is_error=True,
        )
    return value


DEFAULT_MAX_RESULT_CHARS = 100_000
"""The most characters of a tool result sent on (``ToolRegistry(max_result_chars=)``): about 25,000 tokens."""


def bounded_result(result: ToolResult, limit: int | None) -> ToolResult:
    """``result`` cut to ``limit`` characters, the cut said in a marker the model reads (``None``: no limit)."""
    size = len(result.text)
    if limit is None or size <= limit:
        return result
    marker = f"\n[truncated: the tool returned {size:,} characters; only the first {limit:,} are shown]"
    return attrs.evolve(result, text=result.text[:limit] + marker)


def result_from_value(value: object) -> ToolResult:
    """A tool's return value as the text the model reads: a string as it is, anything else as JSON (leniently)."""
    if isinstance(value, str):
        return ToolResult(value)
    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, default=_lenient_json_default))
    except Exception:  # a value json cannot encode (non-string keys of odd types, cycles): its text still helps
        return ToolResult(safe_repr(value))


def _lenient_json_default(value: object) -> object:
    """A tool's return value as JSON, leniently: enums by value, attrs and dataclass instances as objects, sets as
    lists, anything else as its text (a tool result is read by a model, not parsed back). The strict
    ``pipeline._json.json_default`` is for what the library writes and reads back."""
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        return attrs.asdict(typing.cast(attrs.AttrsInstance, value), recurse=False)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return list(value)
    return str(value)
