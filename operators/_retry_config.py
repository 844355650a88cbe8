"""The rules of a retry policy's settings, and reading a policy's settings from a user's configuration.

Each check takes the setting's name as the caller spelled it, so a configuration error names "maxRetries" when the
configuration said "maxRetries", and "max_retries" otherwise. ``RetryPolicy``'s attrs validators and
``read_config`` share them, so a policy built either way is refused with the same message.

A configuration is a mapping with snake_case keys, or the camelCase spellings (``maxRetries``, ``retryableCodes``,
``initialDelayMs``, ``maxDelayMs``, ``jitterRatio``) that configuration files written for other implementations
of this protocol use (docs/decisions/0006-retry-when-retryable.md)::

    {"mode": "normal", "max_retries": 2, "retryable_codes": ["SERVER"],
     "backoff": {"initial_delay_ms": 500, "max_delay_ms": 10000, "jitter_ratio": 0.1}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs

from ._codes import DEFAULT_RETRYABLE_CODES
from ._exceptions import LlmStreamError
from ._numbers import MAX_SAFE_INTEGER, is_json_number, js_number

__all__ = [
    "MAX_TIMER_DELAY_MS",
    "RetryMode",
    "RetryPolicyError",
    "RetrySettings",
    "check_codes",
    "check_delay",
    "check_delay_order",
    "check_jitter_ratio",
    "check_max_retries",
    "check_mode",
    "read_config",
]

RetryMode: TypeAlias = Literal["normal", "always"]

MAX_TIMER_DELAY_MS: Final = 2_147_483_647
"""The largest delay a timer accepts: 2**31 - 1 ms (about 24.8 days), the JavaScript timer limit."""

_MODES: Final = ("normal", "always")


class RetryPolicyError(LlmStreamError, ValueError):
    """A retry policy (or its configuration) breaks a rule; the message names the setting and the rule."""


# -- the rules --------------------------------------------------------------------------------------------


def check_mode(value: object) -> None:
    if value not in _MODES:
        raise RetryPolicyError(f'mode must be "normal" or "always", got {value!r}')


def check_max_retries(value: object, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SAFE_INTEGER:
        raise RetryPolicyError(
            f"{name} must be a non-negative integer no greater than {MAX_SAFE_INTEGER} (2**53 - 1), "
            f"got {value!r}: it counts the retries after the first request, so 0 means never retry"
        )


def check_delay(value: object, name: str) -> None:
    if not (is_json_number(value) and math.isfinite(value) and 0 < value <= MAX_TIMER_DELAY_MS):
        raise RetryPolicyError(
            f"{name} must be a positive, finite number of milliseconds no greater than {MAX_TIMER_DELAY_MS} "
            f"(the timer limit), got {value!r}"
        )


def check_delay_order(initial: float, maximum: float, initial_name: str, max_name: str) -> None:
    if initial > maximum:
        raise RetryPolicyError(
            f"{initial_name} ({js_number(initial)}) must be less than or equal to {max_name} "
            f"({js_number(maximum)}): the first delay cannot exceed the cap on every delay"
        )


def check_jitter_ratio(value: object, name: str) -> None:
    if not (is_json_number(value) and 0 <= value <= 1):
        raise RetryPolicyError(
            f"{name} must be a number between 0 and 1 (0 means no jitter, 0.1 means ±10%), got {value!r}"
        )


def check_codes(value: object, name: str) -> None:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise RetryPolicyError(f'{name} must be a list of failure codes such as ["SERVER"], got {value!r}')
    if not value:
        raise RetryPolicyError(
            f"{name} must not be empty: list the codes to retry, or set max_retries to 0 to never retry"
        )
    if not all(isinstance(code, str) and code for code in value):
        raise RetryPolicyError(f"{name} must contain only non-empty strings, got {list(value)!r}")
    seen: set[str] = set()
    repeated: set[str] = set()
    for code in value:
        (repeated if code in seen else seen).add(code)
    if repeated:
        raise RetryPolicyError(f"{name} must not contain duplicates, got {sorted(repeated)!r} more than once")


# -- reading a configuration ------------------------------------------------------------------------------


@attrs.frozen
class RetrySettings:
    """The settings a configuration gave, every one checked; ``RetryPolicy.from_config`` builds the policy."""

    mode: RetryMode
    max_retries: int | None
    retryable_codes: Sequence[str] | None
    initial_delay_ms: float
    max_delay_ms: float
    jitter_ratio: float


def read_config(config: object) -> RetrySettings:
    """Reads and checks a configuration mapping; every error is a ``RetryPolicyError`` naming the key as spelled."""
    if not isinstance(config, Mapping):
        raise RetryPolicyError(f"the retry policy must be a mapping, got {type(config).__name__}")
    mode = config.get("mode", "normal")
    check_mode(mode)
    allowed = _NORMAL_KEYS if mode == "normal" else _ALWAYS_KEYS
    top = _read_keys(config, allowed, where="")
    backoff_config: object = top.get("backoff", ("backoff", {}))[1]
    if not isinstance(backoff_config, Mapping):
        raise RetryPolicyError(
            f"backoff must be a mapping of initial_delay_ms, max_delay_ms and jitter_ratio, "
            f"got {backoff_config!r}"
        )
    backoff = _read_keys(backoff_config, _BACKOFF_KEYS, where=" in backoff")

    initial_name, initial = backoff.get("initial_delay_ms", ("initial_delay_ms", 500))
    max_name, maximum = backoff.get("max_delay_ms", ("max_delay_ms", 10_000))
    jitter_name, jitter = backoff.get("jitter_ratio", ("jitter_ratio", 0.1))
    check_delay(initial, initial_name)
    check_delay(maximum, max_name)
    check_delay_order(initial, maximum, initial_name, max_name)
    check_jitter_ratio(jitter, jitter_name)
    if mode == "always":
        return RetrySettings("always", None, None, initial, maximum, jitter)

    retries_name, max_retries = top.get("max_retries", ("max_retries", 2))
    codes_name, codes = top.get("retryable_codes", ("retryable_codes", DEFAULT_RETRYABLE_CODES))
    check_max_retries(max_retries, retries_name)
    check_codes(codes, codes_name)
    return RetrySettings("normal", max_retries, codes, initial, maximum, jitter)


# canonical name -> accepted spellings
_NORMAL_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "mode": ("mode",),
    "max_retries": ("max_retries", "maxRetries"),
    "retryable_codes": ("retryable_codes", "retryableCodes"),
    "backoff": ("backoff",),
}
_NORMAL_SPELLINGS: Final = frozenset(spelling for names in _NORMAL_KEYS.values() for spelling in names)
_ALWAYS_KEYS: Final[Mapping[str, tuple[str, ...]]] = {"mode": ("mode",), "backoff": ("backoff",)}
_BACKOFF_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "initial_delay_ms": ("initial_delay_ms", "initialDelayMs"),
    "max_delay_ms": ("max_delay_ms", "maxDelayMs"),
    "jitter_ratio": ("jitter_ratio", "jitterRatio"),
}


def _read_keys(
    config: Mapping[Any, Any], allowed: Mapping[str, tuple[str, ...]], where: str
) -> dict[str, tuple[str, Any]]:
    """Maps each canonical name to (the spelling used, the value); rejects unknown and doubly spelled keys."""
    by_spelling = {spelling: canonical for canonical, spellings in allowed.items() for spelling in spellings}
    found: dict[str, tuple[str, Any]] = {}
    for spelling, value in config.items():
        canonical = by_spelling.get(spelling) if isinstance(spelling, str) else None
        if canonical is None:
            hint = ""
            if allowed is _ALWAYS_KEYS and spelling in _NORMAL_SPELLINGS:
                hint = ' (an "always" policy retries every code without limit, so it takes no such setting)'
            raise RetryPolicyError(
                f'unknown key "{spelling}"{where}{hint}; allowed keys: {", ".join(allowed)}'
            )
        if canonical in found:
            raise RetryPolicyError(
                f'"{found[canonical][0]}" and "{spelling}"{where} are the same setting; give only one'
            )
        found[canonical] = (spelling, value)
    return found
