"""The JSON notions validation, its messages and the argument conversion share: a value's JSON type, JSON equality,
and the JSON path of a value."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from .._json import is_json_number
from ._quote import show

__all__ = ["child_path", "is_type", "json_equal", "json_path", "json_type"]

_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def child_path(path: str, key: object) -> str:
    """The JSON path of a property: ``$.city``, or ``$["not an identifier"]``."""
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{show(key)}]"


def json_path(parts: Iterable[object], root: str = "$") -> str:
    """The JSON path of the value reached through ``parts`` (property names and array indices): ``$.points[1].x``."""
    path = root
    for part in parts:
        path = f"{path}[{part}]" if isinstance(part, int) and not isinstance(part, bool) else child_path(path, part)
    return path
