"""Google's errors (google.rpc.Status as JSON) as failures: HTTP bodies and in-band events (decision 0071, Errors).

The bodies are modelled on what the Gemini API and Vertex AI answer, as reported in public issue threads
(google-gemini/gemini-cli #4231, #6678, #10925, #14811; googleapis/python-genai #2044; RooCodeInc/Roo-Code #3883;
diegosouzapw/OmniRoute #9504; continuedev/continue #8516): the shape, the statuses, the detail types and the wording
are Google's, the numbers are ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from operators._google_errors import parse_duration_ms
from operators._provider_errors import classify_http_error, classify_inband_error

HELP = {
    "@type": "type.googleapis.com/google.rpc.Help",
    "links": [
        {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
        }
    ],
}
FREE_TIER_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more information on this "
    "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: "
    "https://ai.dev/rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_input_token_count, limit: 250000, model: gemini-2.5-flash\nPlease retry in 26.41s."
)


def retry_info(delay: str) -> dict[str, Any]:
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


def quota_failure(*quota_ids: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                "quotaValue": "10",
            }
            for quota_id in quota_ids
        ],
    }


def status_error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return error


def body(error: dict[str, Any], *, array: bool = False) -> str:
    wrapped: object = [{"error": error}] if array else {"error": error}
    return json.dumps(wrapped, indent=2)


def per_minute_429(delay: str = "26s") -> dict[str, Any]:
    return status_error(
        429,
        "RESOURCE_EXHAUSTED",
        FREE_TIER_MESSAGE,
        quota_failure("GenerateContentInputTokensPerModelPerMinute-FreeTier"),
        HELP,
        retry_info(delay),
    )


# -- RESOURCE_EXHAUSTED -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("array", [False, True])
def test_a_per_minute_429_is_a_rate_limit_with_the_retry_info_delay(array: bool) -> None:
    failure = classify_http_error(429, body(per_minute_429(), array=array))
    assert failure.code == "RATE_LIMIT"  # not QUOTA, although Google words it "You exceeded your current quota"
    assert failure.retry_after_ms == 26_000
    assert failure.status == 429
    assert failure.message.startswith("You exceeded your current quota")


def test_the_same_body_in_band_is_a_rate_limit_with_the_delay() -> None:
    failure = classify_inband_error(per_minute_429("37s"))
    assert (failure.code, failure.retry_after_ms, failure.status) == ("RATE_LIMIT", 37_000, 429)


@pytest.mark.parametrize(
    "quota_ids",
    [
        ("GenerateRequestsPerDayPerProjectPerModel-FreeTier",),
        (  # every limit Google names at once, the daily one among them
            "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "GenerateContentInputTokensPerModelPerMinute-FreeTier",
        ),
    ],
)
def test_a_spent_daily_quota_is_quota_not_a_rate_limit(quota_ids: tuple[str, ...]) -> None:
    error = status_error(429, "RESOURCE_EXHAUSTED", FREE_TIER_MESSAGE, quota_failure(*quota_ids), retry_info("36s"))
    for failure in (classify_http_error(429, body(error)), classify_inband_error(error)):
        assert failure.code == "QUOTA"
        assert failure.retry_after_ms == 36_000  # still carried: what Google said


def test_a_daily_quota_named_by_error_info_is_quota() -> None:
    error = status_error(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day'.",
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com",
            "metadata": {
                "quota_metric": "x.googleapis.com/gemini_2_5_pro_requests",
                "quota_limit": "Gemini25ProRequestsPerDay",
            },
        },
    )
    assert classify_http_error(429, body(error, array=True)).code == "QUOTA"


def test_a_limit_of_zero_is_quota() -> None:
    message = (
        "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: "
        "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-3-pro\n"
        "Please retry in 45.5s."
    )
    error = status_error(429, "RESOURCE_EXHAUSTED", message, HELP, retry_info("45s"))
    assert classify_http_error(429, body(error)).code == "QUOTA"
    assert (
        classify_http_error(
            429, body(status_error(429, "RESOURCE_EXHAUSTED", message.replace("limit: 0", "limit: 20")))
        ).code
        == "RATE_LIMIT"
    )


def test_spent_prepaid_credits_are_quota() -> None:
    error = status_error(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted. Please go to AI Studio.")
    assert classify_inband_error(error).code == "QUOTA"


@pytest.mark.parametrize(
    "message",
    [
        "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/"
        "generative-ai/docs/error-code-429 for more details.",
        "Resource has been exhausted (e.g. check quota).",
    ],
)
def test_vertex_resource_exhausted_without_details_is_a_rate_limit(message: str) -> None:
    failure = classify_http_error(429, body(status_error(429, "RESOURCE_EXHAUSTED", message), array=True))
    assert (failure.code, failure.retry_after_ms) == ("RATE_LIMIT", None)


# -- the wait: RetryInfo beside the headers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "delay", "expected"),
    [
        ({"Retry-After": "60"}, "26s", 60_000),  # the header is longer: it wins
        ({"Retry-After": "5"}, "26s", 26_000),  # the detail is longer: it wins
        ({"retry-after-ms": "26500"}, "26s", 26_500),
        ({}, "0.250s", 250),
        ({"Retry-After": "7"}, "not a duration", 7_000),
    ],
)
def test_the_longer_of_the_header_and_the_retry_info_is_the_wait(
    headers: dict[str, str], delay: str, expected: int
) -> None:
    assert classify_http_error(429, body(per_minute_429(delay)), headers).retry_after_ms == expected


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("37s", 37_000),
        ("1.5s", 1_500),
        ("0.250s", 250),
        ("36.429760048s", 36_430),  # rounded up: a wait is never cut short
        ("0.000000001s", 1),
        ("0s", None),
        ("-3s", None),
        ("37", None),
        ("37ms", None),
        ("1.0000000001s", None),  # more than nanoseconds: not a Duration
        ("", None),
        (37, None),
        (None, None),
    ],
)
def test_a_retry_delay_is_a_protobuf_duration(text: object, ms: int | None) -> None:
    assert parse_duration_ms(text) == ms


@given(st.text(max_size=40))
def test_a_retry_delay_never_raises(text: str) -> None:
    result = parse_duration_ms(text)
    assert result is None or result > 0


# -- the other statuses ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        (503, "UNAVAILABLE", "SERVER"),
        (500, "INTERNAL", "SERVER"),
        (500, "UNKNOWN", "SERVER"),
        (504, "DEADLINE_EXCEEDED", "TIMEOUT"),
        (400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
        (400, "FAILED_PRECONDITION", "INVALID_REQUEST"),
        (400, "OUT_OF_RANGE", "INVALID_REQUEST"),
        (404, "NOT_FOUND", "INVALID_REQUEST"),
        (401, "UNAUTHENTICATED", "AUTH"),
        (403, "PERMISSION_DENIED", "AUTH"),
        (409, "ABORTED", "HTTP_409"),  # a status the rules do not name: the code decides, as before
        (501, "UNIMPLEMENTED", "SERVER"),
    ],
)
def test_a_google_status_decides_the_code(code: int, status: str, expected: str) -> None:
    error = status_error(code, status, "The model is overloaded. Please try again later.")
    assert classify_http_error(code, body(error)).code == expected
    assert classify_inband_error(error).code == expected
    assert classify_inband_error({"error": error}).code == expected  # the whole event handed over


def test_a_gemini_404_names_a_wrong_request_not_a_bare_status() -> None:
    error = status_error(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta.")
    assert classify_http_error(404, body(error)).code == "INVALID_REQUEST"
    assert classify_http_error(404, json.dumps({"error": {"message": "not found"}})).code == "HTTP_404"


@pytest.mark.parametrize("array", [False, True])
def test_an_invalid_api_key_is_auth_although_google_answers_400(array: bool) -> None:
    error = status_error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key not valid.",
        },
    )
    failure = classify_http_error(400, body(error, array=array), api_key="AIzaSyTEST")
    assert (failure.code, failure.message) == ("AUTH", "API key not valid. Please pass a valid API key.")
    assert classify_inband_error(error).code == "AUTH"


@pytest.mark.parametrize(
    "message",
    [
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        "The input token count exceeds the maximum number of tokens allowed (1048576).",
        "Unable to submit request because the input token count is 1251952 but model only supports up to 1048576. "
        "Reduce the input token count and try again.",
    ],
)
def test_a_too_long_input_is_context_window_exceeded(message: str) -> None:
    error = status_error(400, "INVALID_ARGUMENT", message)
    assert classify_http_error(400, body(error, array=True)).code == "CONTEXT_WINDOW_EXCEEDED"
    assert classify_inband_error(error).code == "CONTEXT_WINDOW_EXCEEDED"


def test_a_gateway_wrapper_with_a_reason_phrase_status_keeps_the_old_rules() -> None:
    # gemini-cli's wrapper: "status" is a reason phrase, not a google.rpc code name; the quota wording decides
    wrapper = {"error": {"message": FREE_TIER_MESSAGE, "code": 429, "status": "Too Many Requests"}}
    assert classify_http_error(429, json.dumps(wrapper)).code == "QUOTA"
    assert classify_inband_error(wrapper["error"]).code == "QUOTA"


def test_an_in_band_google_error_in_an_array_is_read() -> None:
    failure = classify_inband_error([{"error": per_minute_429("2s")}])
    assert (failure.code, failure.retry_after_ms) == ("RATE_LIMIT", 2_000)


def test_a_google_message_is_redacted_and_cut() -> None:
    error = status_error(500, "INTERNAL", "AIzaSyTEST " + "x" * 900)
    failure = classify_http_error(500, body(error), api_key="AIzaSyTEST")
    assert "AIzaSyTEST" not in failure.message
    assert len(failure.message) < 500
    assert failure.code == "SERVER"


def test_the_peer_corpus_in_band_errors_get_their_expected_codes() -> None:
    corpus = Path(__file__).parents[1] / "corpus" / "gemini-peers"
    checked = 0
    for stream in sorted(corpus.glob("*.sse")):
        events = [
            line[5:].strip() for line in stream.read_text(encoding="utf-8").splitlines() if line.startswith("data:")
        ]
        errors = [json.loads(event)["error"] for event in events if event.startswith("{") and '"error"' in event]
        expected = json.loads(stream.with_suffix(".expected.json").read_text(encoding="utf-8"))["finish"]
        if errors and expected.get("code") is not None:
            assert classify_inband_error(errors[0]).code == expected["code"], stream.name
            checked += 1
    assert checked >= 5


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 1000) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_DETAIL = st.fixed_dictionaries(
    {
        "@type": st.sampled_from(
            ["type.googleapis.com/google.rpc." + kind for kind in ("RetryInfo", "QuotaFailure", "ErrorInfo")]
        )
    },
    optional={"retryDelay": _JSON, "violations": _JSON, "reason": _JSON, "metadata": _JSON},
)


@given(
    status=st.sampled_from(["RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "UNKNOWN", "DATA_LOSS"]) | _JSON,
    code=_JSON,
    message=_JSON,
    details=st.lists(_DETAIL | _JSON, max_size=3) | _JSON,
)
def test_any_google_shaped_error_is_classified_without_raising(
    status: object, code: object, message: object, details: object
) -> None:
    error = {"code": code, "message": message, "status": status, "details": details}
    for failure in (
        classify_inband_error(error),
        classify_inband_error([{"error": error}]),
        classify_http_error(429, json.dumps({"error": error}, default=str)),
    ):
        assert failure.code
        assert failure.retry_after_ms is None or failure.retry_after_ms > 0
