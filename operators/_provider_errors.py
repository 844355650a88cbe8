"""Provider errors to failures: what a non-2xx response or an in-band ``{"error": ...}`` payload means.

Pure functions, no I/O: the transport reads the status, the body and the headers and hands them here.
The rules are those of docs/decisions/0009-in-band-errors.md (the codes: docs/protocol.md); the first matching
rule wins.

    classify_http_error(status, body, headers)       a non-2xx response
        1. 401 / 403 .................................... AUTH
        2. 413 .......................................... INVALID_REQUEST
        3. quota wording in "<code> <type> <message>" ... QUOTA
        4. 429 .......................................... RATE_LIMIT
        5. 400 .......................................... CONTEXT_WINDOW_EXCEEDED with context-overflow
                                                          wording, INVALID_REQUEST otherwise
        6. >= 500 ....................................... SERVER
        7. anything else ................................ HTTP_<status>

    classify_inband_error(error, status=None)        the value of a payload's top-level "error"
        0. type llm_stream_error with one of our codes ............... that code (our own proxy or
                                                                       sanitizing transport upstream)
        1. 401 / 403, type authentication_error / permission_error ... AUTH
        2. quota wording, or 402 ..................................... QUOTA
        3. 429, type rate_limit_error ................................ RATE_LIMIT
        4. context-overflow wording .................................. CONTEXT_WINDOW_EXCEEDED
        5. 400 / 413, type invalid_request_error ..................... INVALID_REQUEST
        6. >= 500, type api_error / overloaded_error / server_error .. SERVER
        7. no status: SERVER; otherwise .............................. HTTP_<status>
       A type none of these rules names (absent, "error", OpenAI's "tokens" / "requests") is read from a string
       ``code`` the OpenAI APIs use instead: rate_limit_exceeded (3), invalid_request_error / invalid_prompt (5),
       server_error (6): the Responses API's ``response.error`` and flat error event carry only a code.

A Google body or event (``{"error": {"code", "message", "status", "details"}}``, also as ``[{"error": ...}]``,
its ``status`` a canonical ``google.rpc`` code name) is read by its ``status`` first (``_google_errors.py``, decision
0071): after rule 1 of a response, after rule 0 in-band; its ``RetryInfo`` delay is the wait. A status those rules
do not name falls through to the rules above.

So a 429 whose body says ``insufficient_quota`` is ``QUOTA`` (topping the balance up fixes it, waiting
does not), a plain 429 is ``RATE_LIMIT``, and a 401 stays ``AUTH`` whatever its body says.

Decisions callers rely on:

- The message is the provider's own ``error.message`` when it has one (else a top-level ``message`` or
  ``detail``, or an ``error`` that is a plain string), else ``API error (HTTP <status>)``. It never
  contains the API key given to ``classify_http_error`` and is shorter than 500 characters (cut with ``…``).
- A body that is not JSON leaves the decision to the status, except that a short one (at most 2 000
  characters: a plain-text error line rather than an HTML page) is still searched for the quota and
  context-overflow wording, so a gateway answering ``429 "You exceeded your current quota"`` in plain
  text is not retried as a rate limit. That text never becomes the message.
- Only string fields make up the searched detail: an OpenRouter ``"code": 400`` adds nothing to it.
- ``retry-after-ms`` / ``Retry-After``, ``x-should-retry`` and the request id are read too (``_provider_headers.py``),
  so one call gives the whole ``Failure``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ._chunk_values import Failure
from ._codes import Code, http_status_code
from ._error_wording import CONTEXT_OVERFLOW_WORDING, QUOTA_WORDING
from ._google_errors import google_code, google_error, google_retry_delay_ms, is_google
from ._provider_headers import header, parse_should_retry, request_id_from, retry_after_from

__all__ = [
    "CONTEXT_OVERFLOW_WORDING",
    "MAX_MESSAGE_CHARS",
    "OWN_ERROR_TYPE",
    "QUOTA_WORDING",
    "classify_http_error",
    "classify_inband_error",
]

MAX_MESSAGE_CHARS = 499
"""The longest message a failure built here carries (under 500 characters: docs/decisions/0009-in-band-errors.md)."""

RAW_TEXT_SCAN_CHARS = 2000
"""A body that is not JSON is searched for wording only when it is at most this long."""

_REDACTED = "[redacted]"
_FALLBACK_INBAND_MESSAGE = "provider reported an error"

# -- messages ------------------------------------------------------------------------------------------------


def _non_empty(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _redacted(message: str, api_key: str | None = None) -> str:
    """Redact the key first (so a cut cannot leave a part of it behind), then cut to ``MAX_MESSAGE_CHARS``."""
    if api_key:
        message = message.replace(api_key, _REDACTED)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return message


def _detail(*fields: object) -> str:
    """The text searched for wording: the string fields, joined with spaces (non-strings add nothing)."""
    return " ".join(field for field in fields if isinstance(field, str) and field)


# -- non-2xx responses ---------------------------------------------------------------------------------------


def _read_error_body(text: str) -> tuple[str | None, str, Mapping[str, object] | None] | None:
    """``(message, detail, google)`` from a JSON error body (``google``: its ``google.rpc.Status``, if it is one),
    or None when the body is not JSON at all."""
    try:
        parsed: object = json.loads(text.lstrip("\ufeff"))
    except (ValueError, RecursionError):  # JSONDecodeError, an over-long integer literal, absurd nesting
        return None
    google = google_error(parsed)  # also [{"error": {...}}], as the Gemini API sends some errors
    if google is not None:
        parsed = {"error": google}
    if not isinstance(parsed, dict):
        return None, "", None
    error = parsed.get("error")
    code: object = None
    kind: object = None
    message: str | None = None
    if isinstance(error, dict):
        code, kind, message = error.get("code"), error.get("type"), _non_empty(error.get("message"))
    elif isinstance(error, str):
        message = _non_empty(error)
    if message is None:
        message = _non_empty(parsed.get("message")) or _non_empty(parsed.get("detail"))
    return message, _detail(code, kind, message), google


def _longer_wait(header_ms: int | None, google: Mapping[str, object] | None) -> int | None:
    """The wait: the headers' (``retry-after-ms``, ``Retry-After``) or a ``google.rpc.RetryInfo``'s, the longer when
    both are given: each is the server's own lower bound, and a wait is never cut short (decision 0054)."""
    detail_ms = google_retry_delay_ms(google) if google is not None else None
    waits = [wait for wait in (header_ms, detail_ms) if wait is not None]
    return max(waits) if waits else None


