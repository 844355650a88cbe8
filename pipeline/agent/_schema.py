"""``schema_from_signature``: a JSON Schema from a function's type hints (str, numbers, bool, None, Literal, Enum,
lists, dicts, unions, dataclasses, attrs classes, TypedDicts, Annotated descriptions)."""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, Union

import attrs

from operators import LlmStreamError

from ._errors import ToolDefinitionError

__all__ = [
    "EMPTY",
    "NONE_TYPE",
    "PRIMITIVES",
    "Field",
    "JsonSchema",
    "class_fields",
    "is_object_class",
    "is_union",
    "qualified_name",
    "schema_from_signature",
]

JsonSchema: TypeAlias = dict[str, Any]
NONE_TYPE = type(None)
EMPTY = inspect.Parameter.empty


class _UnsupportedHintError(LlmStreamError):
    """A type hint that has no JSON Schema here (``schema_from_signature`` names the parameter and raises a
    ``ToolDefinitionError``)."""


PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

_SUPPORTED = (
    "str, int, float, bool, None, Any, list[X], Sequence[X], dict[str, X], Mapping[str, X], X | Y, Literal[...], "
    "Enum subclasses, TypedDict, dataclasses, attrs classes, Annotated[X, 'description']"
)


def schema_from_signature(func: Callable[..., Any]) -> JsonSchema:
    """The JSON Schema (an object) of ``func``'s parameters, derived from its type hints.

        str -> string   int -> integer   float -> number   bool -> boolean   None -> null   no hint / Any -> {}
        list[X] -> array of X             dict[str, X] -> object whose values are X
        X | Y -> anyOf                    Literal["a", "b"] / Enum subclass -> enum of the values
        TypedDict, dataclass, attrs class -> nested object (additionalProperties false)
        Annotated[X, "text"] -> X with a description; Annotated[X, {"minimum": 0}] merges the mapping in

    A parameter with a default, or annotated ``X | None``, is not required. ``*args`` / ``**kwargs`` and unsupported
    hints raise ``ToolDefinitionError`` (a ``TypeError``): pass ``parameters=`` explicitly for those.
    """
    label = qualified_name(func)
    try:
        signature = inspect.signature(func, eval_str=True)
    except NameError as exc:
        raise ToolDefinitionError(
            f"cannot resolve the type hints of {label}: {exc}; define the types at module level"
        ) from exc
    except ValueError as exc:
        raise ToolDefinitionError(f"cannot read the signature of {label}: {exc}; pass parameters= explicitly") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature.parameters.values():
        if param.kind is param.VAR_POSITIONAL or param.kind is param.VAR_KEYWORD:
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ToolDefinitionError(
                f"{label} takes {star}{param.name}: a tool's arguments are a JSON object with named properties; "
                "declare each parameter, or pass parameters= explicitly"
            )
        if param.annotation is EMPTY:
            properties[param.name] = {}
        else:
            try:
                properties[param.name] = _schema_for(param.annotation, frozenset())
            except _UnsupportedHintError as exc:
                raise ToolDefinitionError(f"parameter {param.name!r} of {label}: {exc}") from None
        if param.default is EMPTY and not _is_optional(param.annotation):
            required.append(param.name)
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def qualified_name(func: object) -> str:
    """How an error names a function: its ``__qualname__``, its ``__name__`` or its repr."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if isinstance(name, str) else repr(func)


def _unwrap(hint: Any) -> Any:
    """Strip Annotated, Required, NotRequired and NewType."""
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated or origin is typing.Required or origin is typing.NotRequired:
            hint = typing.get_args(hint)[0]
        elif isinstance(hint, typing.NewType):
            hint = hint.__supertype__
        else:
            return hint


def is_union(hint: Any) -> bool:
    """``X | Y`` or ``Union[X, Y]``."""
    origin = typing.get_origin(hint)
    return origin is Union or origin is types.UnionType


def _is_optional(hint: Any) -> bool:
    hint = _unwrap(hint)
    return is_union(hint) and any(_unwrap(arg) in (None, NONE_TYPE) for arg in typing.get_args(hint))


def _json_literal(value: object) -> object:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, str | int | float):
        return value
    raise _UnsupportedHintError(f"{value!r} is not a JSON value (str, int, float, bool or None)")


def _enum_schema(values: list[object]) -> JsonSchema:
    schema: JsonSchema = {}
    if all(isinstance(v, bool) for v in values):
        schema["type"] = "boolean"
    elif all(isinstance(v, str) for v in values):
        schema["type"] = "string"
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        schema["type"] = "integer"
    elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        schema["type"] = "number"
    schema["enum"] = values
    return schema


def _schema_for(hint: Any, seen: frozenset[type]) -> JsonSchema:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated:
        schema = _schema_for(args[0], seen)
        for meta in hint.__metadata__:
            if isinstance(meta, str):
                schema["description"] = meta
            elif isinstance(meta, Mapping):
                schema.update(copy.deepcopy(dict(meta)))
        return schema
    if origin is typing.Required or origin is typing.NotRequired:
        return _schema_for(args[0], seen)
    if isinstance(hint, typing.NewType):
        return _schema_for(hint.__supertype__, seen)
    if hint is Any or hint is object:
        return {}
    if hint is None or hint is NONE_TYPE:
        return {"type": "null"}
    if hint in PRIMITIVES:
        return {"type": PRIMITIVES[hint]}
    if is_union(hint):
        return {"anyOf": [_schema_for(arg, seen) for arg in args]}
    if origin is Literal:
        return _enum_schema([_json_literal(arg) for arg in args])
    if hint is list or hint is collections.abc.Sequence:
        return {"type": "array"}
    if origin is list or origin is collections.abc.Sequence:
        return {"type": "array", "items": _schema_for(args[0], seen)} if args else {"type": "array"}
    if hint is dict or hint is collections.abc.Mapping:
        return {"type": "object"}
    if origin is dict or origin is collections.abc.Mapping:
        if not args:
            return {"type": "object"}
        if _unwrap(args[0]) not in (str, Any):
            raise _UnsupportedHintError(f"{hint!r} has non-string keys; JSON object keys are strings")
        values = _schema_for(args[1], seen)
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum_schema([_json_literal(member.value) for member in hint])
        if is_object_class(hint):
            return _object_schema(hint, seen)
    raise _UnsupportedHintError(f"unsupported type hint {hint!r}; supported: {_SUPPORTED}")


def is_object_class(cls: type) -> bool:
    """A class whose JSON form is an object of its fields: a TypedDict, a dataclass or an attrs class."""
    return typing.is_typeddict(cls) or dataclasses.is_dataclass(cls) or attrs.has(cls)


@attrs.frozen
class Field:
    """A field of a TypedDict, dataclass or attrs class, as its JSON object has it."""

    name: str  # the JSON property and the keyword argument of the constructor
    hint: Any
    required: bool


@functools.cache
def class_fields(cls: type) -> tuple[Field, ...]:
    """The fields of an object class (``is_object_class``) that its constructor takes."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise _UnsupportedHintError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from None
    if typing.is_typeddict(cls):
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        return tuple(Field(key, hint, _typeddict_required(hint, key in required_keys)) for key, hint in hints.items())
    if dataclasses.is_dataclass(cls):
        return tuple(
            Field(
                f.name,
                hints.get(f.name, EMPTY),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
    return tuple(
        Field(a.alias or a.name, hints.get(a.name, a.type or EMPTY), a.default is attrs.NOTHING)
        for a in attrs.fields(cls)
        if a.init
    )


def _typeddict_required(hint: Any, declared: bool) -> bool:
    # Python 3.11 computes __required_keys__ from unevaluated string annotations, missing a NotRequired[...] written
    # under `from __future__ import annotations`: the resolved hint is the authority.
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    origin = typing.get_origin(hint)
    if origin is typing.NotRequired:
        return False
    return True if origin is typing.Required else declared


def _object_schema(cls: type, seen: frozenset[type]) -> JsonSchema:
    if cls in seen:
        raise _UnsupportedHintError(f"{cls.__qualname__} refers to itself; recursive types are not supported")
    seen = seen | {cls}
    fields = class_fields(cls)
    schema: JsonSchema = {
        "type": "object",
        "properties": {f.name: {} if f.hint is EMPTY else _schema_for(f.hint, seen) for f in fields},
    }
    required = [f.name for f in fields if f.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema
