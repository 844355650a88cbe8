"""The tool registry: the tools a model may call, their JSON Schemas, and a ``call`` that never raises.

    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: Annotated[str, "City name, e.g. Paris"], unit: Literal["c", "f"] = "c") -> str:
        \"\"\"Current weather for a city.\"\"\"

    request["tools"] = registry.schemas()
    result = await registry.call(name, arguments)      # a ToolResult, whatever the model sent

Everything the model (or the tool) can get wrong comes back as ``ToolResult(is_error=True)`` whose text says what
happened and what was expected, so the turn loop hands it back to the model and the model can correct itself:

    unknown tool          unknown tool "get_wether"; available tools: get_time, get_weather
                          (did you mean "get_weather"?)
    not a string          arguments for tool "get_weather" must be a string of JSON, got dict: {'city': 'Paris'}
    not JSON              arguments for tool "get_weather" are not valid JSON (Expecting ...): "{city: Paris}"
    not an object         arguments for tool "get_weather" must be a JSON object, got array: "[\\"Paris\\"]"
    schema violation      invalid arguments for tool "get_weather":
                          - $.city: expected string, got integer
                          - $: unexpected property "town" (allowed: city, unit)
    the tool raised       tool get_weather failed: KeyError: 'Paris'

Only ``asyncio.CancelledError`` (and ``BaseException``s that are not ``Exception``s) propagate out of ``call``.

Schemas are derived from type hints (``schema_from_signature``) unless given explicitly. When a tool's schema is the
derived one, validated arguments are also *converted* to the annotated types before the call: an ``Enum`` parameter
receives the member, a dataclass / attrs parameter an instance, a ``float`` parameter a float even when the model
wrote ``3``, and an ``X | None`` parameter without a default receives ``None`` when omitted. A tool with an explicit
schema receives the JSON values as they are, as keyword arguments.
"""

from __future__ import annotations

import asyncio
import collections.abc
import copy
import dataclasses
import difflib
import enum
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import math
import operator
import re
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, TypeAlias, TypeVar, Union, overload

import attrs

__all__ = [
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "schema_from_signature",
    "validate",
]

_log = logging.getLogger(__name__)

JsonSchema: TypeAlias = dict[str, Any]
ToolFunc: TypeAlias = Callable[..., Awaitable[Any]] | Callable[..., Any]
_F = TypeVar("_F", bound=Callable[..., Any])

_EXCERPT = 200  # characters of a bad value quoted back to the model
_MAX_PROBLEMS = 20  # schema problems listed in one ToolResult
_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NONE_TYPE = type(None)
_EMPTY = inspect.Parameter.empty


# ---------------------------------------------------------------------------------------------------------------------
# Values


@attrs.frozen
class ToolResult:
    """What a tool call produced, ready to be sent back to the model as a ``tool`` message."""

    text: str
    is_error: bool = False


