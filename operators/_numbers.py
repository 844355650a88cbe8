"""JSON numbers as the wire means them: the one home of ``MAX_SAFE_INTEGER``, of "is this a number", and of writing
one as JavaScript does (``js_number``: the retry configuration's messages quote a setting the way the anchor's
configuration file would hold it)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Final, TypeGuard

__all__ = ["MAX_SAFE_INTEGER", "is_json_number", "js_number", "whole_ms"]

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


def js_number(value: float) -> str:
    """``Number.prototype.toString``: 10000 (not 10000.0), 0.1, 1e-7, 1.5e+21."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**21:
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return "null"  # what JSON.stringify writes; a valid policy never holds one
    if number == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)
    k = len(digits)
    n = exponent + k  # the decimal point sits after n digits
    prefix = "-" if number < 0 else ""
    if k <= n <= 21:
        return prefix + digits + "0" * (n - k)
    if 0 < n <= 21:
        return prefix + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return prefix + "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{prefix}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _js_sort_key(code: str) -> bytes:
    """JavaScript's default sort compares UTF-16 code units."""
    return code.encode("utf-16-be", "surrogatepass")
