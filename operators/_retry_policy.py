"""The retry policy: which failures are retried, how often, and how long to wait before each retry.

The rules are those of docs/decisions/0006-retry-when-retryable.md. Two modes:

    normal   retries a failure whose code is in ``retryable_codes``, at most ``max_retries`` times
    always   retries every failure code, without limit (only ``ABORTED`` is never retried)

The delay before retry ``n`` (1-based):

    provider Retry-After, finite and > 0 ──┬── <= max_delay_ms ──────► used verbatim, no jitter
                                           └── >  max_delay_ms ──┬─ normal: None (give up, pass it on)
                                                                 └─ always: local backoff
    otherwise ───────────────────────────────────────────────────────► local backoff

    local backoff:  exp    = min(initial_delay_ms * 2**min(n - 1, 1024), max_delay_ms)
                    jitter = 1 - jitter_ratio + 2 * jitter_ratio * random()
                    delay  = min(exp * jitter, max_delay_ms)            (may be fractional, may be 0)

    retry:       1      2      3      4   ...
    delay ms:  500   1000   2000   4000   ...  10000  10000      (defaults, jitter 0)

A policy is a frozen value: every rule of its settings is an attrs validator, so a ``RetryPolicy`` that exists is
valid. ``from_config`` reads the user's mapping (snake_case keys, or the camelCase spellings; ``_retry_config``) and
names a bad key the way the caller spelled it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ._chunk_values import Failure
from ._codes import DEFAULT_RETRYABLE_CODES, Code
from ._numbers import is_json_number
from ._retry_config import (
    MAX_TIMER_DELAY_MS,
    RetryMode,
    RetryPolicyError,
    RetrySettings,
    check_codes,
    check_delay,
    check_delay_order,
    check_jitter_ratio,
    check_max_retries,
    check_mode,
    read_config,
)

__all__ = [
    "MAX_TIMER_DELAY_MS",
    "RetryMode",
    "RetryPolicy",
    "RetryPolicyError",
]


# -- attrs plumbing ---------------------------------------------------------------------------------------


def _codes_tuple(value: Iterable[str] | None) -> tuple[str, ...] | None:
    """Detaches the policy from the caller's list."""
    if value is None:
        return None
    if isinstance(value, str):
        raise RetryPolicyError(
            f"retryable_codes must be a list of failure codes, not the single string {value!r}"
        )
    return tuple(value)


def _default_max_retries(self: RetryPolicy) -> int | None:
    return 2 if self.mode == "normal" else None


def _default_codes(self: RetryPolicy) -> tuple[str, ...] | None:
    return DEFAULT_RETRYABLE_CODES if self.mode == "normal" else None