def classify_http_error(
    status: int,
    body: str | bytes,
    headers: Mapping[str, str] | None = None,
    *,
    api_key: str | None = None,
) -> Failure:
    """A non-2xx response as a ``Failure``: the code of the first matching rule, the provider's message.

    ``status``, ``retry_after_ms`` (from ``retry-after-ms``, else ``Retry-After``), ``request_id`` and
    ``should_retry`` (``x-should-retry``) are carried. The message never
    contains ``api_key`` (replaced by ``[redacted]``) and is shorter than 500 characters. The module
    docstring lists the rules and says what happens with a body that is not JSON.
    """
    text = body if isinstance(body, str) else bytes(body).decode("utf-8", errors="replace")
    read = _read_error_body(text)
    google: Mapping[str, object] | None = None
    if read is None:
        message, detail = None, (text if len(text) <= RAW_TEXT_SCAN_CHARS else "")
    else:
        message, detail, google = read

    overflow = CONTEXT_OVERFLOW_WORDING.search(detail) is not None
    by_google = google_code(google, status, overflow=overflow) if google is not None else None
    if status in (401, 403):
        code: str = Code.AUTH
    elif by_google is not None:
        code = by_google
    elif status == 413:
        code = Code.INVALID_REQUEST
    elif QUOTA_WORDING.search(detail):
        code = Code.QUOTA
    elif status == 429:
        code = Code.RATE_LIMIT
    elif status == 400:
        code = Code.CONTEXT_WINDOW_EXCEEDED if overflow else Code.INVALID_REQUEST
    elif status >= 500:
        code = Code.SERVER
    else:
        code = http_status_code(status)

    facts = headers if headers is not None else {}
    return Failure(
        code=code,
        message=_redacted(message or f"API error (HTTP {status})", api_key),
        status=status,
        retry_after_ms=_longer_wait(retry_after_from(facts), google),
        request_id=request_id_from(facts),
        should_retry=parse_should_retry(header(facts, "x-should-retry")),
    )


# -- in-band errors ------------------------------------------------------------------------------------------

_STATUS_KEYS = ("status_code", "status", "code")
_AUTH_TYPES = frozenset({"authentication_error", "permission_error"})
_SERVER_TYPES = frozenset({"api_error", "overloaded_error", "server_error"})


