"""Strict JSON, the one home for it in ``pipeline``: what the session log writes and the tool runner parses.

JSON has no NaN or Infinity; Python's ``json`` accepts and writes them by default. Everything here refuses them, so
whatever the library writes is read back by any JSON parser, and whatever it parses is a value a provider would accept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn, Protocol, runtime_checkable

from operators.wire import MAX_SAFE_INTEGER, is_json_number

__all__ = ["MAX_SAFE_INTEGER", "SupportsToDict", "clip", "depth_over", "dumps", "is_json_number", "json_default",
           "loads"]


@runtime_checkable
class SupportsToDict(Protocol):
    """A protocol value (``TextBlock``, ``ToolCallBlock``, ``Usage``, ``FinishReason``, ``Failure``, a chunk)."""

    def to_dict(self) -> dict[str, Any]: ...


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def json_default(value: object) -> Any:
    """``json.dumps``'s ``default``: a protocol value by its ``to_dict()``, a mapping as a dict; anything else is a
    ``TypeError`` naming its type."""
    if isinstance(value, SupportsToDict):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def dumps(value: object, *, compact: bool = True) -> str:
    """Strict JSON text: ``ValueError`` for NaN or Infinity, ``TypeError`` for a value JSON cannot hold."""
    separators = (",", ":") if compact else None
    return json.dumps(value, ensure_ascii=False, separators=separators, allow_nan=False, default=json_default)


def loads(text: str | bytes) -> Any:
    """A JSON value. ``ValueError`` for bad UTF-8, bad JSON, NaN or Infinity; ``RecursionError`` for nesting deeper
    than the interpreter allows."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(text, parse_constant=_reject_constant)


def depth_over(value: object, limit: int) -> bool:
    """Whether ``value`` (dicts, mappings, lists and tuples of scalars) nests deeper than ``limit`` containers, found
    without recursion, so a value too deep to encode, decode or validate is named before anything recurses into it."""
    level: list[tuple[object, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        level.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple)))
    return False


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, saying how long the whole was when it was cut."""
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text)} characters)"
    return text
