"""``schema_from_signature``: a JSON Schema from a function's type hints (str, numbers, bool, None, Literal, Enum,
lists, tuples, sets, dicts, unions, dataclasses, attrs classes, TypedDicts, pydantic models, Annotated descriptions),
nested to any depth; a recursive type becomes a ``$defs`` entry and ``$ref``s to it.

Hand-written rather than pydantic's ``TypeAdapter``, which handles neither attrs classes nor ``typing.TypedDict`` on
Python 3.11 and writes a ``title`` into every property; a pydantic model's own schema is used for it
(docs/decisions/0019-tool-schemas.md)."""

from __future__ import annotations

import collections.abc
import copy
import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, Union

import attrs

from ._errors import ToolDefinitionError
from ._fields import EMPTY, Field, UnsupportedHintError, class_fields, is_object_class, is_pydantic_model

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


PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

_SUPPORTED = (
    "str, int, float, bool, None, Any, list[X], Sequence[X], tuple[X, Y], tuple[X, ...], set[X], dict[str, X], "
    "Mapping[str, X], X | Y, Literal[...], Enum subclasses, TypedDict, dataclasses, attrs classes, pydantic models, "
    "Annotated[X, 'description']"
)


def schema_from_signature(func: Callable[..., Any]) -> JsonSchema:
    """The JSON Schema (an object) of ``func``'s parameters, derived from its type hints.

        str -> string   int -> integer   float -> number   bool -> boolean   None -> null   no hint / Any -> {}
        list[X] -> array of X             dict[str, X] -> object whose values are X
        tuple[X, Y] -> array of exactly X then Y (prefixItems)   tuple[X, ...] -> array of X
        set[X] / frozenset[X] -> array of X with uniqueItems
        X | Y -> anyOf                    Literal["a", "b"] / Enum subclass -> enum of the values
        TypedDict, dataclass, attrs class -> nested object (additionalProperties false)
        a class that contains itself -> {"$ref": "#/$defs/Name"}, its schema once under the root's "$defs"
        pydantic model -> the model's own JSON Schema (its "$defs" moved to the root's)
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
    defs = _Defs()
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
                properties[param.name] = _schema_for(param.annotation, defs)
            except UnsupportedHintError as exc:
                raise ToolDefinitionError(f"parameter {param.name!r} of {label}: {exc}") from None
        if param.default is EMPTY and not _is_optional(param.annotation):
            required.append(param.name)
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if defs.schemas:
        schema["$defs"] = defs.schemas
    return schema


@attrs.define
class _Defs:
    """The ``$defs`` of one derivation: a class found inside itself gets a name, and its schema is kept once."""

    names: dict[type, str] = attrs.Factory(dict)  # the classes referred to by $ref
    schemas: dict[str, JsonSchema] = attrs.Factory(dict)
    open: set[type] = attrs.Factory(set)  # the classes being derived

    def ref(self, cls: type) -> JsonSchema:
        if cls not in self.names:
            self.names[cls] = self._free(cls.__name__)
            self.schemas[self.names[cls]] = {}  # reserved; filled in when cls is done
        return {"$ref": "#/$defs/" + self.names[cls].replace("~", "~0").replace("/", "~1")}

    def _free(self, name: str) -> str:
        candidate, suffix = name, 1
        while candidate in self.schemas:
            suffix += 1
            candidate = f"{name}{suffix}"
        return candidate

    def add(self, name: str, schema: JsonSchema, owner: type) -> None:
        """A definition brought in from elsewhere (a pydantic model's ``$defs``)."""
        if name in self.schemas and self.schemas[name] != schema:
            raise UnsupportedHintError(
                f"{owner.__qualname__}'s schema defines {name!r}, a name another type here already has; rename one"
            )
        self.schemas[name] = schema


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
    raise UnsupportedHintError(f"{value!r} is not a JSON value (str, int, float, bool or None)")


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


def _schema_for(hint: Any, defs: _Defs) -> JsonSchema:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated:
        schema = _schema_for(args[0], defs)
        for meta in hint.__metadata__:
            if isinstance(meta, str):
                schema["description"] = meta
            elif isinstance(meta, Mapping):
                schema.update(copy.deepcopy(dict(meta)))
        return schema
    if origin is typing.Required or origin is typing.NotRequired:
        return _schema_for(args[0], defs)
    if isinstance(hint, typing.NewType):
        return _schema_for(hint.__supertype__, defs)
    if hint is Any or hint is object:
        return {}
    if hint is None or hint is NONE_TYPE:
        return {"type": "null"}
    if hint in PRIMITIVES:
        return {"type": PRIMITIVES[hint]}
    if is_union(hint):
        return {"anyOf": [_schema_for(arg, defs) for arg in args]}
    if origin is Literal:
        return _enum_schema([_json_literal(arg) for arg in args])
    if hint is list or hint is collections.abc.Sequence:
        return {"type": "array"}
    if origin is list or origin is collections.abc.Sequence:
        return {"type": "array", "items": _schema_for(args[0], defs)} if args else {"type": "array"}
    if hint is tuple or hint is typing.Tuple:  # noqa: UP006 (the bare typing.Tuple is a hint of its own)
        return {"type": "array"}
    if origin is tuple:
        return _tuple_schema(args, defs)
    if hint in _SETS:
        return {"type": "array", "uniqueItems": True}
    if origin in _SETS:
        return {"type": "array", "items": _schema_for(args[0], defs), "uniqueItems": True}
    if hint is dict or hint is collections.abc.Mapping:
        return {"type": "object"}
    if origin is dict or origin is collections.abc.Mapping:
        if not args:
            return {"type": "object"}
        if _unwrap(args[0]) not in (str, Any):
            raise UnsupportedHintError(f"{hint!r} has non-string keys; JSON object keys are strings")
        values = _schema_for(args[1], defs)
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum_schema([_json_literal(member.value) for member in hint])
        if is_pydantic_model(hint):
            return _pydantic_schema(hint, defs)
        if is_object_class(hint):
            return _object_schema(hint, defs)
    raise UnsupportedHintError(f"unsupported type hint {hint!r}; supported: {_SUPPORTED}")


_SETS = (set, frozenset, collections.abc.Set)


def _tuple_schema(args: tuple[Any, ...], defs: _Defs) -> JsonSchema:
    if len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _schema_for(args[0], defs)}
    if not args:  # tuple[()]
        return {"type": "array", "maxItems": 0}
    return {
        "type": "array",
        "prefixItems": [_schema_for(arg, defs) for arg in args],
        "items": False,
        "minItems": len(args),
    }


def _pydantic_schema(cls: type, defs: _Defs) -> JsonSchema:
    schema: JsonSchema = getattr(cls, "model_json_schema")(ref_template="#/$defs/{model}")  # noqa: B009
    for name, definition in schema.pop("$defs", {}).items():
        defs.add(name, definition, cls)
    return schema


def _object_schema(cls: type, defs: _Defs) -> JsonSchema:
    if cls in defs.names or cls in defs.open:  # defined already, or met again inside itself
        return defs.ref(cls)
    defs.open.add(cls)
    try:
        fields = class_fields(cls)
        schema: JsonSchema = {
            "type": "object",
            "properties": {f.name: {} if f.hint is EMPTY else _schema_for(f.hint, defs) for f in fields},
        }
    finally:
        defs.open.discard(cls)
    required = [f.name for f in fields if f.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if cls in defs.names:  # it contains itself: the definition, and a reference to it here
        defs.schemas[defs.names[cls]] = schema
        return defs.ref(cls)
    return schema
