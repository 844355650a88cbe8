"""``map_usage``: a wire usage object to the disjoint ``Usage`` of the protocol (docs/protocol.md).

    input_tokens       = prompt_tokens - cache_read - cache_write   (uncached input only)
    output_tokens      = completion_tokens
    cache_read_tokens  = prompt_tokens_details.cached_tokens, else prompt_cache_hit_tokens (DeepSeek); only if known
    cache_write_tokens = prompt_tokens_details.cache_write_tokens (OpenRouter); only if known
    reasoning_tokens   = completion_tokens_details.reasoning_tokens; only if known
    total_tokens       = prompt + completion, only when both are present safe non-negative integers (a whole-number
                         float such as 10.0 counts, as in JavaScript), their sum is safe, and the wire total is
                         absent or equal to it (the exact-total rule). Otherwise the key is omitted.
"""

from __future__ import annotations

from ._chunks import Usage
from ._numbers import MAX_SAFE_INTEGER
from ._wire import WireUsage

__all__ = ["map_usage"]


def _count(value: int | float | None) -> int | float | None:
    """A whole-number float (``10.0``) is the integer it spells, as in JavaScript."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    return value


def _safe_count(value: int | float | None) -> bool:
    return isinstance(value, int) and 0 <= value <= MAX_SAFE_INTEGER


def map_usage(wire: WireUsage) -> Usage:
    wire_prompt = _count(wire.prompt_tokens)
    wire_completion = _count(wire.completion_tokens)
    prompt = wire_prompt if wire_prompt is not None else 0
    completion = wire_completion if wire_completion is not None else 0
    details = wire.prompt_tokens_details
    cache_read = _count(details.cached_tokens) if details is not None else None
    if cache_read is None:
        cache_read = _count(wire.prompt_cache_hit_tokens)
    cache_write = _count(details.cache_write_tokens) if details is not None else None
    completion_details = wire.completion_tokens_details
    reasoning = _count(completion_details.reasoning_tokens) if completion_details is not None else None

    total: int | None = None
    if _safe_count(wire_prompt) and _safe_count(wire_completion):  # an absent count is not a known count
        exact = int(prompt) + int(completion)
        if exact <= MAX_SAFE_INTEGER and (wire.total_tokens is None or wire.total_tokens == exact):
            total = exact

    return Usage(
        input_tokens=prompt - (cache_read or 0) - (cache_write or 0),
        output_tokens=completion,
        total_tokens=total,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
    )
