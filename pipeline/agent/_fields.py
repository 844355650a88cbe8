"""The fields of the classes whose JSON form is an object (TypedDict, dataclass, attrs class, pydantic model), as
the schema derivation and the argument conversion see them."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from operators import LlmStreamError

__all__ = ["EMPTY", "Field", "UnsupportedHintError", "class_fields", "is_object_class", "is_pydantic_model"]

EMPTY = inspect.Parameter.empty


class UnsupportedHintError(LlmStreamError):
    """A type hint that has no JSON Schema here (``schema_from_signature`` names the parameter and raises a
    ``ToolDefinitionError``)."""


def is_pydantic_model(cls: type) -> bool:
    pydantic = sys.modules.get("pydantic")  # never imported here: a program with a model has imported it
    return pydantic is not None and issubclass(cls, pydantic.BaseModel)


def is_object_class(cls: type) -> bool:
    """A class whose JSON form is an object of its fields: a TypedDict, a dataclass, an attrs class or a pydantic
    model."""
    return typing.is_typeddict(cls) or dataclasses.is_dataclass(cls) or attrs.has(cls) or is_pydantic_model(cls)


@attrs.frozen
class Field:
    """A field of a TypedDict, dataclass, attrs class or pydantic model, as its JSON object has it."""

    name: str  # the JSON property and the keyword argument of the constructor
    hint: Any
    required: bool


@functools.cache
def class_fields(cls: type) -> tuple[Field, ...]:
    """The fields of an object class (``is_object_class``) that its constructor takes."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise UnsupportedHintError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from None
    if is_pydantic_model(cls):  # the model converts its own fields: each value reaches it as JSON
        model_fields: Mapping[str, Any] = getattr(cls, "model_fields")  # noqa: B009
        return tuple(Field(info.alias or name, Any, info.is_required()) for name, info in model_fields.items())
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
