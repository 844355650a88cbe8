"""Gemini's errors, the sanitizer's side: a failure as Google's error object (``gemini_error_body``, the HTTP error
body, and the in-band ``{"error": ...}`` event the google-genai SDK raises), and the HTTP status the transport answers
a failure found before the first byte with on the Gemini format (``gemini_error_status``). An upstream's own error
object is read as the library reads it (``classify_inband_error``: by its google.rpc ``status`` first, decision 0071).

Google's shape is ``{"error": {"code": <HTTP status>, "message", "status": <google.rpc code>, "details"}}``. The
google-genai SDK reads no header (neither ``x-should-retry`` nor ``Retry-After``, nor the body's ``RetryInfo``): with
``HttpRetryOptions`` it retries an HTTP error whose status is in ``http_status_codes``, by default 408, 429, 500,
502, 503 and 504 (``GENAI_RETRIED``), and nothing after the first event. So on this format the status says what
``x-should-retry`` says: whether the failure is retried (``failure.should_retry``, set by the transport from its
classification; else the library's default, ``DEFAULT_RETRYABLE_CODES``) decides both the google.rpc ``status`` and
the HTTP status, in Google's own pairing (``RESOURCE_EXHAUSTED`` 429, ``UNAVAILABLE`` 503, ``INTERNAL`` 500,
``DEADLINE_EXCEEDED`` 504, ``INVALID_ARGUMENT`` / ``FAILED_PRECONDITION`` / ``OUT_OF_RANGE`` 400,
``UNAUTHENTICATED`` 401, ``PERMISSION_DENIED`` 403, ``NOT_FOUND`` 404):

| our code | ``status`` |
|---|---|
| ``RATE_LIMIT`` | ``RESOURCE_EXHAUSTED`` |
| ``AUTH`` | ``UNAUTHENTICATED`` (``PERMISSION_DENIED`` when the upstream said 403) |
| ``INVALID_REQUEST``, ``CONTEXT_WINDOW_EXCEEDED`` | ``INVALID_ARGUMENT`` (``NOT_FOUND`` when it said 404) |
| ``TIMEOUT`` | ``DEADLINE_EXCEEDED`` |
| ``SERVER`` | ``UNAVAILABLE`` (``INTERNAL`` when the upstream said 500) |
| ``LIMIT_EXCEEDED`` | ``OUT_OF_RANGE`` |
| another code that is retried (``STREAM_CLOSED``, ``MALFORMED_TOOL_CALL``, ...) | ``UNAVAILABLE`` |
| any other (``QUOTA``, ``MALFORMED_RESPONSE``, ``CONTENT_FILTER``, ``UNKNOWN``, ...) | ``FAILED_PRECONDITION`` |

and where the named ``status``'s HTTP status would be retried by the SDK and the failure is not (a ``QUOTA``, a
rate limit the provider said not to retry), or the other way round (a policy that retries ``MALFORMED_RESPONSE``),
``FAILED_PRECONDITION`` or ``UNAVAILABLE`` instead. The HTTP status is the failure's own (an upstream's in-band
``code``, >= 400) when the SDK retries it exactly when we would, else that of the ``status``. So the SDK's retry
options retry what ``x-should-retry`` says and nothing else, and a reader that classifies Google's errors by
``status`` (the library, decision 0071) does too: ``UNAVAILABLE`` is ``SERVER``, ``FAILED_PRECONDITION`` and
``OUT_OF_RANGE`` are ``INVALID_REQUEST``.

``message`` is ``"<CODE>: <message>"``; ``details`` hold a ``google.rpc.ErrorInfo`` whose ``reason`` is our code
(domain ``llm-stream``) and, when the wait is known, a ``google.rpc.RetryInfo`` (``"retryDelay": "1.5s"``).
"""

from __future__ import annotations

import json
from typing import Any

from operators import DEFAULT_RETRYABLE_CODES, Code, Failure

__all__ = ["GENAI_RETRIED", "gemini_error", "gemini_error_body", "gemini_error_status"]

GENAI_RETRIED = frozenset({408, 429, 500, 502, 503, 504})
"""The HTTP statuses google-genai's ``HttpRetryOptions`` retry by default (``_RETRY_HTTP_STATUS_CODES``)."""
_STATUS_OF: dict[str, str] = {
    Code.RATE_LIMIT: "RESOURCE_EXHAUSTED",
    Code.AUTH: "UNAUTHENTICATED",
    Code.INVALID_REQUEST: "INVALID_ARGUMENT",
    Code.CONTEXT_WINDOW_EXCEEDED: "INVALID_ARGUMENT",
    Code.TIMEOUT: "DEADLINE_EXCEEDED",
    Code.SERVER: "UNAVAILABLE",
    Code.LIMIT_EXCEEDED: "OUT_OF_RANGE",
}
_BY_UPSTREAM: dict[tuple[str, int], str] = {
    (Code.AUTH, 403): "PERMISSION_DENIED",
    (Code.INVALID_REQUEST, 404): "NOT_FOUND",
    (Code.SERVER, 500): "INTERNAL",
}
_HTTP_OF: dict[str, int] = {
    "RESOURCE_EXHAUSTED": 429, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "INVALID_ARGUMENT": 400,
    "NOT_FOUND": 404, "DEADLINE_EXCEEDED": 504, "UNAVAILABLE": 503, "INTERNAL": 500, "OUT_OF_RANGE": 400,
    "FAILED_PRECONDITION": 400,
}
"""google.rpc's own HTTP status for each ``status`` named here."""
_DOMAIN = "llm-stream"


def _retryable(failure: Failure) -> bool:
    if failure.should_retry is not None:
        return failure.should_retry
    return failure.code in DEFAULT_RETRYABLE_CODES


def _rpc_status(failure: Failure) -> str:
    retryable = _retryable(failure)
    named = _BY_UPSTREAM.get((failure.code, failure.status or 0)) or _STATUS_OF.get(failure.code)
    if named is not None and (_HTTP_OF[named] in GENAI_RETRIED) == retryable:
        return named
    return "UNAVAILABLE" if retryable else "FAILED_PRECONDITION"


def gemini_error_status(failure: Failure) -> int:
    """The HTTP status of ``failure`` on the Gemini format, one google-genai retries exactly when the failure is
    retried (``failure.should_retry``, else the library's default): its own (>= 400) when that holds, else the one
    Google pairs with its ``status``."""
    own = failure.status
    if own is not None and 400 <= own <= 599 and (own in GENAI_RETRIED) == _retryable(failure):
        return own
    return _HTTP_OF[_rpc_status(failure)]


def gemini_error(failure: Failure) -> dict[str, Any]:
    """``failure`` as Google's error object: ``{"error": {"code", "message", "status", "details"}}``."""
    details: list[dict[str, Any]] = [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": failure.code, "domain": _DOMAIN}
    ]
    if failure.retry_after_ms is not None and failure.retry_after_ms >= 0:
        delay = f"{failure.retry_after_ms / 1000:.3f}".rstrip("0").rstrip(".")
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay}s"})
    return {"error": {"code": gemini_error_status(failure), "message": f"{failure.code}: {failure.message}",
                      "status": _rpc_status(failure), "details": details}}


def gemini_error_body(failure: Failure) -> bytes:
    """``failure`` as Google's HTTP error body (``gemini_error``), the status the transport answers with as ``code``,
    our code in ``message`` and in an ``ErrorInfo`` detail."""
    return json.dumps(gemini_error(failure), ensure_ascii=False).encode()
