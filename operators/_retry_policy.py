"""The retry policy: which failures are retried, how often, and how long to wait before each retry.

Two modes (dsh-behaviour.md §5.2):

    normal   retries a failure whose code is in ``retryable_codes``, at most ``max_retries`` times
    always   retries every failure code, without limit (only ``ABORTED`` is never retried)

The delay before retry ``n`` (1-based, §5.3 steps 9-10):

    provider Retry-After, finite and > 0 ──┬── <= max_delay_ms ──────► used verbatim, no jitter
                                           └── >  max_delay_ms ──┬─ normal: None (give up, pass it on)
                                                                 └─ always: local backoff
    otherwise ───────────────────────────────────────────────────────► local backoff

    local backoff:  exp    = min(initial_delay_ms * 2**min(n - 1, 1024), max_delay_ms)
                    jitter = 1 - jitter_ratio + 2 * jitter_ratio * random()
                    delay  = min(exp * jitter, max_delay_ms)            (may be fractional, may be 0)

    retry:       1      2      3      4   ...
    delay ms:  500   1000   2000   4000   ...  10000  10000      (defaults, jitter 0)

A policy is a frozen value: every rule of §5.2 is an attrs validator, so a ``RetryPolicy`` that exists is
valid. ``from_config`` reads the user's mapping (snake_case keys, or the anchor's camelCase spellings) and
names a bad key the way the caller spelled it. ``key`` is the policy key of §5.5: retry counts restart when
it changes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, Literal, TypeAlias

import attrs

from ._chunks import Failure
from ._codes import DEFAULT_RETRYABLE_CODES, Code
from ._exceptions import LlmStreamError
from ._numbers import MAX_SAFE_INTEGER, is_json_number

__all__ = [
    "MAX_TIMER_DELAY_MS",
    "RetryMode",
    "RetryPolicy",
    "RetryPolicyError",
]

RetryMode: TypeAlias = Literal["normal", "always"]

MAX_TIMER_DELAY_MS: Final = 2_147_483_647
"""The largest delay a timer accepts: 2**31 - 1 ms (about 24.8 days), the JavaScript timer limit."""

_MODES: Final = ("normal", "always")


class RetryPolicyError(LlmStreamError, ValueError):
    """A retry policy (or its configuration) breaks a rule; the message names the setting and the rule."""


# -- the rules, shared by the attrs validators and by from_config -----------------------------------------
# Each check takes the setting's name as the caller spelled it, so a config error names "maxRetries" when the
# config said "maxRetries", and "max_retries" otherwise.


def _check_mode(value: object) -> None:
    if value not in _MODES:
        raise RetryPolicyError(f'mode must be "normal" or "always", got {value!r}')


def _check_max_retries(value: object, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SAFE_INTEGER:
        raise RetryPolicyError(
            f"{name} must be a non-negative integer no greater than {MAX_SAFE_INTEGER} (2**53 - 1), "
            f"got {value!r}: it counts the retries after the first request, so 0 means never retry"
        )


def _check_delay(value: object, name: str) -> None:
    if not (is_json_number(value) and math.isfinite(value) and 0 < value <= MAX_TIMER_DELAY_MS):
        raise RetryPolicyError(
            f"{name} must be a positive, finite number of milliseconds no greater than {MAX_TIMER_DELAY_MS} "
            f"(the timer limit), got {value!r}"
        )


def _check_delay_order(initial: float, maximum: float, initial_name: str, max_name: str) -> None:
    if initial > maximum:
        raise RetryPolicyError(
            f"{initial_name} ({_js_number(initial)}) must be less than or equal to {max_name} "
            f"({_js_number(maximum)}): the first delay cannot exceed the cap on every delay"
        )


def _check_jitter_ratio(value: object, name: str) -> None:
    if not (is_json_number(value) and 0 <= value <= 1):
        raise RetryPolicyError(
            f"{name} must be a number between 0 and 1 (0 means no jitter, 0.1 means ±10%), got {value!r}"
        )


def _check_codes(value: object, name: str) -> None:
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
    _check_mode(value)


def _validate_max_retries(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.mode == "always":
        if value is not None:
            raise RetryPolicyError(
                f"max_retries must be None in always mode (it retries without limit), got {value!r}"
            )
        return
    _check_max_retries(value, attribute.name)


def _validate_codes(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.mode == "always":
        if value is not None:
            raise RetryPolicyError(
                f"retryable_codes must be None in always mode (it retries every code), got {value!r}"
            )
        return
    _check_codes(value, attribute.name)


def _validate_delay(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    _check_delay(value, attribute.name)


def _validate_max_delay(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: float) -> None:
    _check_delay(value, attribute.name)
    _check_delay_order(instance.initial_delay_ms, value, "initial_delay_ms", "max_delay_ms")


def _validate_jitter_ratio(instance: RetryPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
    _check_jitter_ratio(value, attribute.name)


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
        anchor's camelCase spellings (``maxRetries``, ``retryableCodes``, ``initialDelayMs``, ``maxDelayMs``,
        ``jitterRatio``) are accepted too. Every error is a ``RetryPolicyError`` whose message starts with
        ``"<path>: "``, and names a setting the way the config spelled it.
        """
        if config is None:
            return cls()
        try:
            return cls._from_mapping(config)
        except RetryPolicyError as exc:
            raise RetryPolicyError(f"{path}: {exc}") from None

    @classmethod
    def _from_mapping(cls, config: object) -> RetryPolicy:
        if not isinstance(config, Mapping):
            raise RetryPolicyError(f"the retry policy must be a mapping, got {type(config).__name__}")
        mode = config.get("mode", "normal")
        _check_mode(mode)
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
        _check_delay(initial, initial_name)
        _check_delay(maximum, max_name)
        _check_delay_order(initial, maximum, initial_name, max_name)
        _check_jitter_ratio(jitter, jitter_name)
        if mode == "always":
            return cls.always(initial_delay_ms=initial, max_delay_ms=maximum, jitter_ratio=jitter)

        retries_name, max_retries = top.get("max_retries", ("max_retries", 2))
        codes_name, codes = top.get("retryable_codes", ("retryable_codes", DEFAULT_RETRYABLE_CODES))
        _check_max_retries(max_retries, retries_name)
        _check_codes(codes, codes_name)
        return cls.normal(
            max_retries, codes, initial_delay_ms=initial, max_delay_ms=maximum, jitter_ratio=jitter
        )

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

    @property
    def key(self) -> str:
        """The policy key (§5.5): compact JSON, JavaScript number formatting, codes sorted.

        ``["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]`` or ``["always",500,10000,0.1]``. Retry counts are
        kept per key, so a changed policy starts counting again from 1.
        """
        parts = [json.dumps(self.mode)]
        if self.mode == "normal":
            codes = sorted(self.retryable_codes or (), key=_js_sort_key)
            parts.append(_js_number(self.max_retries or 0))
            parts.append("[" + ",".join(json.dumps(code, ensure_ascii=False) for code in codes) + "]")
        parts += [
            _js_number(self.initial_delay_ms),
            _js_number(self.max_delay_ms),
            _js_number(self.jitter_ratio),
        ]
        return "[" + ",".join(parts) + "]"

    def is_retryable(self, failure: Failure) -> bool:
        """Whether the failure's code is retried at all. A cancellation (``ABORTED``) never is."""
        if failure.code == Code.ABORTED:
            return False
        if self.mode == "always":
            return True
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


# -- configuration keys -----------------------------------------------------------------------------------

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


# -- JavaScript number formatting, for the policy key -----------------------------------------------------


def _js_number(value: float) -> str:
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
