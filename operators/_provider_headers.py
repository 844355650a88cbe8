"""What a provider's response headers say about a failure: how long to wait and whether to retry, and its request id.

``retry-after-ms`` (milliseconds, read first as the openai SDK does), ``Retry-After`` (seconds or an HTTP date),
``x-should-retry`` (exactly ``true`` / ``false``) and the request id (``request-id``, ``x-request-id``,
``x-deepseek-request-id``); docs/decisions/0054-provider-retry-headers.md. Header names are matched
case-insensitively, for ``httpx.Headers`` and plain dicts alike. Pure functions, no I/O: ``classify_http_error``
(``_provider_errors.py``) reads them into the ``Failure`` it builds.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from datetime import UTC

from ._numbers import whole_ms

__all__ = [
    "header",
    "parse_retry_after",
    "parse_retry_after_ms",
    "parse_should_retry",
    "request_id_from",
    "retry_after_from",
]

_REQUEST_ID_HEADERS = ("request-id", "x-request-id", "x-deepseek-request-id")
_DIGITS = re.compile(r"[0-9]+")
_DECIMAL_SECONDS = re.compile(r"[0-9]+\.[0-9]*|\.[0-9]+")


def _positive_finite(value: float) -> int | None:
    return whole_ms(value) if math.isfinite(value) and value > 0 else None


def parse_retry_after_ms(value: str | None) -> int | None:
    """A ``retry-after-ms`` header value (milliseconds, as the openai SDK reads it first) as whole milliseconds to
    wait, rounded up: ``"250"`` -> ``250``, ``"1.5"`` -> ``2``; None when it gives no positive finite delay."""
    text = (value or "").strip()
    if _DIGITS.fullmatch(text) or _DECIMAL_SECONDS.fullmatch(text):
        return _positive_finite(float(text))
    return None


def parse_should_retry(value: str | None) -> bool | None:
    """The ``x-should-retry`` header as the openai SDK reads it: exactly ``"true"`` or ``"false"``, else None."""
    return {"true": True, "false": False}.get((value or "").strip())


def parse_retry_after(value: str | None, *, now: float | None = None) -> int | None:
    """A ``Retry-After`` header value as whole milliseconds to wait (rounded up), or None when it gives no usable
    delay.

    - all digits: seconds, ``"2"`` -> ``2000`` (``"0"`` -> None: no delay);
    - decimal seconds: ``"1.5"`` -> ``1500``;
    - otherwise an HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``) minus ``now`` (seconds since the epoch,
      ``time.time()`` when None), kept only if finite and in the future;
    - anything else (``"soon"``, ``"-5"``, ``""``): None.
    """
    if value is None:
        return None
    text = value.strip()
    if _DIGITS.fullmatch(text) or _DECIMAL_SECONDS.fullmatch(text):
        return _positive_finite(float(text) * 1000)  # an absurdly long digit string gives inf: None
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:  # "-0000" means UTC with no claim about local time
            when = when.replace(tzinfo=UTC)
        moment = when.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    current = time.time() if now is None else now
    return _positive_finite((moment - current) * 1000)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The first non-empty value of header ``name`` (case-insensitive, also for a plain dict), stripped."""
    direct = headers.get(name)  # httpx.Headers answers case-insensitively; a dict only for exact keys
    if isinstance(direct, str) and direct.strip():
        return direct.strip()
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name and isinstance(value, str) and value.strip():
            return value.strip()
    return None


def request_id_from(headers: Mapping[str, str]) -> str | None:
    """The provider's request id: the first non-empty of ``request-id``, ``x-request-id`` and
    ``x-deepseek-request-id``, stripped.

    Header names are matched case-insensitively, for ``httpx.Headers`` and plain dicts alike.
    """
    for name in _REQUEST_ID_HEADERS:
        found = header(headers, name)
        if found is not None:
            return found
    return None


def retry_after_from(headers: Mapping[str, str]) -> int | None:
    """The provider's wait in whole milliseconds: ``retry-after-ms`` first, then ``Retry-After`` (the openai SDK's
    order)."""
    after_ms = parse_retry_after_ms(header(headers, "retry-after-ms"))
    return after_ms if after_ms is not None else parse_retry_after(header(headers, "retry-after"))