def _validate_mode(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    check_mode(value)


def _validate_max_retries(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.mode == "always":
        if value is not None:
            raise RetryPolicyError(
                f"max_retries must be None in always mode (it retries without limit), got {value!r}"
            )
        return
    check_max_retries(value, attribute.name)


def _validate_codes(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.mode == "always":
        if value is not None:
            raise RetryPolicyError(
                f"retryable_codes must be None in always mode (it retries every code), got {value!r}"
            )
        return
    check_codes(value, attribute.name)


def _validate_delay(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    check_delay(value, attribute.name)


def _validate_max_delay(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: float) -> None:
    check_delay(value, attribute.name)
    check_delay_order(instance.initial_delay_ms, value, "initial_delay_ms", "max_delay_ms")


def _validate_jitter_ratio(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    check_jitter_ratio(value, attribute.name)


# -- the policy -------------------------------------------------------------------------------------------


@attrs.frozen
class RetryPolicy:
    """Which failures are retried, how many times, and the delay before each retry.

    ``RetryPolicy()`` is the default normal policy: 2 retries of the codes in ``DEFAULT_RETRYABLE_CODES``,
    backoff 500 ms doubling up to 10 000 ms with ±10% jitter. ``RetryPolicy(mode="always")`` leaves
    ``max_retries`` and ``retryable_codes`` at None: that mode retries every code without limit. Prefer
    ``normal()``, ``always()`` or ``from_config()``; every constructor validates.
    """

    mode: RetryMode = attrs.field(default="normal", validator=_validate_mode)
    max_retries: int | None = attrs.field(
        default=attrs.Factory(_default_max_retries, takes_self=True), validator=_validate_max_retries
    )
    retryable_codes: tuple[str, ...] | None = attrs.field(
        default=attrs.Factory(_default_codes, takes_self=True),
        converter=_codes_tuple,
        validator=_validate_codes,
    )
    initial_delay_ms: float = attrs.field(default=500, validator=_validate_delay)
    max_delay_ms: float = attrs.field(default=10_000, validator=_validate_max_delay)
    jitter_ratio: float = attrs.field(default=0.1, validator=_validate_jitter_ratio)

    # -- construction -------------------------------------------------------------------------------------

    @classmethod
    def normal(
        cls,
        max_retries: int = 2,
        retryable_codes: Iterable[str] | None = None,
        *,
        initial_delay_ms: float = 500,
        max_delay_ms: float = 10_000,
        jitter_ratio: float = 0.1,
    ) -> RetryPolicy:
        """Retries the failures whose code is in ``retryable_codes`` (default ``DEFAULT_RETRYABLE_CODES``)."""
        return cls(
            mode="normal",
            max_retries=max_retries,
            retryable_codes=DEFAULT_RETRYABLE_CODES if retryable_codes is None else retryable_codes,
            initial_delay_ms=initial_delay_ms,
            max_delay_ms=max_delay_ms,
            jitter_ratio=jitter_ratio,
        )

    @classmethod
    def always(
        cls, *, initial_delay_ms: float = 500, max_delay_ms: float = 10_000, jitter_ratio: float = 0.1
    ) -> RetryPolicy:
        """Retries every failure (except a cancellation) without limit."""
        return cls(
            mode="always",
            max_retries=None,
            retryable_codes=None,
            initial_delay_ms=initial_delay_ms,
            max_delay_ms=max_delay_ms,
            jitter_ratio=jitter_ratio,
        )

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, path: str = "retry_policy") -> RetryPolicy:
        """Reads a policy from user configuration; None gives the default normal policy.

        Keys: ``mode`` ("normal" or "always", default "normal"), ``max_retries``, ``retryable_codes``
        (normal mode only) and ``backoff`` {``initial_delay_ms``, ``max_delay_ms``, ``jitter_ratio``}. The
        camelCase spellings (``maxRetries``, ``retryableCodes``, ``initialDelayMs``, ``maxDelayMs``,
        ``jitterRatio``) are accepted too (docs/decisions/0006-retry-when-retryable.md). Every error is a
        ``RetryPolicyError`` whose message starts with ``"<path>: "``, and names a setting the way the config
        spelled it.
        """
        if config is None:
            return cls()
        try:
            return cls._from_settings(read_config(config))
        except RetryPolicyError as exc:
            raise RetryPolicyError(f"{path}: {exc}") from None

    @classmethod
    def _from_settings(cls, settings: RetrySettings) -> RetryPolicy:
        backoff = {
            "initial_delay_ms": settings.initial_delay_ms,
            "max_delay_ms": settings.max_delay_ms,
            "jitter_ratio": settings.jitter_ratio,
        }
        if settings.mode == "always":
            return cls.always(**backoff)
        assert settings.max_retries is not None
        return cls.normal(settings.max_retries, settings.retryable_codes, **backoff)

    def to_config(self) -> dict[str, Any]:
        """The snake_case configuration ``from_config`` reads back to this policy."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "normal":
            out["max_retries"] = self.max_retries
            out["retryable_codes"] = list(self.retryable_codes or ())
        out["backoff"] = {
            "initial_delay_ms": self.initial_delay_ms,
            "max_delay_ms": self.max_delay_ms,
            "jitter_ratio": self.jitter_ratio,
        }
        return out

    # -- the decisions ------------------------------------------------------------------------------------

    def is_retryable(self, failure: Failure) -> bool:
        """Whether the failure is retried at all. A cancellation (``ABORTED``) never is; in normal mode the
        provider's own say (``x-should-retry``, ``failure.should_retry``) wins over the code, as in the openai SDK."""
        if failure.code == Code.ABORTED:
            return False
        if self.mode == "always":
            return True
        if failure.should_retry is not None:
            return failure.should_retry
        return failure.code in (self.retryable_codes or ())

    def allows(self, retry: int) -> bool:
        """Whether retry number ``retry`` (1 for the first retry) is within the budget."""
        return self.mode == "always" or retry <= (self.max_retries or 0)

    def backoff_ms(self, retry: int, random: Callable[[], float]) -> float:
        """The local backoff before retry ``retry`` (1-based), in [0, max_delay_ms].

        ``random()`` returns a number in [0, 1]; inject a fixed one to make the delay predictable.
        """
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 1:
            raise ValueError(f"retry counts from 1 (the first retry), got {retry!r}")
        sample = random()
        if not is_json_number(sample) or not 0 <= sample <= 1:
            raise ValueError(f"random() must return a number in [0, 1], got {sample!r}")
        doublings = min(retry - 1, 1024)
        # 2**1024 overflows a float; JavaScript's Math.pow gives Infinity there, and the cap takes over.
        factor = math.inf if doublings >= 1024 else float(2**doublings)
        exp = min(self.initial_delay_ms * factor, self.max_delay_ms)
        jitter = 1 - self.jitter_ratio + 2 * self.jitter_ratio * sample
        return min(exp * jitter, self.max_delay_ms)

    def delay_ms(self, retry: int, failure: Failure, random: Callable[[], float]) -> float | None:
        """The delay before retry ``retry``, or None when the provider asks for a wait longer than the cap.

        A provider Retry-After (finite, > 0) within ``max_delay_ms`` is used verbatim. One above the cap is
        refused in normal mode (None: do not retry, pass the failure on) and replaced by the local backoff in
        always mode.
        """
        after = failure.retry_after_ms
        if after is not None and is_json_number(after) and math.isfinite(after) and after > 0:
            if after <= self.max_delay_ms:
                return after
            if self.mode == "normal":
                return None
        return self.backoff_ms(retry, random)
