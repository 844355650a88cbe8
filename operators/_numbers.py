"""JSON numbers as the wire means them: the one home of ``MAX_SAFE_INTEGER`` and of "is this a number"."""

from __future__ import annotations

import math
from typing import Final, TypeGuard

__all__ = ["MAX_SAFE_INTEGER", "is_json_number", "whole_ms"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a JSON number holds exactly (``Number.MAX_SAFE_INTEGER`` in JavaScript)."""


def is_json_number(value: object, *, finite: bool = False) -> TypeGuard[int | float]:
    """An ``int`` or a ``float`` that is not a ``bool`` (``True`` is an ``int`` to Python, not a number to JSON);
    with ``finite=True`` also not NaN or an infinity."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return not finite or math.isfinite(value)


def whole_ms(value: object) -> int | None:
    """A delay as whole milliseconds: an ``int`` as it is, a finite ``float`` rounded up (a wait is never cut
    short), at most ``MAX_SAFE_INTEGER``; ``None``, NaN and the infinities give ``None``. ``TypeError`` for anything
    that is not a JSON number (a ``bool`` included)."""
    if value is None:
        return None
    if not is_json_number(value):
        raise TypeError(f"a delay in milliseconds must be a number, got {value!r}")
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        return None
    return min(math.ceil(value), MAX_SAFE_INTEGER)
