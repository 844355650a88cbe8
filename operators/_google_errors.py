"""Google's errors: a ``google.rpc.Status`` as JSON (the Gemini API, Vertex AI), read into one of our codes.

The shape, as an HTTP error body and as an in-band stream event (docs/decisions/0071-gemini-format.md, Errors)::

    {"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
                           {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [...]},
                           {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}

The Gemini API also sends it as a one-element array ``[{"error": {...}}]`` for some HTTP errors. An error object is
Google's when its ``status`` is one of the sixteen canonical code names; anything else (a gateway's
``"status": "Too Many Requests"``) is left to the other rules. Pure functions, no I/O.

    google_code(error, status, overflow)
        0. ErrorInfo reason API_KEY_INVALID .............................. AUTH (Google answers it 400)
        1. RESOURCE_EXHAUSTED ............................................ QUOTA when the quota is spent
                                                                           (below), RATE_LIMIT otherwise
        2. UNAVAILABLE, INTERNAL; UNKNOWN with a 5xx code ................ SERVER
        3. DEADLINE_EXCEEDED ............................................. TIMEOUT
        4. INVALID_ARGUMENT .............................................. CONTEXT_WINDOW_EXCEEDED with
                                                                           too-long wording, else INVALID_REQUEST
        5. FAILED_PRECONDITION, OUT_OF_RANGE, NOT_FOUND .................. INVALID_REQUEST
        6. UNAUTHENTICATED, PERMISSION_DENIED ............................. AUTH
        7. any other status .............................................. None: the caller's rules by code

A spent quota (``QUOTA``, not retried): Google words a per-minute limit exactly as OpenAI words a spent balance
("You exceeded your current quota, please check your plan and billing details"), so that wording says nothing here.
Waiting fixes a per-minute limit; it does not fix, within any retry's wait, a quota that is per day (a
``QuotaFailure`` violation whose ``quotaId``, or an ``ErrorInfo``'s ``quota_limit``, names ``PerDay``), a limit of 0
(the model has no quota on this plan: ``limit: 0`` in the message), or spent prepaid credits. Those are ``QUOTA``, as
OpenAI's ``insufficient_quota`` is: the caller must change something (a plan, a key, tomorrow), not retry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ._codes import Code

__all__ = [
    "GOOGLE_STATUSES",
    "GOOGLE_TOO_LONG",
    "google_code",
    "google_error",
    "google_retry_delay_ms",
    "is_google",
    "parse_duration_ms",
]

GOOGLE_STATUSES = frozenset({
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
})  # fmt: skip
"""The canonical ``google.rpc.Code`` names, as the ``status`` of a JSON ``google.rpc.Status``."""

_TYPE_PREFIX = "type.googleapis.com/google.rpc."
_AUTH_REASONS = frozenset({"API_KEY_INVALID"})
_SERVER = frozenset({"UNAVAILABLE", "INTERNAL"})
_INVALID = frozenset({"FAILED_PRECONDITION", "OUT_OF_RANGE", "NOT_FOUND"})
_AUTH = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
_DURATION = re.compile(r"([0-9]{1,12})(?:\.([0-9]{0,9}))?s")

GOOGLE_TOO_LONG: re.Pattern[str] = re.compile(
    r"""
      \binput \s+ token \s+ count \b .{0,40} \bexceeds? \s+ the \s+ maximum \s+ number \s+ of \s+ tokens \b
                                          # The input token count (3475108) exceeds the maximum number of tokens
    | \binput \s+ token \s+ count \s+ is \s+ [0-9]+ \s+ but \s+ (?:the\s+)? model \s+ only \s+ supports \b
                                          # Vertex: the input token count is 1251952 but model only supports up to
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""Google's words for a request longer than the model's context window (no "context" in them)."""

_SPENT_WORDING = re.compile(
    r"""
      \blimit: \s* 0 \b (?!\.[0-9])                                   # Quota exceeded for metric: ..., limit: 0
    | \b(?:prepayment|prepaid) \s+ credits? \b                        # Your prepayment credits are depleted
    | \bcredits? \s+ (?:are\s+|have\s+been\s+)? (?:depleted|exhausted) \b
    | \binsufficient [\s_-]+ (?:balance|credits?) \b
    """,
    re.IGNORECASE | re.VERBOSE,
)


def google_error(parsed: object) -> Mapping[str, object] | None:
    """The ``error`` object of ``{"error": {...}}`` or ``[{"error": {...}}]`` when it is Google's, else None."""
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parsed[0]
    if not isinstance(parsed, Mapping):
        return None
    error = parsed.get("error")
    return error if is_google(error) else None