def _check_name(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ValueError(
            f"tool name {value!r} is not valid: OpenAI-compatible APIs accept 1 to 64 letters, digits, '_' or '-'"
        )


def _check_parameters(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, Mapping) or value.get("type") != "object":
        raise ValueError(
            f"tool parameters must be a JSON Schema of type 'object' (the arguments are a JSON object), got {value!r}"
        )


def _check_callable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise TypeError(f"a tool's func must be callable, got {value!r}")


def _copy_schema(value: object) -> object:
    # A private deep copy: the schema a tool validates against cannot change behind the registry's back.
    return copy.deepcopy(dict(value)) if isinstance(value, Mapping) else value


@attrs.frozen
class Tool:
    """A function the model may call: its name, description, JSON Schema of its arguments, and the callable.

    ``func`` may be async or sync (a sync one runs in a worker thread). ``parameters`` is excluded from the hash
    (it is a dict).
    """

    name: str = attrs.field(validator=_check_name)
    description: str = attrs.field(validator=attrs.validators.instance_of(str))
    parameters: Mapping[str, Any] = attrs.field(converter=_copy_schema, validator=_check_parameters, hash=False)
    func: ToolFunc = attrs.field(validator=_check_callable)

    @classmethod
    def from_function(
        cls,
        func: ToolFunc,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Tool:
        """Build a tool from a callable.

        ``name`` defaults to ``func.__name__``, ``description`` to the first paragraph of the docstring, and
        ``parameters`` to ``schema_from_signature(func)``.
        """
        if not callable(func):
            raise TypeError(f"a tool must be callable, got {func!r}")
        if name is None:
            name = getattr(func, "__name__", None)
            if not isinstance(name, str):
                raise TypeError(f"{func!r} has no __name__: pass name= explicitly")
        if description is None:
            description = _first_paragraph(func)
        if parameters is None:
            parameters = schema_from_signature(func)
        return cls(name=name, description=description, parameters=parameters, func=func)

    def to_openai(self) -> dict[str, Any]:
        """The entry of a chat-completions request's ``tools`` list."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(dict(self.parameters)),
            },
        }


def _first_paragraph(func: Callable[..., Any]) -> str:
    target = func.func if isinstance(func, functools.partial) else func
    doc = inspect.getdoc(target)
    if not doc:
        return ""
    paragraph = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    return " ".join(paragraph.split())


# ---------------------------------------------------------------------------------------------------------------------
# Schema derivation


class _UnsupportedHintError(Exception):
    """A type hint that has no JSON Schema here."""


_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

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
    hints raise ``TypeError``: pass ``parameters=`` explicitly for those.
    """
    label = _label(func)
    try:
        signature = inspect.signature(func, eval_str=True)
    except NameError as exc:
        raise TypeError(f"cannot resolve the type hints of {label}: {exc}; define the types at module level") from exc
    except ValueError as exc:
        raise TypeError(f"cannot read the signature of {label}: {exc}; pass parameters= explicitly") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature.parameters.values():
        if param.kind is param.VAR_POSITIONAL or param.kind is param.VAR_KEYWORD:
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"{label} takes {star}{param.name}: a tool's arguments are a JSON object with named properties; "
                "declare each parameter, or pass parameters= explicitly"
            )
        if param.annotation is _EMPTY:
            properties[param.name] = {}
        else:
            try:
                properties[param.name] = _schema_for(param.annotation, frozenset())
            except _UnsupportedHintError as exc:
                raise TypeError(f"parameter {param.name!r} of {label}: {exc}") from None
        if param.default is _EMPTY and not _is_optional(param.annotation):
            required.append(param.name)
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _label(func: object) -> str:
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


def _is_union(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin is Union or origin is types.UnionType


def _is_optional(hint: Any) -> bool:
    hint = _unwrap(hint)
    return _is_union(hint) and any(_unwrap(arg) in (None, _NONE_TYPE) for arg in typing.get_args(hint))


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
    if hint is None or hint is _NONE_TYPE:
        return {"type": "null"}
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    if _is_union(hint):
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
        if _is_object_class(hint):
            return _object_schema(hint, seen)
    raise _UnsupportedHintError(f"unsupported type hint {hint!r}; supported: {_SUPPORTED}")


def _is_object_class(cls: type) -> bool:
    return typing.is_typeddict(cls) or dataclasses.is_dataclass(cls) or attrs.has(cls)


@attrs.frozen
class _Field:
    name: str  # the JSON property and the keyword argument of the constructor
    hint: Any
    required: bool


@functools.cache
def _class_fields(cls: type) -> tuple[_Field, ...]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise _UnsupportedHintError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from None
    if typing.is_typeddict(cls):
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        return tuple(_Field(key, hint, _typeddict_required(hint, key in required_keys)) for key, hint in hints.items())
    if dataclasses.is_dataclass(cls):
        return tuple(
            _Field(
                f.name,
                hints.get(f.name, _EMPTY),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
    return tuple(
        _Field(a.alias or a.name, hints.get(a.name, a.type or _EMPTY), a.default is attrs.NOTHING)
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
    fields = _class_fields(cls)
    schema: JsonSchema = {
        "type": "object",
        "properties": {f.name: {} if f.hint is _EMPTY else _schema_for(f.hint, seen) for f in fields},
    }
    required = [f.name for f in fields if f.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


# ---------------------------------------------------------------------------------------------------------------------
# Validation


def validate(instance: object, schema: Mapping[str, Any]) -> list[str]:
    """The problems of ``instance`` against ``schema``, each prefixed by its JSON path; ``[]`` when valid.

    A small validator for the subset ``schema_from_signature`` produces plus a few bounds: ``type`` (a name or a
    list; ``integer`` accepts 3 and 3.0, never ``True`` or 1.5), ``enum``, ``anyOf`` / ``oneOf`` / ``allOf``,
    ``properties`` / ``required`` / ``additionalProperties``, ``items``, ``minimum`` / ``maximum`` /
    ``exclusiveMinimum`` / ``exclusiveMaximum``, ``minLength`` / ``maxLength``, ``minItems`` / ``maxItems``.
    Other keywords are ignored.

        validate({"city": 3, "x": 1}, schema) == ['$.city: expected string, got integer', '$: unexpected property "x"']
    """
    problems: list[str] = []
    _validate(instance, schema, "$", problems)
    return problems


def _validate(instance: object, schema: object, path: str, out: list[str]) -> None:
    if schema is False:
        out.append(f"{path}: no value is allowed here")
        return
    if not isinstance(schema, Mapping):
        return
    names = _type_names(schema)
    if names and not any(_is_type(instance, name) for name in names):
        out.append(f"{path}: expected {' or '.join(names)}, got {_json_type(instance)}")
        return
    allowed = schema.get("enum")
    if isinstance(allowed, list) and not any(_json_equal(instance, value) for value in allowed):
        choices = ", ".join(_show(value) for value in allowed)
        out.append(f"{path}: expected one of {choices}, got {_show(instance)}")
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            _validate_alternatives(instance, branches, keyword, path, out)
    every = schema.get("allOf")
    if isinstance(every, list):
        for branch in every:
            _validate(instance, branch, path, out)
    if _is_number(instance):
        _validate_number(typing.cast(float, instance), schema, path, out)
    elif isinstance(instance, str):
        _validate_size(len(instance), schema, "minLength", "maxLength", "character", path, out)
    elif isinstance(instance, list | tuple):
        _validate_size(len(instance), schema, "minItems", "maxItems", "item", path, out)
        items = schema.get("items")
        if isinstance(items, Mapping | bool):
            for index, item in enumerate(instance):
                _validate(item, items, f"{path}[{index}]", out)
    elif isinstance(instance, Mapping):
        _validate_object(instance, schema, path, out)


def _type_names(schema: Mapping[str, Any]) -> list[str]:
    expected = schema.get("type")
    if isinstance(expected, str):
        return [expected]
    if isinstance(expected, list):
        return [name for name in expected if isinstance(name, str)]
    return []


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: object, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return _is_number(value)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, Mapping)
    return True  # an unknown type name constrains nothing


def _json_type(value: object) -> str:
    for name in ("null", "boolean", "string", "array", "object"):
        if _is_type(value, name):
            return name
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return type(value).__name__


def _json_equal(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[key], b[key]) for key in a)
    if _is_number(a) or _is_number(b):
        return False
    return bool(a == b)


def _validate_alternatives(instance: object, branches: list[Any], keyword: str, path: str, out: list[str]) -> None:
    results: list[list[str]] = []
    for branch in branches:
        problems: list[str] = []
        _validate(instance, branch, path, problems)
        results.append(problems)
    passing = sum(1 for problems in results if not problems)
    if keyword == "oneOf" and passing > 1:
        out.append(f"{path}: matches {passing} of the oneOf alternatives, expected exactly one")
        return
    if passing:
        return
    # The branches whose type admits the value explain the failure best (an object with a bad property, say).
    admitting: list[list[str]] = [
        problems
        for branch, problems in zip(branches, results, strict=True)
        if not isinstance(branch, Mapping)
        or not _type_names(branch)
        or any(_is_type(instance, name) for name in _type_names(branch))
    ]
    if admitting:
        fewest: list[str] = min(admitting, key=len)
        out.extend(fewest)
        return
    names: list[str] = []
    for branch in branches:
        names.extend(name for name in _type_names(branch) if name not in names)
    out.append(f"{path}: expected {' or '.join(names)}, got {_json_type(instance)}")


def _bound(schema: Mapping[str, Any], keyword: str) -> float | None:
    bound = schema.get(keyword)
    return bound if isinstance(bound, int | float) and not isinstance(bound, bool) else None


def _validate_number(value: float, schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    checks = (
        ("minimum", ">=", operator.ge),
        ("exclusiveMinimum", ">", operator.gt),
        ("maximum", "<=", operator.le),
        ("exclusiveMaximum", "<", operator.lt),
    )
    for keyword, relation, holds in checks:
        bound = _bound(schema, keyword)
        if bound is not None and not holds(value, bound):
            out.append(f"{path}: expected a number {relation} {bound}, got {_show(value)}")


def _validate_size(
    size: int, schema: Mapping[str, Any], low: str, high: str, unit: str, path: str, out: list[str]
) -> None:
    minimum, maximum = _bound(schema, low), _bound(schema, high)
    if minimum is not None and size < minimum:
        out.append(f"{path}: expected at least {minimum} {unit}{'s' * (minimum != 1)}, got {size}")
    if maximum is not None and size > maximum:
        out.append(f"{path}: expected at most {maximum} {unit}{'s' * (maximum != 1)}, got {size}")


def _validate_object(instance: Mapping[Any, Any], schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        properties = {}
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in instance:
                out.append(f"{path}: missing required property {_show(name)}")
    additional = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if key in properties:
            _validate(value, properties[key], _child_path(path, key), out)
        elif additional is False:
            allowed = f" (allowed: {', '.join(str(name) for name in properties)})" if properties else ""
            out.append(f"{path}: unexpected property {_show(key)}{allowed}")
        elif isinstance(additional, Mapping):
            _validate(value, additional, _child_path(path, key), out)


def _child_path(path: str, key: object) -> str:
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{_show(key)}]"


def _clip(text: str) -> str:
    """At most ``_EXCERPT`` characters, always encodable as UTF-8."""
    if len(text) > _EXCERPT:
        text = f"{text[:_EXCERPT]}… ({len(text)} characters)"
    return _utf8_safe(text)


def _utf8_safe(text: str) -> str:
    """``text`` unchanged, unless it holds a lone surrogate: that becomes its escape (``\\ud800``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _show(value: object) -> str:
    """``value`` as JSON (or repr), clipped: how a bad value is quoted back to the model."""
    if isinstance(value, str):  # the first characters, quoted (not the quoted text, clipped)
        quoted = json.dumps(value[:_EXCERPT], ensure_ascii=False)
        if len(value) > _EXCERPT:
            quoted = f"{quoted}… ({len(value)} characters)"
        return _utf8_safe(quoted)
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except Exception:
        text = _safe_repr(value)
    return _clip(text)


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"


# ---------------------------------------------------------------------------------------------------------------------
# Conversion of validated arguments to the annotated types


class _ConversionError(Exception):
    """A validated argument that still cannot become its annotated type (a constructor refused it, say)."""


def _convert(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated or origin is typing.Required or origin is typing.NotRequired:
        return _convert(args[0], value, path)
    if isinstance(hint, typing.NewType):
        return _convert(hint.__supertype__, value, path)
    if hint is _EMPTY or hint is Any or hint is object:
        return value
    if hint is None or hint is _NONE_TYPE:
        if value is None:
            return None
    elif hint in _PRIMITIVES:
        if _is_type(value, _PRIMITIVES[hint]):
            return float(value) if hint is float else int(value) if hint is int else value
    elif _is_union(hint):
        first: _ConversionError | None = None
        for arg in args:
            try:
                return _convert(arg, value, path)
            except _ConversionError as exc:
                first = first or exc
        raise first or _ConversionError(f"{path}: no alternative of {hint!r} accepts {_show(value)}")
    elif origin is Literal:
        for literal in args:
            if _json_equal(value, literal.value if isinstance(literal, enum.Enum) else literal):
                return literal
    elif hint is list or hint is collections.abc.Sequence or origin is list or origin is collections.abc.Sequence:
        if isinstance(value, list | tuple):
            item = args[0] if args else Any
            return [_convert(item, element, f"{path}[{index}]") for index, element in enumerate(value)]
    elif hint is dict or hint is collections.abc.Mapping or origin is dict or origin is collections.abc.Mapping:
        if isinstance(value, Mapping):
            item = args[1] if len(args) == 2 else Any
            return {key: _convert(item, element, _child_path(path, key)) for key, element in value.items()}
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        for member in hint:
            if _json_equal(value, member.value):
                return member
    elif isinstance(hint, type) and _is_object_class(hint):
        if isinstance(value, Mapping):
            return _convert_object(hint, value, path)
    else:
        return value  # a hint this module does not know: the value passes unchanged
    raise _ConversionError(f"{path}: cannot convert {_show(value)} to {_label(hint)}")


def _convert_object(cls: type, value: Mapping[str, Any], path: str) -> Any:
    hints = {f.name: f.hint for f in _class_fields(cls)}
    fields = {
        key: _convert(hints[key], element, _child_path(path, key)) if key in hints else element
        for key, element in value.items()
    }
    if typing.is_typeddict(cls):
        return fields
    try:
        return cls(**fields)
    except Exception as exc:
        raise _ConversionError(f"{path}: {cls.__qualname__} rejected the value: {_describe(exc)}") from exc


@attrs.frozen
class _Parameter:
    name: str
    hint: Any
    default: Any
    positional_only: bool


@attrs.frozen
class _Binder:
    """Turns validated JSON arguments into the call's positional and keyword arguments (see the module docstring)."""

    parameters: tuple[_Parameter, ...]

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param in self.parameters:
            if param.name in arguments:
                value = _convert(param.hint, arguments[param.name], _child_path("$", param.name))
            elif param.default is not _EMPTY:
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


def _binder_for(tool: Tool) -> _Binder | None:
    """A binder when the tool's schema is the one its hints give; None (pass JSON as keywords) otherwise."""
    try:
        if schema_from_signature(tool.func) != tool.parameters:
            return None
        signature = inspect.signature(tool.func, eval_str=True)
    except (TypeError, ValueError, NameError):
        return None
    return _Binder(
        tuple(
            _Parameter(p.name, p.annotation, p.default, p.kind is p.POSITIONAL_ONLY)
            for p in signature.parameters.values()
        )
    )


# ---------------------------------------------------------------------------------------------------------------------
# The registry


@attrs.frozen
class _Entry:
    tool: Tool
    binder: _Binder | None
    is_async: bool


def _is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:
        message = ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _json_default(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        return attrs.asdict(typing.cast(attrs.AttrsInstance, value), recurse=False)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return list(value)
    return str(value)


class ToolRegistry:
    """The tools of a conversation, by name, in registration order.

    ``register`` adds a function (as a decorator, with or without options, or called directly); ``add`` adds a
    ``Tool``. ``schemas()`` is the request's ``tools``; ``call`` / ``call_many`` run what the model asked for and
    never raise (see the module docstring for every error message).
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._entries: dict[str, _Entry] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> Tool:
        """Register ``tool``; a second tool with the same name is a ``ValueError``."""
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool, got {tool!r}; use register() for a function")
        if tool.name in self._entries:
            raise ValueError(f'a tool named "{tool.name}" is already registered')
        self._entries[tool.name] = _Entry(tool, _binder_for(tool), _is_async(tool.func))
        return tool

    @overload
    def register(
        self,
        func: _F,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> _F: ...

    @overload
    def register(
        self,
        func: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Callable[[_F], _F]: ...

    def register(
        self,
        func: _F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> _F | Callable[[_F], _F]:
        """Register a function as a tool and return it unchanged.

        @registry.register
        async def get_weather(city: str) -> str: ...

        @registry.register(name="weather", parameters={"type": "object", ...})
        def get_weather_sync(**arguments: str) -> str: ...

        registry.register(len_of_text)
        """

        def decorate(target: _F) -> _F:
            self.add(Tool.from_function(target, name=name, description=description, parameters=parameters))
            return target

        return decorate if func is None else decorate(func)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Tool]:
        return (entry.tool for entry in list(self._entries.values()))

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._entries)!r})"

    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name) if isinstance(name, str) else None
        return None if entry is None else entry.tool

    def schemas(self) -> list[dict[str, Any]]:
        """The request's ``tools``: one ``{"type": "function", "function": {...}}`` per tool."""
        return [entry.tool.to_openai() for entry in self._entries.values()]

    async def call(self, name: object, arguments: object) -> ToolResult:
        """Run the tool ``name`` with ``arguments`` (the JSON string the model wrote) and return what happened.

        Never raises, except ``asyncio.CancelledError``: every failure is a ``ToolResult(is_error=True)`` whose
        text tells the model what went wrong. Empty (or blank) arguments mean ``{}``. The text is always encodable
        as UTF-8 (a lone surrogate, which a model can write as ``"\\ud800"``, becomes the escape ``\\ud800``).
        """
        result = await self._call(name, arguments)
        text = _utf8_safe(result.text)
        return result if text is result.text else attrs.evolve(result, text=text)

    async def _call(self, name: object, arguments: object) -> ToolResult:
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            return ToolResult(self._unknown_tool(name), is_error=True)
        tool = entry.tool
        try:
            prepared = self._prepare(entry, arguments)
        except Exception as exc:  # a malformed explicit schema, say: still a result, never an exception
            _log.debug("checking the arguments of tool %s failed", tool.name, exc_info=True)
            return ToolResult(f'cannot check the arguments for tool "{tool.name}": {_describe(exc)}', is_error=True)
        if isinstance(prepared, ToolResult):
            return prepared
        positional, keywords = prepared
        try:
            if entry.is_async:
                value = tool.func(*positional, **keywords)
            else:
                value = await asyncio.to_thread(tool.func, *positional, **keywords)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            _log.debug("tool %s failed", tool.name, exc_info=True)
            return ToolResult(f"tool {tool.name} failed: {_describe(exc)}", is_error=True)
        return _result_from_value(value)

    async def call_many(self, calls: Sequence[tuple[str, str]]) -> list[ToolResult]:
        """Run ``(name, arguments)`` calls concurrently; the results are in the order of ``calls``."""
        return list(await asyncio.gather(*(self.call(name, arguments) for name, arguments in calls)))

    def _unknown_tool(self, name: object) -> str:
        available = ", ".join(self._entries) or "(none)"
        if not isinstance(name, str):
            return (
                f'unknown tool "{_clip(_safe_repr(name))}" (a tool name is a string, got {type(name).__name__}); '
                f"available tools: {available}"
            )
        message = f'unknown tool "{_clip(name)}"; available tools: {available}'
        close = difflib.get_close_matches(name[: _EXCERPT * 2], list(self._entries), n=1, cutoff=0.8)
        return f'{message} (did you mean "{close[0]}"?)' if close else message

    @staticmethod
    def _prepare(entry: _Entry, arguments: object) -> ToolResult | tuple[list[Any], dict[str, Any]]:
        tool = entry.tool
        parsed = _parse_arguments(tool.name, arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        problems = validate(parsed, tool.parameters)
        if problems:
            shown = problems[:_MAX_PROBLEMS]
            if len(problems) > _MAX_PROBLEMS:
                shown.append(f"... and {len(problems) - _MAX_PROBLEMS} more")
            listing = "\n".join(f"- {problem}" for problem in shown)
            return ToolResult(f'invalid arguments for tool "{tool.name}":\n{listing}', is_error=True)
        if entry.binder is None:
            return [], parsed
        try:
            return entry.binder.bind(parsed)
        except _ConversionError as exc:
            return ToolResult(f'invalid arguments for tool "{tool.name}":\n- {exc}', is_error=True)

    @classmethod
    def from_module(cls, module: str | ModuleType) -> ToolRegistry:
        """The tools of a module: a dotted name, a path to a ``.py`` file, or the module itself.

        The module exposes either ``TOOLS``, an iterable of functions and ``Tool`` objects (a new registry is
        built), or ``registry``, a ``ToolRegistry`` (returned as it is). Anything else is a ``ValueError``.
        """
        loaded = module if isinstance(module, ModuleType) else _load_module(module)
        label = f"tool module {loaded.__name__!r}" if isinstance(module, ModuleType) else f"tool module {module!r}"
        has_tools, has_registry = hasattr(loaded, "TOOLS"), hasattr(loaded, "registry")
        if has_tools and has_registry:
            raise ValueError(f"{label} defines both TOOLS and registry: keep one of them")
        if has_registry:
            registry = loaded.registry
            if not isinstance(registry, ToolRegistry):
                raise ValueError(f"{label}: registry is a {type(registry).__name__}, expected a ToolRegistry")
            return registry
        if not has_tools:
            raise ValueError(
                f"{label} exposes no tools: define TOOLS (a list of functions or Tool objects) "
                "or registry (a ToolRegistry)"
            )
        items = loaded.TOOLS
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise ValueError(
                f"{label}: TOOLS is a {type(items).__name__}, expected a list of functions or Tool objects"
            )
        built = cls()
        for index, item in enumerate(items):
            try:
                if isinstance(item, Tool):
                    built.add(item)
                elif callable(item):
                    built.register(item)
                else:
                    raise TypeError(f"{_safe_repr(item)} is a {type(item).__name__}, expected a function or a Tool")
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{label}: TOOLS[{index}]: {exc}") from exc
        return built


def _parse_arguments(tool: str, arguments: object) -> dict[str, Any] | ToolResult:
    if not isinstance(arguments, str):
        return ToolResult(
            f'arguments for tool "{tool}" must be a string of JSON, got {type(arguments).__name__}: '
            f"{_clip(_safe_repr(arguments))}",
            is_error=True,
        )
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return ToolResult(
            f'arguments for tool "{tool}" are not valid JSON ({_describe(exc)}): {_show(arguments)}', is_error=True
        )
    if not isinstance(value, dict):
        return ToolResult(
            f'arguments for tool "{tool}" must be a JSON object, got {_json_type(value)}: {_show(arguments)}',
            is_error=True,
        )
    return value


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _result_from_value(value: object) -> ToolResult:
    if isinstance(value, str):
        return ToolResult(value)
    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, default=_json_default))
    except Exception:  # a value json cannot encode (non-string keys of odd types, cycles): its text still helps
        return ToolResult(_safe_repr(value))


def _load_module(spec: str) -> ModuleType:
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"tool module {spec!r}: no such file")
        digest = hashlib.sha256(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = f"_llm_tools_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"tool module {spec!r}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and string annotations look their module up here
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(f"{exc.name}.")):
            raise ValueError(f"tool module {spec!r} cannot be imported: {exc}") from exc
        raise  # the module exists but one of its own imports is missing: that error is the useful one
