"""``gemini_error_body`` (decision 0071): a failure as Google's error object, with the HTTP status the transport
answers with as its ``code`` (the same object is the in-band error event), our code in its message and an
``ErrorInfo``, and a google.rpc ``status`` that a reader classifying by status retries exactly when we would; the
status (``gemini_error_status``) is one google-genai's retry options retry exactly when ``x-should-retry`` says so
(the SDK reads no header)."""

from __future__ import annotations

import json

import httpx2
import pytest
from bytes_server import BytesServer

from operators import Code, Failure, RetryPolicy
from operators.extend import classify_inband_error
from pipeline import SanitizingTransport
from pipeline.sanitize._repair import error_response
from pipeline.sanitize.gemini import gemini_error_body, gemini_error_status

GENAI_RETRIES = {408, 429, 500, 502, 503, 504}
"""google-genai's ``_RETRY_HTTP_STATUS_CODES`` (its ``HttpRetryOptions`` default)."""


@pytest.mark.parametrize(
    ("failure", "status", "rpc"),
    [
        (Failure(Code.RATE_LIMIT, "slow", status=429, retry_after_ms=1500), 429, "RESOURCE_EXHAUSTED"),
        (Failure(Code.SERVER, "down", status=503), 503, "UNAVAILABLE"),
        (Failure(Code.SERVER, "broke", status=500), 500, "INTERNAL"),
        (Failure(Code.INVALID_REQUEST, "bad", status=400), 400, "INVALID_ARGUMENT"),
        (Failure(Code.AUTH, "key", status=401), 401, "UNAUTHENTICATED"),
        (Failure(Code.AUTH, "denied", status=403), 403, "PERMISSION_DENIED"),
        (Failure(Code.TIMEOUT, "late"), 504, "DEADLINE_EXCEEDED"),
        (Failure(Code.STREAM_CLOSED, "cut"), 503, "UNAVAILABLE"),
        (Failure(Code.MALFORMED_TOOL_CALL, "nameless"), 503, "UNAVAILABLE"),
        (Failure(Code.EMPTY_RESPONSE, "nothing"), 503, "UNAVAILABLE"),
        (Failure(Code.TRANSPORT, "reset"), 503, "UNAVAILABLE"),
        (Failure(Code.SERVER, "not implemented", status=501), 503, "UNAVAILABLE"),  # the SDK does not retry a 501
        (Failure(Code.SERVER, "bad gateway", status=502), 502, "UNAVAILABLE"),
        (Failure(Code.MALFORMED_RESPONSE, "not json"), 400, "FAILED_PRECONDITION"),
        (Failure(Code.LIMIT_EXCEEDED, "held"), 400, "OUT_OF_RANGE"),
        (Failure(Code.CONTENT_FILTER, "filtered"), 400, "FAILED_PRECONDITION"),
        (Failure(Code.UNKNOWN, "odd finish"), 400, "FAILED_PRECONDITION"),
        (Failure(Code.QUOTA, "spent", status=429), 400, "FAILED_PRECONDITION"),  # the SDK would retry a 429
        (Failure(Code.RATE_LIMIT, "told not to", status=429, should_retry=False), 400, "FAILED_PRECONDITION"),
        (Failure(Code.MALFORMED_RESPONSE, "a policy retries it", should_retry=True), 503, "UNAVAILABLE"),
    ],
)
def test_the_http_error_body_is_googles_shape_with_the_status_the_transport_answers(failure: Failure, status: int,
                                                                                    rpc: str) -> None:
    body = json.loads(gemini_error_body(failure))
    assert list(body) == ["error"]
    error = body["error"]
    assert (error["code"], error["status"]) == (status, rpc)
    assert error["code"] == error_response(failure, gemini_error_body, status=gemini_error_status).status
    assert (status in GENAI_RETRIES) == (rpc in ("RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"))
    assert error["message"] == f"{failure.code}: {failure.message}"
    assert {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": failure.code,
            "domain": "llm-stream"} in error["details"]
    retry = [d for d in error["details"] if d["@type"].endswith("RetryInfo")]
    assert retry == ([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]
                     if failure.retry_after_ms else [])


@pytest.mark.parametrize("code", [Code.STREAM_CLOSED, Code.MALFORMED_RESPONSE, Code.CONTENT_FILTER, Code.RATE_LIMIT,
                                  Code.QUOTA, Code.SERVER, Code.LIMIT_EXCEEDED, Code.AUTH])
@pytest.mark.parametrize("policy", [None, RetryPolicy.always(), RetryPolicy(retryable_codes=(Code.AUTH,)),
                                    RetryPolicy(retryable_codes=(Code.MALFORMED_RESPONSE, Code.QUOTA))])
def test_the_status_is_one_google_genai_retries_exactly_when_x_should_retry_says_so(code: str,
                                                                                   policy: RetryPolicy | None) -> None:
    answer = error_response(Failure(code, "m"), gemini_error_body, policy, gemini_error_status)
    assert (answer.status in GENAI_RETRIES) == (answer.headers["x-should-retry"] == "true")
    assert json.loads(answer.body)["error"]["code"] == answer.status


RETRY_INFO_37S = {"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED",
                            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}


def test_a_retry_info_wait_over_the_policys_max_delay_is_not_retried_in_normal_mode() -> None:
    """Google's waits are often 20-60 s, the default ``max_delay_ms`` 10 s (docs/formats/gemini.md, Retries)."""
    failure = classify_inband_error(RETRY_INFO_37S["error"])
    assert (failure.code, failure.retry_after_ms) == (Code.RATE_LIMIT, 37_000)
    assert RetryPolicy().delay_ms(1, failure, lambda: 0.5) is None  # give up, pass the failure on
    assert RetryPolicy.always().delay_ms(1, failure, lambda: 0.5) == 500  # the local backoff instead
    assert RetryPolicy(max_delay_ms=60_000).delay_ms(1, failure, lambda: 0.5) == 37_000  # waited as asked


@pytest.mark.server
def test_the_transports_own_retry_passes_a_long_retry_info_on_to_the_client() -> None:
    """Before the first byte, with ``SanitizingTransport(retry=RetryPolicy())``: one request upstream, then a 429 the
    google-genai SDK would retry (after its own backoff) carrying the wait as ``retry-after-ms`` and ``RetryInfo``."""
    with BytesServer() as server:
        server.serve(b"data: " + json.dumps(RETRY_INFO_37S).encode() + b"\r\n\r\n")
        server.serve(b"data: {}\r\n\r\n")
        with httpx2.Client(transport=SanitizingTransport(retry=RetryPolicy())) as client:
            response = client.post(server.base_url + "/v1beta/models/m:streamGenerateContent?alt=sse", json={})
        assert len(server.requests) == 1
    assert (response.status_code, response.headers["retry-after-ms"]) == (429, "37000")
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (429, "RESOURCE_EXHAUSTED")
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"} in error["details"]
