"""The policy key: one string that identifies a retry policy, formatted the way JavaScript formats it.

``["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]`` or ``["always",500,10000,0.1]``: compact JSON, numbers as
``Number.prototype.toString`` writes them (10000, not 10000.0), codes sorted by UTF-16 code units. Two policies with
the same settings have the same key; a changed setting changes it, so retry counts kept per key start again from 1
(docs/decisions/0006-retry-when-retryable.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from decimal import Decimal

__all__ = ["js_number", "policy_key"]


def policy_key(
    mode: str,
    max_retries: int | None,
    retryable_codes: Iterable[str] | None,
    delays: tuple[float, float, float],
) -> str:
    """The key of a policy; ``delays`` is (initial_delay_ms, max_delay_ms, jitter_ratio)."""
    parts = [json.dumps(mode)]
    if mode == "normal":
        codes = sorted(retryable_codes or (), key=_js_sort_key)
        parts.append(js_number(max_retries or 0))
        parts.append("[" + ",".join(json.dumps(code, ensure_ascii=False) for code in codes) + "]")
    parts += [js_number(value) for value in delays]
    return "[" + ",".join(parts) + "]"


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
