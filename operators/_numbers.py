"""JSON numbers as the wire means them: the one home of ``MAX_SAFE_INTEGER`` and of "is this a number"."""

from __future__ import annotations

import math
from typing import Final, TypeGuard

__all__ = ["MAX_SAFE_INTEGER", "is_json_number"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a JSON number holds exactly (``Number.MAX_SAFE_INTEGER`` in JavaScript)."""


def is_json_number(value: object, *, finite: bool = False) -> TypeGuard[int | float]:
    """An ``int`` or a ``float`` that is not a ``bool`` (``True`` is an ``int`` to Python, not a number to JSON);
    with ``finite=True`` also not NaN or an infinity."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return not finite or math.isfinite(value)
