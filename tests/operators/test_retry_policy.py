"""RetryPolicy: the shapes and validation of dsh-behaviour.md §5.2 (RP-1..RP-4), the delays of §5.3 steps 9-10
(R-1, R-4, R-5, R-6, R-7, R-14)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from operators import DEFAULT_RETRYABLE_CODES, Code, Failure
from operators._retry_policy import MAX_TIMER_DELAY_MS, RetryPolicy, RetryPolicyError

PATH = "provider.retryPolicy"


def failure(code: str = Code.SERVER, retry_after_ms: float | None = None) -> Failure:
    return Failure(code, "busy", retry_after_ms=retry_after_ms)


def fixed(value: float) -> Callable[[], float]:
    return lambda: value


def samples(*values: float) -> Callable[[], float]:
    it: Iterator[float] = iter(values)
    return lambda: next(it)


def never() -> float:
    raise AssertionError("random() was called, but the delay should not be jittered")


# -- RP-1..RP-3: resolution ----------------------------------------------------------------------------------


def test_no_config_resolves_to_the_defaults() -> None:  # RP-1
    policy = RetryPolicy.from_config(None, PATH)

    assert policy == RetryPolicy()
    assert policy.mode == "normal"
    assert policy.max_retries == 2
    assert policy.retryable_codes == DEFAULT_RETRYABLE_CODES
    assert policy.retryable_codes is not None
    assert policy.retryable_codes[0] == Code.EMPTY_RESPONSE
    assert (policy.initial_delay_ms, policy.max_delay_ms, policy.jitter_ratio) == (500, 10_000, 0.1)


def test_resolved_policy_is_frozen_and_its_codes_are_a_tuple() -> None:  # RP-1
    policy = RetryPolicy.from_config(None, PATH)

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        policy.max_retries = 5  # type: ignore[misc]
    assert isinstance(policy.retryable_codes, tuple)


@pytest.mark.parametrize(
    "config",
    [
        {
            "mode": "normal",
            "maxRetries": 4,
            "retryableCodes": ["BUSY"],
            "backoff": {"initialDelayMs": 25, "maxDelayMs": 100, "jitterRatio": 0},
        },
        {
            "mode": "normal",
            "max_retries": 4,
            "retryable_codes": ["BUSY"],
            "backoff": {"initial_delay_ms": 25, "max_delay_ms": 100, "jitter_ratio": 0},
        },
    ],
    ids=["camelCase", "snake_case"],
)
def test_explicit_normal_policy_resolves_and_is_detached_from_the_callers_list(
    config: dict[str, Any],
) -> None:  # RP-2
    policy = RetryPolicy.from_config(config, PATH)
    (config.get("retryableCodes") or config["retryable_codes"]).append("LATE")

    assert policy == RetryPolicy("normal", 4, ("BUSY",), 25, 100, 0)


def test_normal_constructor_is_detached_from_the_callers_list() -> None:  # RP-2
    codes = ["BUSY"]
    policy = RetryPolicy.normal(4, codes)
    codes.append("LATE")

    assert policy.retryable_codes == ("BUSY",)


def test_always_mode_resolves_without_a_budget_or_codes() -> None:  # RP-3
    policy = RetryPolicy.from_config({"mode": "always"}, PATH)

    assert policy == RetryPolicy.always() == RetryPolicy(mode="always")
    assert policy.max_retries is None
    assert policy.retryable_codes is None
    assert (policy.initial_delay_ms, policy.max_delay_ms, policy.jitter_ratio) == (500, 10_000, 0.1)
    assert policy.to_config() == {
        "mode": "always",
        "backoff": {"initial_delay_ms": 500, "max_delay_ms": 10_000, "jitter_ratio": 0.1},
    }


def test_missing_mode_means_normal() -> None:
    assert RetryPolicy.from_config({"max_retries": 3}) == RetryPolicy.normal(3)


# -- RP-4: rejections ----------------------------------------------------------------------------------------

MAX = MAX_TIMER_DELAY_MS

# (anchor's camelCase config, its message fragment, the snake_case config, its message fragment)
REJECTIONS: list[tuple[str, dict[str, Any], str, dict[str, Any], str]] = [
    ("1", {"mode": "normal", "maxRetries": -1}, "maxRetries", {"max_retries": -1}, "max_retries"),
    ("2", {"mode": "normal", "maxRetries": 1.5}, "maxRetries", {"max_retries": 1.5}, "max_retries"),
    ("3", {"mode": "normal", "maxRetries": 2**53}, "maxRetries", {"max_retries": 2**53}, "max_retries"),
    (
        "4",
        {"mode": "always", "backoff": {"initialDelayMs": 0}},
        "initialDelayMs",
        {"mode": "always", "backoff": {"initial_delay_ms": 0}},
        "initial_delay_ms",
    ),
    (
        "5",
        {"mode": "normal", "backoff": {"maxDelayMs": math.inf}},
        "maxDelayMs",
        {"backoff": {"max_delay_ms": math.inf}},
        "max_delay_ms",
    ),
    (
        "6",
        {"mode": "normal", "backoff": {"initialDelayMs": MAX + 1}},
        "initialDelayMs",
        {"backoff": {"initial_delay_ms": MAX + 1}},
        "initial_delay_ms",
    ),
    (
        "7",
        {"mode": "always", "backoff": {"maxDelayMs": MAX + 1}},
        "maxDelayMs",
        {"mode": "always", "backoff": {"max_delay_ms": MAX + 1}},
        "max_delay_ms",
    ),
    (
        "8",
        {"mode": "normal", "backoff": {"initialDelayMs": 20, "maxDelayMs": 10}},
        "less than or equal",
        {"backoff": {"initial_delay_ms": 20, "max_delay_ms": 10}},
        "initial_delay_ms \\(20\\) must be less than or equal to max_delay_ms \\(10\\)",
    ),
    (
        "9",
        {"mode": "always", "backoff": {"jitterRatio": 1.1}},
        "jitterRatio",
        {"mode": "always", "backoff": {"jitter_ratio": 1.1}},
        "jitter_ratio",
    ),
    (
        "10",
        {"mode": "normal", "retryableCodes": []},
        "retryableCodes must not be empty",
        {"retryable_codes": []},
        "retryable_codes must not be empty",
    ),
    (
        "11",
        {"mode": "normal", "retryableCodes": ["SERVER", "SERVER"]},
        "retryableCodes must not contain duplicates",
        {"retryable_codes": ["SERVER", "SERVER"]},
        "retryable_codes must not contain duplicates",
    ),
    (
        "12",
        {"mode": "normal", "retryableCodes": [""]},
        "retryableCodes must contain only non-empty strings",
        {"retryable_codes": [""]},
        "retryable_codes must contain only non-empty strings",
    ),
    (
        "13",
        {"mode": "normal", "maxRetires": 1},
        'unknown key "maxRetires"',
        {"max_retires": 1},
        'unknown key "max_retires"',
    ),
    (
        "14",
        {"mode": "always", "maxRetries": 1},
        'unknown key "maxRetries"',
        {"mode": "always", "max_retries": 1},
        'unknown key "max_retries"',
    ),
    (
        "15",
        {"mode": "always", "backoff": {"initialDelay": 1}},
        'unknown key "initialDelay"',
        {"mode": "always", "backoff": {"initial_delay": 1}},
        'unknown key "initial_delay"',
    ),
    (
        "16",
        {"mode": "sometimes"},
        'mode must be "normal" or "always"',
        {"mode": "sometimes"},
        'mode must be "normal" or "always"',
    ),
]


@pytest.mark.parametrize(
    ("config", "fragment"), [pytest.param(r[1], r[2], id=f"RP-4.{r[0]}") for r in REJECTIONS]
)
def test_invalid_anchor_config_is_rejected_naming_the_setting(config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RetryPolicyError, match=f"^{PATH}: .*{fragment}"):
        RetryPolicy.from_config(config, PATH)


@pytest.mark.parametrize(
    ("config", "fragment"), [pytest.param(r[3], r[4], id=f"RP-4.{r[0]}") for r in REJECTIONS]
)
def test_invalid_snake_case_config_is_rejected_naming_the_setting_as_spelled(
    config: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(RetryPolicyError, match=f"^retry_policy: .*{fragment}"):
        RetryPolicy.from_config(config)


def test_the_unknown_key_message_says_what_is_allowed() -> None:
    with pytest.raises(RetryPolicyError) as excinfo:
        RetryPolicy.from_config({"mode": "always", "maxRetries": 1}, PATH)

    message = str(excinfo.value)
    assert "without limit" in message
    assert "allowed keys: mode, backoff" in message


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        pytest.param({"max_retries": True}, "max_retries", id="bool-retries"),
        pytest.param({"max_retries": 2.0}, "max_retries", id="float-retries"),
        pytest.param({"backoff": {"jitter_ratio": math.nan}}, "jitter_ratio", id="nan-jitter"),
        pytest.param({"backoff": {"initial_delay_ms": "500"}}, "initial_delay_ms", id="string-delay"),
        pytest.param({"retryable_codes": "SERVER"}, "retryable_codes must be a list", id="string-codes"),
        pytest.param({"retryable_codes": None}, "retryable_codes must be a list", id="null-codes"),
        pytest.param({"retryable_codes": ["SERVER", 3]}, "non-empty strings", id="non-string-code"),
        pytest.param({"backoff": [500]}, "backoff must be a mapping", id="backoff-list"),
        pytest.param({"max_retries": 1, "maxRetries": 1}, "the same setting", id="both-spellings"),
        pytest.param(
            {"backoff": {"maxDelayMs": 5, "max_delay_ms": 5}}, "the same setting", id="both-backoff"
        ),
    ],
)
def test_other_invalid_configs_are_rejected(config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RetryPolicyError, match=f"^retry_policy: .*{fragment}"):
        RetryPolicy.from_config(config)


def test_a_config_that_is_not_a_mapping_is_rejected() -> None:
    with pytest.raises(RetryPolicyError, match=r"^retry_policy: .*must be a mapping"):
        RetryPolicy.from_config([("mode", "normal")])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        pytest.param(lambda: RetryPolicy(max_retries=-1), "max_retries", id="negative-retries"),
        pytest.param(lambda: RetryPolicy(retryable_codes=()), "must not be empty", id="empty-codes"),
        pytest.param(lambda: RetryPolicy(retryable_codes="SERVER"), "single string", id="string-codes"),
        pytest.param(lambda: RetryPolicy(initial_delay_ms=0), "initial_delay_ms", id="zero-delay"),
        pytest.param(
            lambda: RetryPolicy(initial_delay_ms=20, max_delay_ms=10), "less than or equal", id="order"
        ),
        pytest.param(lambda: RetryPolicy(jitter_ratio=-0.1), "jitter_ratio", id="negative-jitter"),
        pytest.param(lambda: RetryPolicy(mode="sometimes"), "mode must be", id="mode"),  # type: ignore[arg-type]
        pytest.param(lambda: RetryPolicy(mode="always", max_retries=1), "max_retries", id="always-budget"),
        pytest.param(
            lambda: RetryPolicy(mode="always", retryable_codes=[Code.SERVER]), "retryable_codes", id="always-codes"
        ),
        pytest.param(lambda: RetryPolicy(max_retries=None), "max_retries", id="normal-unbounded"),
        pytest.param(lambda: RetryPolicy.normal(2, [Code.SERVER, Code.SERVER]), "duplicates", id="normal-duplicates"),
        pytest.param(lambda: RetryPolicy.always(max_delay_ms=math.inf), "max_delay_ms", id="always-infinite"),
    ],
)
def test_direct_construction_is_validated_too(build: Callable[[], RetryPolicy], fragment: str) -> None:
    with pytest.raises(RetryPolicyError, match=fragment):
        build()


def test_the_largest_values_are_accepted() -> None:
    policy = RetryPolicy.from_config(
        {
            "max_retries": 2**53 - 1,
            "backoff": {"initial_delay_ms": MAX, "max_delay_ms": MAX, "jitter_ratio": 1},
        }
    )

    assert policy.max_retries == 2**53 - 1
    assert policy.initial_delay_ms == policy.max_delay_ms == MAX


# -- numbers in messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("initial", "maximum", "quoted"),
    [(20000.0, 10000, "(20000) must be less than or equal to max_delay_ms (10000)"),
     (1e-7, 1.5e-8, "(1e-7) must be less than or equal to max_delay_ms (1.5e-8)"),
     (0.5, 0.25, "(0.5) must be less than or equal to max_delay_ms (0.25)")],
)
def test_a_delay_order_error_quotes_the_numbers_as_the_configuration_file_holds_them(
    initial: float, maximum: float, quoted: str
) -> None:
    with pytest.raises(RetryPolicyError, match=re.escape(quoted)):
        RetryPolicy.from_config({"backoff": {"initial_delay_ms": initial, "max_delay_ms": maximum}})


# -- which failures are retried (§5.3 step 4, §5.4) ----------------------------------------------------------


@pytest.mark.parametrize("code", DEFAULT_RETRYABLE_CODES)
def test_default_codes_are_retryable(code: str) -> None:
    assert RetryPolicy().is_retryable(failure(code))


def test_a_code_outside_the_list_is_not_retried_in_normal_mode() -> None:
    assert not RetryPolicy().is_retryable(failure(Code.AUTH))
    assert not RetryPolicy.normal(2, [Code.RATE_LIMIT]).is_retryable(failure(Code.SERVER))


def test_always_mode_retries_every_code() -> None:
    assert RetryPolicy.always().is_retryable(failure(Code.AUTH))
    assert RetryPolicy.always().is_retryable(failure("MYSTERY_REASON"))


@pytest.mark.parametrize(
    "policy", [RetryPolicy.always(), RetryPolicy.normal(2, [Code.ABORTED, Code.SERVER])], ids=["always", "listed"]
)
def test_a_cancellation_is_never_retried(policy: RetryPolicy) -> None:
    assert not policy.is_retryable(failure(Code.ABORTED))


def test_normal_mode_allows_max_retries_then_stops() -> None:  # R-4: 3 requests, 2 retries
    policy = RetryPolicy()

    assert [policy.allows(retry) for retry in (1, 2, 3)] == [True, True, False]
    assert not RetryPolicy.normal(0).allows(1)


def test_always_mode_has_no_budget() -> None:  # R-14
    assert RetryPolicy.always().allows(10**9)


# -- the delay (§5.3 steps 9-10) -----------------------------------------------------------------------------


def test_first_retry_waits_the_initial_delay() -> None:  # R-1
    policy = RetryPolicy.normal(2, [Code.SERVER, Code.RATE_LIMIT], jitter_ratio=0)

    assert policy.delay_ms(1, Failure("busy", Code.RATE_LIMIT, status=429), fixed(0.5)) == 500


def test_jitter_is_symmetric_and_the_delay_doubles() -> None:  # R-4
    policy = RetryPolicy.normal(2, jitter_ratio=0.1)
    random = samples(0, 1)

    assert policy.delay_ms(1, failure(Code.SERVER), random) == 450
    assert policy.delay_ms(2, failure(Code.SERVER), random) == 1100


def test_the_lower_jitter_bound_gives_zero_delay() -> None:  # R-5
    policy = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=1, jitter_ratio=1)

    assert policy.delay_ms(1, failure(Code.SERVER), fixed(0)) == 0


def test_retry_after_within_the_cap_is_used_verbatim() -> None:  # R-6a
    policy = RetryPolicy.normal(jitter_ratio=1)

    assert policy.delay_ms(1, failure(Code.RATE_LIMIT, retry_after_ms=2000), never) == 2000
    assert policy.delay_ms(1, failure(Code.RATE_LIMIT, retry_after_ms=10_000), never) == 10_000


def test_retry_after_over_the_cap_gives_up_in_normal_mode() -> None:  # R-6b
    policy = RetryPolicy.normal(jitter_ratio=0)

    assert policy.delay_ms(1, failure(Code.RATE_LIMIT, retry_after_ms=10_001), never) is None


def test_retry_after_over_the_cap_falls_back_to_local_backoff_in_always_mode() -> None:  # R-7
    policy = RetryPolicy.always(initial_delay_ms=2, max_delay_ms=4, jitter_ratio=0.5)

    assert policy.delay_ms(1, failure(Code.AUTH, retry_after_ms=10), fixed(1)) == 3


def test_always_mode_delay_grows_then_is_capped() -> None:  # R-14
    policy = RetryPolicy.always(initial_delay_ms=1, max_delay_ms=4, jitter_ratio=0.1)

    assert [policy.delay_ms(retry, failure(Code.AUTH), fixed(1)) for retry in (1, 2, 3, 4)] == [1.1, 2.2, 4, 4]


@pytest.mark.parametrize("retry_after", [0, -5, math.inf, math.nan], ids=["zero", "negative", "inf", "nan"])
def test_a_retry_after_that_is_not_a_positive_finite_number_is_ignored(retry_after: float) -> None:
    policy = RetryPolicy.normal(jitter_ratio=0)

    assert policy.delay_ms(1, failure(Code.RATE_LIMIT, retry_after_ms=retry_after), fixed(0.5)) == 500


def test_a_very_late_retry_waits_the_cap_without_overflow() -> None:
    policy = RetryPolicy.always(initial_delay_ms=1e-300, max_delay_ms=10, jitter_ratio=0)

    assert policy.backoff_ms(1025, fixed(0)) == 10
    assert policy.backoff_ms(10**6, fixed(0)) == 10


def test_retries_count_from_one() -> None:
    with pytest.raises(ValueError, match="retry counts from 1"):
        RetryPolicy().backoff_ms(0, fixed(0.5))


def test_a_random_outside_the_unit_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"random\(\) must return a number in \[0, 1\]"):
        RetryPolicy().backoff_ms(1, fixed(1.5))


# -- properties ----------------------------------------------------------------------------------------------

delays = st.one_of(
    st.integers(min_value=1, max_value=MAX),
    st.floats(min_value=0, max_value=MAX, exclude_min=True, allow_nan=False, allow_infinity=False),
)
jitters = st.floats(min_value=0, max_value=1)
codes = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8, unique=True)


@st.composite
def policies(draw: st.DrawFn) -> RetryPolicy:
    initial, maximum = sorted((draw(delays), draw(delays)))
    jitter = draw(jitters)
    if draw(st.booleans()):
        return RetryPolicy.always(initial_delay_ms=initial, max_delay_ms=maximum, jitter_ratio=jitter)
    return RetryPolicy.normal(
        draw(st.integers(min_value=0, max_value=2**53 - 1)),
        draw(codes),
        initial_delay_ms=initial,
        max_delay_ms=maximum,
        jitter_ratio=jitter,
    )


@given(policies(), st.integers(min_value=1, max_value=3000), st.floats(min_value=0, max_value=1))
def test_backoff_is_always_between_zero_and_the_cap(policy: RetryPolicy, retry: int, random: float) -> None:
    assert 0 <= policy.backoff_ms(retry, fixed(random)) <= policy.max_delay_ms


@given(policies(), st.integers(min_value=1, max_value=3000))
def test_without_jitter_the_backoff_never_shrinks(policy: RetryPolicy, retry: int) -> None:
    policy = attrs.evolve(policy, jitter_ratio=0)

    assert policy.backoff_ms(retry, fixed(0.5)) <= policy.backoff_ms(retry + 1, fixed(0.5))


@given(policies())
def test_to_config_round_trips_through_from_config(policy: RetryPolicy) -> None:
    config = policy.to_config()

    assert RetryPolicy.from_config(config) == policy
    assert RetryPolicy.from_config(json.loads(json.dumps(config))) == policy


