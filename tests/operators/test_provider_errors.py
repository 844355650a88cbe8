"""Provider errors to failures (reference §4.3): HTTP rules, the in-band table, Retry-After, request ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from operators import Failure
from operators._provider_errors import (
    CONTEXT_OVERFLOW_WORDING,
    MAX_MESSAGE_CHARS,
    QUOTA_WORDING,
    classify_http_error,
    classify_inband_error,
)
from operators.extend import parse_retry_after, request_id_from

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
API_KEY = "sk-test-0123456789abcdef"


def error_body(message: str | None = None, *, type: str | None = None, code: object = None) -> str:
    """An OpenAI-shaped error body ``{"error": {...}}`` holding only the fields given."""
    error: dict[str, object] = {}
    if message is not None:
        error["message"] = message
    if type is not None:
        error["type"] = type
    if code is not None:
        error["code"] = code
    return json.dumps({"error": error})


def http_code(
    status: int, message: str | None = None, *, type: str | None = None, code: object = None
) -> str:
    return classify_http_error(status, error_body(message, type=type, code=code)).code


def http_date(seconds_from_now: float) -> str:
    return format_datetime(datetime.fromtimestamp(NOW + seconds_from_now, tz=UTC), usegmt=True)


# -- HTTP rules, in order ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_401_and_403_are_auth(status: int) -> None:
    assert http_code(status, "Authentication Fails, Your api key is invalid") == "AUTH"


def test_auth_wins_over_quota_wording() -> None:
    assert http_code(401, "You exceeded your current quota", code="insufficient_quota") == "AUTH"


def test_413_is_invalid_request_even_with_quota_wording() -> None:
    assert http_code(413, "Request Entity Too Large") == "INVALID_REQUEST"
    assert http_code(413, "quota exceeded") == "INVALID_REQUEST"


def test_quota_wording_on_429_is_quota_not_rate_limit() -> None:
    assert http_code(429, "You exceeded your current quota", type="insufficient_quota") == "QUOTA"


def test_plain_429_is_rate_limit() -> None:
    assert http_code(429, "Rate limit reached for requests") == "RATE_LIMIT"
    assert http_code(429) == "RATE_LIMIT"


def test_quota_wording_on_400_is_quota_not_invalid_request() -> None:
    assert http_code(400, "Insufficient Balance") == "QUOTA"


def test_quota_wording_in_code_or_type_alone_counts() -> None:
    assert http_code(429, "Please check your plan", code="insufficient_quota") == "QUOTA"
    assert http_code(429, "Please check your plan", type="insufficient_quota") == "QUOTA"


def test_quota_wording_on_402_is_quota_and_a_bare_402_is_its_own_code() -> None:
    assert http_code(402, "Insufficient Balance") == "QUOTA"
    assert http_code(402, "Payment Required") == "HTTP_402"


def test_400_with_context_overflow_wording_is_context_window_exceeded() -> None:
    message = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    assert http_code(400, message) == "CONTEXT_WINDOW_EXCEEDED"
    assert http_code(400, "Please shorten it", code="context_length_exceeded") == "CONTEXT_WINDOW_EXCEEDED"


def test_400_without_context_wording_is_invalid_request() -> None:
    assert http_code(400, "Invalid value for 'temperature'") == "INVALID_REQUEST"


def test_context_wording_counts_only_on_400() -> None:
    assert http_code(500, "maximum context length is 8192 tokens") == "SERVER"
    assert http_code(422, "maximum context length is 8192 tokens") == "HTTP_422"


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_5xx_is_server(status: int) -> None:
    assert http_code(status, "Service Unavailable") == "SERVER"


@pytest.mark.parametrize("status", [404, 409, 418, 422])
def test_any_other_status_is_http_status_code(status: int) -> None:
    assert http_code(status, "nope") == f"HTTP_{status}"


# -- HTTP bodies and messages --------------------------------------------------------------------------------


def test_message_is_the_providers_error_message() -> None:
    failure = classify_http_error(503, error_body("Server overloaded, please retry"))
    assert failure == Failure("SERVER", "Server overloaded, please retry", status=503)


@pytest.mark.parametrize("body", [error_body(), error_body(""), error_body("   "), "{}", "[]", ""])
def test_message_falls_back_to_the_status_when_the_provider_gives_none(body: str) -> None:
    assert classify_http_error(503, body).message == "API error (HTTP 503)"


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": "quota exceeded"}),
        json.dumps({"message": "quota exceeded"}),
        json.dumps({"detail": "quota exceeded"}),
    ],
)
def test_plain_string_error_top_level_message_and_detail_are_read(body: str) -> None:
    failure = classify_http_error(429, body)
    assert (failure.code, failure.message) == ("QUOTA", "quota exceeded")


def test_error_message_is_preferred_over_a_top_level_message() -> None:
    body = json.dumps({"error": {"message": "inner"}, "message": "outer"})
    assert classify_http_error(500, body).message == "inner"


def test_a_non_string_detail_is_ignored() -> None:
    body = json.dumps({"detail": [{"loc": ["body"], "msg": "field required"}]})
    assert classify_http_error(422, body) == Failure("HTTP_422", "API error (HTTP 422)", status=422)


def test_bytes_body_is_decoded() -> None:
    assert classify_http_error(429, error_body("Insufficient Balance").encode()).code == "QUOTA"
    assert classify_http_error(400, b"\xff\xfe not utf-8").code == "INVALID_REQUEST"


def test_malformed_json_lets_the_status_decide_and_never_becomes_the_message() -> None:
    failure = classify_http_error(502, "<html><body>Bad Gateway</body></html>")
    assert failure == Failure("SERVER", "API error (HTTP 502)", status=502)
    assert classify_http_error(400, "{not json").code == "INVALID_REQUEST"


def test_short_plain_text_body_is_searched_for_wording() -> None:
    assert classify_http_error(429, "You exceeded your current quota").code == "QUOTA"
    assert classify_http_error(400, "prompt is too long for this model").code == "CONTEXT_WINDOW_EXCEEDED"
    assert classify_http_error(429, "You exceeded your current quota").message == "API error (HTTP 429)"


def test_long_plain_text_body_is_not_searched_for_wording() -> None:
    page = "<html>" + "x" * 2000 + "quota exceeded</html>"
    assert classify_http_error(429, page).code == "RATE_LIMIT"


def test_api_key_is_redacted_from_the_message() -> None:
    body = error_body(f"Incorrect API key provided: {API_KEY}. Check it.")
    failure = classify_http_error(401, body, api_key=API_KEY)
    assert API_KEY not in failure.message
    assert failure.message == "Incorrect API key provided: [redacted]. Check it."


def test_api_key_straddling_the_cut_leaves_no_part_behind() -> None:
    message = "x" * (MAX_MESSAGE_CHARS - 5) + API_KEY
    failure = classify_http_error(401, error_body(message), api_key=API_KEY)
    assert API_KEY[:5] not in failure.message
    assert len(failure.message) < 500


def test_long_message_is_cut_under_500_characters_with_an_ellipsis() -> None:
    failure = classify_http_error(500, error_body("boom " * 200))
    assert len(failure.message) < 500
    assert failure.message.endswith("…")
    assert failure.message.startswith("boom boom")


def test_status_retry_after_and_request_id_are_carried() -> None:
    headers = {"Retry-After": "7", "X-Request-Id": "req-42"}
    failure = classify_http_error(429, error_body("slow down"), headers)
    expected = Failure("RATE_LIMIT", "slow down", status=429, retry_after_ms=7000.0, request_id="req-42")
    assert failure == expected


def test_httpx_headers_are_accepted() -> None:
    headers = httpx.Headers({"retry-after": "1.5", "x-deepseek-request-id": "ds-1"})
    failure = classify_http_error(503, "", headers)
    assert (failure.retry_after_ms, failure.request_id) == (1500.0, "ds-1")


def test_without_headers_there_is_no_retry_after_or_request_id() -> None:
    failure = classify_http_error(503, "")
    assert (failure.retry_after_ms, failure.request_id) == (None, None)


# -- wording -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "insufficient_quota",
        "Insufficient Balance",
        "insufficient credits on this account",
        "You exceeded your current quota, please check your plan and billing details.",
        "Request exceeds the quota",
        "quota exceeded",
        "Quota-Exhausted",
        "Usage limit reached for this month",
        "balance exhausted",
        "credits depleted",
        "You are out of credits",
        "out_of_budget",
    ],
)
def test_quota_wording_matches(text: str) -> None:
    assert QUOTA_WORDING.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "Rate limit reached for requests",
        "rate limit exceeded",
        "Too Many Requests",
        "quota",
        "Your quota resets at midnight",
        "insufficient permissions",
        "balance updated",
        "Token limit reached",
        "credit card declined",
    ],
)
def test_quota_wording_does_not_match_other_errors(text: str) -> None:
    assert not QUOTA_WORDING.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "context_length_exceeded",
        "Context window exceeded",
        "context length overflow",
        "context_window_limit_exceeded",
        "This model's maximum context length is 8192 tokens",
        "max allowed context window is 128k",
        "Request too large for the model's context window",
        "messages are too long for context",
        "prompt is too long for this model",
        "Input is too large for the model",
        "input exceeds the context window",
        "The prompt overflows the model's context length",
        "your input is larger than the context",
    ],
)
def test_context_overflow_wording_matches(text: str) -> None:
    assert CONTEXT_OVERFLOW_WORDING.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens is too large",
        "The input exceeds the maximum allowed file size",
        "context length must be a positive integer",
        "invalid context",
        "Token limit reached",
        "rate limit exceeded",
        "precontext_length_exceeded_flag",
        "prompt is too long",
    ],
)
def test_context_overflow_wording_does_not_match_other_errors(text: str) -> None:
    assert not CONTEXT_OVERFLOW_WORDING.search(text)


# -- Retry-After ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", 2000.0), (" 3 ", 3000.0), ("1.5", 1500.0), ("0.25", 250.0), ("120", 120000.0)],
)
def test_retry_after_seconds_become_milliseconds(value: str, expected: float) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_retry_after_http_date_in_the_future_is_the_wait_until_then() -> None:
    assert parse_retry_after(http_date(30), now=NOW) == 30000.0


def test_retry_after_http_date_without_a_zone_counts_as_utc() -> None:
    assert parse_retry_after(http_date(30).replace("GMT", "-0000"), now=NOW) == 30000.0


@pytest.mark.parametrize("value", [http_date(-30), http_date(0)])
def test_retry_after_http_date_not_in_the_future_is_no_delay(value: str) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_retry_after_http_date_uses_the_clock_when_now_is_not_given() -> None:
    delay = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT")
    assert delay is not None
    assert delay > 0


@pytest.mark.parametrize("value", [None, "", "0", "0.0", "soon", "-5", "1e3", "NaN", "9" * 400])
def test_retry_after_without_a_usable_delay_is_none(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


# -- request id ----------------------------------------------------------------------------------------------


def test_request_id_prefers_request_id_then_x_request_id_then_x_deepseek_request_id() -> None:
    all_three = {"x-deepseek-request-id": "c", "x-request-id": "b", "request-id": "a"}
    assert request_id_from(all_three) == "a"
    assert request_id_from({"x-deepseek-request-id": "c", "x-request-id": "b"}) == "b"
    assert request_id_from({"x-deepseek-request-id": "c"}) == "c"


def test_an_empty_request_id_falls_through_to_the_next_header() -> None:
    assert request_id_from({"request-id": "", "x-request-id": "  ", "x-deepseek-request-id": "c"}) == "c"


def test_request_id_header_names_are_case_insensitive() -> None:
    assert request_id_from({"X-Request-ID": "b", "X-DeepSeek-Request-Id": "c"}) == "b"
    assert request_id_from(httpx.Headers({"Request-Id": "a", "X-Request-Id": "b"})) == "a"


def test_no_request_id_header_is_none() -> None:
    assert request_id_from({"content-type": "application/json"}) is None


# -- in-band errors ------------------------------------------------------------------------------------------


def inband(error: object, status: int | None = None) -> tuple[str, str, int | None]:
    failure = classify_inband_error(error, status=status)
    return failure.code, failure.message, failure.status


def test_openrouter_numeric_code_is_the_status() -> None:
    error = {"code": 400, "message": "Token limit reached"}
    assert inband(error) == ("INVALID_REQUEST", "Token limit reached", 400)


def test_server_error_type_without_status_is_server() -> None:
    assert inband({"message": "overloaded", "type": "server_error"}) == ("SERVER", "overloaded", None)


def test_groq_tool_use_failed_is_invalid_request() -> None:
    error = {
        "message": "Failed to call a function. Please adjust your prompt.",
        "type": "invalid_request_error",
        "code": "tool_use_failed",
        "status_code": 400,
    }
    assert inband(error)[0::2] == ("INVALID_REQUEST", 400)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"type": "authentication_error", "message": "invalid x-api-key"}, None),
        ({"type": "permission_error", "message": "no access"}, None),
        ({"message": "denied"}, 403),
        ({"status": 401, "message": "denied"}, None),
    ],
)
def test_auth_status_or_type_is_auth(error: dict[str, Any], status: int | None) -> None:
    assert inband(error, status)[0] == "AUTH"


def test_inband_auth_wins_over_quota_wording() -> None:
    assert inband({"type": "authentication_error", "message": "Insufficient Balance"})[0] == "AUTH"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"message": "You exceeded your current quota"}, None),
        ({"code": "insufficient_quota", "message": "check your plan"}, None),
        ({"message": "Payment Required"}, 402),
        ({"code": 429, "type": "rate_limit_error", "message": "quota exceeded"}, None),
        ("Insufficient Balance", None),
    ],
)
def test_quota_wording_or_402_is_quota_and_beats_rate_limit(error: object, status: int | None) -> None:
    assert inband(error, status)[0] == "QUOTA"


@pytest.mark.parametrize(
    ("error", "status"),
    [({"type": "rate_limit_error", "message": "slow down"}, None), ({"message": "slow down"}, 429)],
)
def test_429_or_rate_limit_type_is_rate_limit(error: dict[str, Any], status: int | None) -> None:
    assert inband(error, status)[0] == "RATE_LIMIT"


def test_inband_context_wording_needs_no_status_and_beats_invalid_request() -> None:
    assert inband({"message": "prompt is too long for this model"})[0] == "CONTEXT_WINDOW_EXCEEDED"
    error = {"type": "invalid_request_error", "code": 400, "message": "maximum context length is 8192 tokens"}
    assert inband(error)[0] == "CONTEXT_WINDOW_EXCEEDED"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"type": "invalid_request_error", "message": "bad"}, None),
        ({"message": "bad"}, 400),
        ({"message": "too big"}, 413),
    ],
)
def test_400_413_or_invalid_request_type_is_invalid_request(error: object, status: int | None) -> None:
    assert inband(error, status)[0] == "INVALID_REQUEST"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"type": "api_error", "message": "internal"}, None),
        ({"type": "overloaded_error", "message": "Overloaded"}, None),
        ({"message": "bad gateway"}, 502),
        ({"message": "something broke"}, None),
        ("upstream died", None),
    ],
)
def test_server_status_or_type_or_no_status_is_server(error: object, status: int | None) -> None:
    assert inband(error, status)[0] == "SERVER"


def test_inband_other_status_is_http_status_code() -> None:
    assert inband({"message": "no such model"}, 404) == ("HTTP_404", "no such model", 404)


def test_the_callers_status_wins_over_the_objects() -> None:
    assert inband({"code": 400, "message": "x"}, 503)[0::2] == ("SERVER", 503)


def test_status_keys_are_read_in_order_status_code_status_code() -> None:
    assert inband({"status_code": 401, "status": 429, "code": 400})[2] == 401
    assert inband({"status": 429, "code": 400})[2] == 429


@pytest.mark.parametrize("code", [1308, 42, "429", True, 429.0])
def test_a_code_that_is_not_an_http_status_int_is_not_a_status(code: object) -> None:
    assert inband({"code": code, "message": "hm"})[0::2] == ("SERVER", None)


def test_a_string_error_is_its_own_message() -> None:
    assert inband("upstream died") == ("SERVER", "upstream died", None)


def test_an_error_without_a_message_is_rendered_as_json() -> None:
    rendered = '{"type": "api_error", "code": "E42"}'
    assert inband({"type": "api_error", "code": "E42"}) == ("SERVER", rendered, None)
    assert inband(42)[1] == "42"


@pytest.mark.parametrize("error", [None, "", "   ", {}, []])
def test_an_empty_error_gets_the_generic_message(error: object) -> None:
    assert inband(error)[1] == "provider reported an error"


def test_an_empty_message_is_no_message() -> None:
    assert inband({"message": "", "type": "api_error"})[1] == '{"message": "", "type": "api_error"}'


def test_an_unrenderable_error_gets_the_generic_message() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    assert inband(cyclic)[1] == "provider reported an error"
    assert inband({(1, 2): "tuple key"})[1] == "provider reported an error"


def test_inband_message_is_cut_under_500_characters() -> None:
    message = inband({"message": "x" * 5000})[1]
    assert len(message) < 500
    assert message.endswith("…")


# -- properties ----------------------------------------------------------------------------------------------

json_values: st.SearchStrategy[object] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
error_objects: st.SearchStrategy[dict[str, object]] = st.fixed_dictionaries(
    {},
    optional={
        "message": st.text() | json_values,
        "type": st.sampled_from(["invalid_request_error", "rate_limit_error", "api_error"]) | st.text(),
        "code": st.integers()
        | st.text()
        | st.sampled_from(["insufficient_quota", "context_length_exceeded"]),
        "status_code": st.integers(),
        "status": st.integers() | st.text(),
    },
)
bodies: st.SearchStrategy[str | bytes] = st.one_of(
    st.text(),
    st.binary(),
    json_values.map(json.dumps),
    error_objects.map(lambda error: json.dumps({"error": error})),
    st.builds(lambda error: json.dumps({"error": error}), st.text() | json_values),
)
header_maps: st.SearchStrategy[dict[str, str]] = st.dictionaries(
    st.sampled_from(["Retry-After", "retry-after", "Request-Id", "x-request-id"]) | st.text(max_size=12),
    st.text(max_size=40),
    max_size=4,
)
keys: st.SearchStrategy[str] = st.from_regex(r"sk-[A-Za-z0-9]{8,40}", fullmatch=True)


def assert_well_formed(failure: Failure) -> None:
    assert isinstance(failure, Failure)
    assert failure.code
    assert failure.message
    assert len(failure.message) < 500


@given(status=st.integers(), body=bodies, headers=header_maps, api_key=st.none() | st.text())
def test_classify_http_error_never_raises_and_always_gives_a_code_and_message(
    status: int, body: str | bytes, headers: dict[str, str], api_key: str | None
) -> None:
    failure = classify_http_error(status, body, headers, api_key=api_key)
    assert_well_formed(failure)
    assert failure.status == status


@given(error=st.one_of(json_values, error_objects, st.builds(object)), status=st.none() | st.integers())
def test_classify_inband_error_never_raises_and_always_gives_a_code_and_message(
    error: object, status: int | None
) -> None:
    assert_well_formed(classify_inband_error(error, status=status))


@given(key=keys, before=st.text(max_size=600), after=st.text(max_size=600), status=st.integers(400, 599))
def test_the_api_key_never_reaches_the_message(key: str, before: str, after: str, status: int) -> None:
    failure = classify_http_error(status, error_body(before + key + after), api_key=key)
    assert key not in failure.message


@given(value=st.text() | st.none(), now=st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_parse_retry_after_never_raises_and_gives_a_positive_finite_delay_or_none(
    value: str | None, now: float
) -> None:
    delay = parse_retry_after(value, now=now)
    assert delay is None or (isinstance(delay, int) and delay > 0)


# -- OpenAI's error codes stand in for a type the rules do not name -------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"type": "tokens", "code": "rate_limit_exceeded", "message": "Rate limit reached"}, "RATE_LIMIT"),
        ({"type": "requests", "code": "rate_limit_exceeded", "message": "Rate limit reached"}, "RATE_LIMIT"),
        ({"code": "rate_limit_exceeded", "message": "slow down"}, "RATE_LIMIT"),
        ({"type": "error", "code": "invalid_prompt", "message": "flagged"}, "INVALID_REQUEST"),
        ({"code": "server_error", "message": "boom"}, "SERVER"),
    ],
)
def test_an_openai_code_classifies_when_the_type_names_no_rule(error: dict[str, Any], code: str) -> None:
    assert classify_inband_error(error).code == code


def test_a_named_type_wins_over_the_code() -> None:
    error = {"type": "invalid_request_error", "code": "rate_limit_exceeded", "message": "bad"}
    assert classify_inband_error(error).code == "INVALID_REQUEST"


def test_a_status_still_wins_over_the_code() -> None:
    assert classify_inband_error({"code": "rate_limit_exceeded", "message": "x"}, status=401).code == "AUTH"