def _status_in(error: Mapping[object, object]) -> int | None:
    """An HTTP status the error object states about itself: an int 100..599 under a status-like key."""
    for key in _STATUS_KEYS:
        value = error.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _render(error: object) -> str:
    """A short JSON rendering of an error object without a message, or the generic message."""
    if isinstance(error, str):
        return _FALLBACK_INBAND_MESSAGE  # a non-empty string error is already its own message
    if error is None or (isinstance(error, dict | list | tuple) and not error):
        return _FALLBACK_INBAND_MESSAGE
    try:
        rendered = json.dumps(error, ensure_ascii=False, default=repr)
    except Exception:  # non-string keys, a cycle, absurd depth, a __repr__ that raises: never fail here
        return _FALLBACK_INBAND_MESSAGE
    return rendered or _FALLBACK_INBAND_MESSAGE


OWN_ERROR_TYPE = "llm_stream_error"
"""The ``type`` of the in-band error events this library writes (the sanitizing transport, the proxy): their
``code`` is one of ours and is kept as it is, so a client of the library behind its own proxy sees the same codes."""
_FIXED_CODES = frozenset(Code)
_HTTP_FAMILY = re.compile(r"HTTP_[1-5][0-9][0-9]")
_NAMED_TYPES = _AUTH_TYPES | _SERVER_TYPES | {"rate_limit_error", "invalid_request_error", OWN_ERROR_TYPE}
_TYPE_OF_CODE = {  # the OpenAI error codes that say what a rule's type says
    "rate_limit_exceeded": "rate_limit_error",
    "server_error": "server_error",
    "invalid_prompt": "invalid_request_error",
    "invalid_request_error": "invalid_request_error",
}


def classify_inband_error(error: object, *, status: int | None = None) -> Failure:
    """An in-band error (a payload's top-level ``"error"``: a dict, a string, anything) as a ``Failure``.

    When the caller gives no ``status``, it is read from the object itself: ``status_code``, ``status`` or
    ``code`` holding an int 100..599 (OpenRouter sends ``{"code": 400, "message": ...}``, Groq
    ``"status_code": 400``). The message is ``error["message"]`` (or the error itself when it is a string),
    else a short JSON rendering of the object, else ``provider reported an error``. The module docstring
    lists the rules.
    """
    kind: str | None = None
    message: str | None = None
    detail = ""
    unwrapped = google_error(error)  # [{"error": {...}}] or {"error": {...}} handed whole
    if unwrapped is not None:
        error = unwrapped
    google = error if isinstance(error, Mapping) and is_google(error) else None
    if isinstance(error, Mapping):
        if status is None:
            status = _status_in(error)
        raw_kind = error.get("type")
        kind = raw_kind if isinstance(raw_kind, str) else None
        raw_code = error.get("code")
        if kind not in _NAMED_TYPES and isinstance(raw_code, str) and raw_code in _TYPE_OF_CODE:
            kind = _TYPE_OF_CODE[raw_code]
        message = _non_empty(error.get("message"))
        detail = _detail(error.get("code"), kind, message)
    elif isinstance(error, str):
        message = _non_empty(error)
        detail = error

    own = error.get("code") if isinstance(error, Mapping) and kind == OWN_ERROR_TYPE else None
    overflow = CONTEXT_OVERFLOW_WORDING.search(detail) is not None
    by_google = google_code(google, status, overflow=overflow) if google is not None else None
    if isinstance(own, str) and (own in _FIXED_CODES or _HTTP_FAMILY.fullmatch(own)):
        code: str = own
    elif by_google is not None:
        code = by_google
    elif status in (401, 403) or kind in _AUTH_TYPES:
        code = Code.AUTH
    elif status == 402 or QUOTA_WORDING.search(detail):
        code = Code.QUOTA
    elif status == 429 or kind == "rate_limit_error":
        code = Code.RATE_LIMIT
    elif overflow:
        code = Code.CONTEXT_WINDOW_EXCEEDED
    elif status in (400, 413) or kind == "invalid_request_error":
        code = Code.INVALID_REQUEST
    elif status is None or status >= 500 or kind in _SERVER_TYPES:
        code = Code.SERVER
    else:
        code = http_status_code(status)

    return Failure(
        code=code,
        message=_redacted(message or _render(error)),
        status=status,
        retry_after_ms=google_retry_delay_ms(google) if google is not None else None,
    )
