"""``map_usage``: a wire usage object to the disjoint ``Usage`` of the protocol (docs/protocol.md); ``merge_usage``:
usage split over several chunks, field by field (docs/decisions/0012-usage-merge.md).

    input_tokens       = prompt_tokens - cache_read - cache_write   (uncached input only); only if prompt is known
    output_tokens      = completion_tokens; only if known (an absent or invalid count is None, never 0: 0046)
    cache_read_tokens  = prompt_tokens_details.cached_tokens, else prompt_cache_hit_tokens (DeepSeek); only if known
    cache_write_tokens = prompt_tokens_details.cache_write_tokens (OpenRouter); only if known
    reasoning_tokens   = completion_tokens_details.reasoning_tokens; only if known
    total_tokens       = prompt + completion, only when both are present valid counts, their sum is a safe integer,
                         and the wire total is absent or equal to it (the exact-total rule). Otherwise omitted.

A count is valid when it is a non-negative integer that fits in 64 bits (``MAX_COUNT``); a whole-number float such as
``10.0`` is the integer it spells, as in JavaScript. Anything else (negative, fractional, non-finite such as
``1e400``, absurd) is dropped, as if absent, and named in the ``dropped`` list ``checked_usage`` returns, which
``coalesce_identity`` reports as an ``invalid-usage`` anomaly. When the cache counts exceed the prompt count, they are
dropped too (the uncached input would be negative). In the merge, an invalid later count never erases a valid earlier
one: the earlier count is kept and the later one reported (``merge_usage(..., kept)``).
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec

from ._chunks import Usage
from ._numbers import MAX_SAFE_INTEGER
from ._wire import WireUsage

__all__ = ["MAX_COUNT", "checked_usage", "is_count", "map_usage", "merge_usage"]

MAX_COUNT = 2**63 - 1
"""The largest token count accepted: a signed 64-bit integer."""

_S = TypeVar("_S", bound=msgspec.Struct)


def _count(name: str, value: int | float | None, dropped: list[str]) -> int | None:
    if value is None:
        return None
    if type(value) is int:
        if 0 <= value <= MAX_COUNT:
            return value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_SAFE_INTEGER:
        return int(value)
    dropped.append(f"{name}={value!r}")
    return None


def map_usage(wire: WireUsage) -> Usage:
    """The protocol ``Usage`` of a wire usage (invalid counts dropped)."""
    return checked_usage(wire)[0]


def checked_usage(wire: WireUsage) -> tuple[Usage, list[str]]:
    """The protocol ``Usage`` of a wire usage, and the counts dropped as invalid (``"prompt_tokens=-1"``, ...)."""
    dropped: list[str] = []
    prompt = _count("prompt_tokens", wire.prompt_tokens, dropped)
    completion = _count("completion_tokens", wire.completion_tokens, dropped)
    details = wire.prompt_tokens_details
    cache_read = _count("cached_tokens", details.cached_tokens, dropped) if details is not None else None
    if cache_read is None:
        cache_read = _count("prompt_cache_hit_tokens", wire.prompt_cache_hit_tokens, dropped)
    cache_write = _count("cache_write_tokens", details.cache_write_tokens, dropped) if details is not None else None
    completion_details = wire.completion_tokens_details
    reasoning = (
        _count("reasoning_tokens", completion_details.reasoning_tokens, dropped)
        if completion_details is not None
        else None
    )
    input_tokens = None if prompt is None else prompt - (cache_read or 0) - (cache_write or 0)
    if prompt is not None and input_tokens is not None and input_tokens < 0:
        dropped.append(f"cache counts {(cache_read or 0) + (cache_write or 0)} > prompt_tokens={prompt}")
        cache_read = cache_write = None
        input_tokens = prompt

    total: int | None = None
    if prompt is not None and completion is not None:  # an absent count is not a known count
        exact = prompt + completion
        wire_total = wire.total_tokens
        if exact <= MAX_SAFE_INTEGER and (wire_total is None or wire_total == exact):
            total = exact

    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=completion,
        total_tokens=total,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
    )
    return usage, dropped


def is_count(value: object) -> bool:
    """A valid token count: a non-negative integer in 64 bits (a whole-number float as the integer it spells)."""
    return isinstance(value, int | float) and _count("", value, []) is not None


def _merge(earlier: _S, later: _S, kept: list[str]) -> _S:
    changes: dict[str, Any] = {}
    for name in later.__struct_fields__:
        value = getattr(later, name)
        if value is None:
            continue
        before = getattr(earlier, name)
        if value == 0 and before:  # a placeholder zero (Gemini through LiteLLM) never erases a known count
            continue
        if isinstance(value, msgspec.Struct) and isinstance(before, msgspec.Struct):
            value = _merge(before, value, kept)
        elif isinstance(value, int | float) and not is_count(value) and is_count(before):
            kept.append(f"{name}={value!r}")  # an invalid later count never erases a valid earlier one
            continue
        changes[name] = value
    return msgspec.structs.replace(earlier, **changes) if changes else earlier


def merge_usage(earlier: WireUsage | None, later: WireUsage, kept: list[str] | None = None) -> WireUsage:
    """Usage split over chunks, field by field: a field the later chunk omits (or sends as ``null``, or as a ``0`` after
    a non-zero count, or as an invalid count after a valid one) keeps its earlier value, including inside
    ``prompt_tokens_details`` and ``completion_tokens_details``; otherwise the last value of each field wins. The
    invalid later counts set aside are appended to ``kept`` (``"prompt_tokens=-3"``), when given."""
    return later if earlier is None else _merge(earlier, later, [] if kept is None else kept)