def is_google(error: object) -> bool:
    """Whether an error object is a ``google.rpc.Status``: its ``status`` is a canonical code name."""
    if not isinstance(error, Mapping):
        return False
    status = error.get("status")
    return isinstance(status, str) and status in GOOGLE_STATUSES


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _details(error: Mapping[str, object], kind: str) -> Iterator[Mapping[str, object]]:
    details = error.get("details")
    if isinstance(details, list):
        for detail in details:
            if isinstance(detail, Mapping) and detail.get("@type") == _TYPE_PREFIX + kind:
                yield detail


def parse_duration_ms(value: object) -> int | None:
    """A protobuf ``Duration`` in JSON (``"37s"``, ``"1.5s"``, ``"0.250s"``) as whole milliseconds, rounded up (a wait
    is never cut short); None for anything else, a negative or a zero duration."""
    match = _DURATION.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    nanos = int(match.group(1)) * 1_000_000_000 + int((match.group(2) or "").ljust(9, "0"))
    millis = -(-nanos // 1_000_000)
    return millis if millis > 0 else None


def google_retry_delay_ms(error: Mapping[str, object]) -> int | None:
    """The wait a ``google.rpc.RetryInfo`` detail asks for (its ``retryDelay``), the longest when several do."""
    delays = [parse_duration_ms(info.get("retryDelay")) for info in _details(error, "RetryInfo")]
    return max((delay for delay in delays if delay is not None), default=None)


def _quota_ids(error: Mapping[str, object]) -> Iterator[str]:
    for failure in _details(error, "QuotaFailure"):
        violations = failure.get("violations")
        for violation in violations if isinstance(violations, list) else ():
            if isinstance(violation, Mapping) and isinstance(violation.get("quotaId"), str):
                yield str(violation["quotaId"])
    for info in _details(error, "ErrorInfo"):
        metadata = info.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("quota_limit"), str):
            yield str(metadata["quota_limit"])


def _spent(error: Mapping[str, object]) -> bool:
    """Whether a ``RESOURCE_EXHAUSTED`` is a quota no retry's wait gives back (the module docstring)."""
    if any("PerDay" in quota for quota in _quota_ids(error)):
        return True
    message = error.get("message")
    return isinstance(message, str) and _SPENT_WORDING.search(message) is not None


def google_code(error: Mapping[str, object], status: int | None, *, overflow: bool = False) -> str | None:
    """Our code for a Google error object (the module docstring's rules), or None when its status names none.

    ``status`` is the HTTP status (or the object's own ``code``); ``overflow`` says the caller's context-overflow
    wording matched the message (Google's own too-long wording is matched here).
    """
    name = error.get("status")
    if any(_text(info.get("reason")) in _AUTH_REASONS for info in _details(error, "ErrorInfo")):
        return Code.AUTH
    if name == "RESOURCE_EXHAUSTED":
        return Code.QUOTA if _spent(error) else Code.RATE_LIMIT
    if name in _SERVER or (name == "UNKNOWN" and status is not None and status >= 500):
        return Code.SERVER
    if name == "DEADLINE_EXCEEDED":
        return Code.TIMEOUT
    if name == "INVALID_ARGUMENT":
        message = error.get("message")
        too_long = overflow or (isinstance(message, str) and GOOGLE_TOO_LONG.search(message) is not None)
        return Code.CONTEXT_WINDOW_EXCEEDED if too_long else Code.INVALID_REQUEST
    if name in _INVALID:
        return Code.INVALID_REQUEST
    if name in _AUTH:
        return Code.AUTH
    return None
