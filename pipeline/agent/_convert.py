"""Validated JSON arguments converted to the annotated Python types before a call (Enum members, dataclass and
attrs instances, floats), and the binder that does it per tool."""

from __future__ import annotations

import collections.abc
import enum
import inspect
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs

from operators import LlmStreamError

from ._quote import describe, show
from ._schema import (
    EMPTY,
    NONE_TYPE,
    PRIMITIVES,
    class_fields,
    is_object_class,
    is_union,
    qualified_name,
    schema_from_signature,
)
from ._tool import Tool
from ._validate import child_path, is_type, json_equal

__all__ = ["Binder", "ConversionError", "binder_for"]


class ConversionError(LlmStreamError):
    """A validated argument that still cannot become its annotated type (a constructor refused it, say); the call
    answers it as an invalid argument, it never reaches the caller."""


def _convert(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated or origin is typing.Required or origin is typing.NotRequired:
        return _convert(args[0], value, path)
    if isinstance(hint, typing.NewType):
        return _convert(hint.__supertype__, value, path)
    if hint is EMPTY or hint is Any or hint is object:
        return value
    if hint is None or hint is NONE_TYPE:
        if value is None:
            return None
    elif hint in PRIMITIVES:
        if is_type(value, PRIMITIVES[hint]):
            return float(value) if hint is float else int(value) if hint is int else value
    elif is_union(hint):
        first: ConversionError | None = None
        for arg in args:
            try:
                return _convert(arg, value, path)
            except ConversionError as exc:
                first = first or exc
        raise first or ConversionError(f"{path}: no alternative of {hint!r} accepts {show(value)}")
    elif origin is Literal:
        for literal in args:
            if json_equal(value, literal.value if isinstance(literal, enum.Enum) else literal):
                return literal
    elif hint is list or hint is collections.abc.Sequence or origin is list or origin is collections.abc.Sequence:
        if isinstance(value, list | tuple):
            item = args[0] if args else Any
            return [_convert(item, element, f"{path}[{index}]") for index, element in enumerate(value)]
    elif hint is tuple or origin is tuple:
        if isinstance(value, list | tuple):
            return _convert_tuple(args, value, path)
    elif hint in _SETS or origin in _SETS:
        if isinstance(value, list | tuple):
            return _convert_set(origin or hint, args[0] if args else Any, value, path)
    elif hint is dict or hint is collections.abc.Mapping or origin is dict or origin is collections.abc.Mapping:
        if isinstance(value, Mapping):
            item = args[1] if len(args) == 2 else Any
            return {key: _convert(item, element, child_path(path, key)) for key, element in value.items()}
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        for member in hint:
            if json_equal(value, member.value):
                return member
    elif isinstance(hint, type) and is_object_class(hint):
        if isinstance(value, Mapping):
            return _convert_object(hint, value, path)
    else:
        return value  # a hint this module does not know: the value passes unchanged
    raise ConversionError(f"{path}: cannot convert {show(value)} to {qualified_name(hint)}")


_SETS = (set, frozenset, collections.abc.Set)


def _convert_tuple(args: tuple[Any, ...], value: list[Any] | tuple[Any, ...], path: str) -> tuple[Any, ...]:
    """``tuple[X, ...]`` item by item with ``X``; ``tuple[X, Y]`` by position (the schema fixed the length)."""
    if len(args) == 2 and args[1] is Ellipsis:
        hints: tuple[Any, ...] = (args[0],) * len(value)
    elif not args or args == ((),):
        hints = (Any,) * len(value) if not args else ()
    else:
        hints = args
    if len(hints) != len(value):
        raise ConversionError(f"{path}: expected {len(hints)} items, got {show(value)}")
    pairs = enumerate(zip(hints, value, strict=True))
    return tuple(_convert(hint, element, f"{path}[{index}]") for index, (hint, element) in pairs)


def _convert_set(kind: Any, item: Any, value: list[Any] | tuple[Any, ...], path: str) -> set[Any] | frozenset[Any]:
    items = [_convert(item, element, f"{path}[{index}]") for index, element in enumerate(value)]
    try:
        return frozenset(items) if kind is frozenset else set(items)
    except TypeError as exc:
        raise ConversionError(f"{path}: cannot make a set of {show(value)}: {describe(exc)}") from exc


def _convert_object(cls: type, value: Mapping[str, Any], path: str) -> Any:
    hints = {f.name: f.hint for f in class_fields(cls)}
    fields = {
        key: _convert(hints[key], element, child_path(path, key)) if key in hints else element
        for key, element in value.items()
    }
    if typing.is_typeddict(cls):
        return fields
    try:
        return cls(**fields)
    except Exception as exc:
        raise ConversionError(f"{path}: {cls.__qualname__} rejected the value: {describe(exc)}") from exc


@attrs.frozen
class _Parameter:
    name: str
    hint: Any
    default: Any
    positional_only: bool


@attrs.frozen
class Binder:
    """Turns validated JSON arguments into the call's positional and keyword arguments: each value converted to its
    parameter's hint, an omitted ``X | None`` parameter without a default given ``None``."""

    parameters: tuple[_Parameter, ...]

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param in self.parameters:
            if param.name in arguments:
                value = _convert(param.hint, arguments[param.name], child_path("$", param.name))
            elif param.default is not EMPTY:
                if not param.positional_only:
                    continue
                value = param.default
            else:
                value = None  # an optional parameter (X | None) without a default
            if param.positional_only:
                positional.append(value)
            else:
                keywords[param.name] = value
        return positional, keywords


def binder_for(tool: Tool) -> Binder | None:
    """A binder when the tool's schema is the one its hints give; None (pass JSON as keywords) otherwise."""
    try:
        if schema_from_signature(tool.func) != tool.parameters:
            return None
        signature = inspect.signature(tool.func, eval_str=True)
    except (TypeError, ValueError, NameError):
        return None
    return Binder(
        tuple(
            _Parameter(p.name, p.annotation, p.default, p.kind is p.POSITIONAL_ONLY)
            for p in signature.parameters.values()
        )
    )
