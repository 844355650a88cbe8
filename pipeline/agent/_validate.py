"""``validate``: the JSON Schema subset the registry derives and accepts, checked with messages a model can act on;
and the JSON notions it rests on (a value's JSON type, JSON equality, the path of a property), which the argument
conversion shares."""

from __future__ import annotations

import math
import operator
import re
import typing
from collections.abc import Mapping
from typing import Any

from .._json import is_json_number
from ._quote import show

__all__ = ["child_path", "is_type", "json_equal", "json_type", "validate"]

_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
    if names and not any(is_type(instance, name) for name in names):
        out.append(f"{path}: expected {' or '.join(names)}, got {json_type(instance)}")
        return
    allowed = schema.get("enum")
    if isinstance(allowed, list) and not any(json_equal(instance, value) for value in allowed):
        choices = ", ".join(show(value) for value in allowed)
        out.append(f"{path}: expected one of {choices}, got {show(instance)}")
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            _validate_alternatives(instance, branches, keyword, path, out)
    every = schema.get("allOf")
    if isinstance(every, list):
        for branch in every:
            _validate(instance, branch, path, out)
    if is_json_number(instance):
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


def is_type(value: object, name: str) -> bool:
    """Whether ``value`` has the JSON type ``name`` (``integer`` accepts 3 and 3.0, never ``True`` or 1.5)."""
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return is_json_number(value)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, Mapping)
    return True  # an unknown type name constrains nothing


def json_type(value: object) -> str:
    """The JSON type name of ``value`` as an error message says it (``integer`` for 3, ``number`` for 1.5)."""
    for name in ("null", "boolean", "string", "array", "object"):
        if is_type(value, name):
            return name
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return type(value).__name__


def json_equal(a: object, b: object) -> bool:
    """Equality as JSON sees it: ``1 == 1.0``, but ``True`` is neither ``1`` nor ``"1"``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_json_number(a) and is_json_number(b):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if is_json_number(a) or is_json_number(b):
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
        or any(is_type(instance, name) for name in _type_names(branch))
    ]
    if admitting:
        fewest: list[str] = min(admitting, key=len)
        out.extend(fewest)
        return
    names: list[str] = []
    for branch in branches:
        names.extend(name for name in _type_names(branch) if name not in names)
    out.append(f"{path}: expected {' or '.join(names)}, got {json_type(instance)}")


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
            out.append(f"{path}: expected a number {relation} {bound}, got {show(value)}")


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
                out.append(f"{path}: missing required property {show(name)}")
    additional = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if key in properties:
            _validate(value, properties[key], child_path(path, key), out)
        elif additional is False:
            allowed = f" (allowed: {', '.join(str(name) for name in properties)})" if properties else ""
            out.append(f"{path}: unexpected property {show(key)}{allowed}")
        elif isinstance(additional, Mapping):
            _validate(value, additional, child_path(path, key), out)


def child_path(path: str, key: object) -> str:
    """The JSON path of a property: ``$.city``, or ``$["not an identifier"]``."""
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{show(key)}]"
