"""The interface every wire format's stream repairer speaks (``StreamRepair``), and what the transport and the proxy
answer with when a stream fails before any byte was passed on (``error_response``).

A repairer is sans I/O: upstream body bytes in, the bytes to forward now out. It forwards each upstream event's own
bytes unless a rule must change it (docs/decisions/0032-repair-dont-rewrite.md). One repairer serves one upstream
attempt; the transport picks its class by the request's path (``_formats.py``).
"""

from __future__ import annotations

import json
from typing import Protocol

import attrs

from operators import Code, Failure, Finish, Limits, RetryPolicy
from operators.extend import OWN_ERROR_TYPE

__all__ = ["ErrorBody", "ErrorResponse", "ErrorStatus", "RepairFactory", "StreamRepair", "error_response",
           "error_status", "openai_error_body"]


class StreamRepair(Protocol):
    """One upstream attempt of one streamed response, repaired in its own wire format.

    - ``feed(data)``: upstream body bytes in (split anywhere), the bytes to forward now out (maybe ``b""``);
    - ``close()``: the upstream body ended; the rest. A stream that never reached its finish ends with the in-band
      error event in its format's shape (chat: ``data: {"error": ...}``; Messages: ``event: error``; Responses:
      ``event: error``);
    - ``fail(failure)``: the upstream broke off (a timeout, a reset); the rest, ending with the in-band error event;
    - ``failure``: the stream-level failure found so far (``None`` while the stream is good);
    - ``finish``: the stream's finish once known (``None`` before);
    - ``forwarded``: set by the transport once a byte went to the client (after that a failure can only be an
      in-band error event; before it, it becomes an HTTP error response, ``error_response``);
    - ``dispose()``: release what the repairer holds (idempotent).
    """

    forwarded: bool

    def feed(self, data: bytes) -> bytes: ...

    def close(self) -> bytes: ...

    def fail(self, failure: Failure) -> bytes: ...

    @property
    def failure(self) -> Failure | None: ...

    @property
    def finish(self) -> Finish | None: ...

    def dispose(self) -> None: ...


class RepairFactory(Protocol):
    """A repairer class's constructor: ``limits`` bound what the repairer holds (one open event, ``max_event_bytes``;
    what waits to be forwarded, ``max_text_bytes``; a call's arguments before its identity, ``max_arguments_bytes``;
    ``max_tool_calls``), ending ``LIMIT_EXCEEDED``; text and arguments it forwards are not counted against them
    (decision 0036's amendment). ``api_key`` (the request's own) is redacted from whatever it re-encodes or
    forwards."""

    def __call__(self, *, limits: Limits | None = None, api_key: str | None = None) -> StreamRepair: ...


class ErrorBody(Protocol):
    """The HTTP error body for ``failure`` in the API's own error shape (OpenAI's for chat completions and Responses,
    Anthropic's for Messages, Google's for Gemini), naming our code."""

    def __call__(self, failure: Failure) -> bytes: ...


class ErrorStatus(Protocol):
    """The HTTP status a format answers ``failure`` with (``error_status`` for the formats whose SDKs honour
    ``x-should-retry``; Gemini's follows the google-genai SDK's retried statuses). ``failure.should_retry`` is the
    classification ``x-should-retry`` carries."""

    def __call__(self, failure: Failure) -> int: ...


@attrs.frozen
class ErrorResponse:
    """An HTTP error response standing for a stream-level failure found before any byte was passed on."""

    status: int
    headers: dict[str, str]
    body: bytes


_STATUS: dict[str, int] = {Code.TIMEOUT: 504, Code.RATE_LIMIT: 429}
"""The status for a failure that has none of its own; every other code is a 502 (a bad upstream answer). The SDKs
retry 408, 409, 429 and >= 500 unless ``x-should-retry`` says otherwise."""


def error_response(failure: Failure, body: ErrorBody, policy: RetryPolicy | None = None,
                   status: ErrorStatus | None = None) -> ErrorResponse:
    """The HTTP error for ``failure``: ``status`` of it (by default ``error_status``: its own status if it came with
    one, >= 400, else 502, 504 for a timeout, 429 for a rate limit); ``x-should-retry`` from ``policy``'s
    classification (default ``RetryPolicy()``), ``retry-after-ms`` when known. The status and the body see the
    failure with that classification as its ``should_retry``."""
    retryable = (policy or RetryPolicy()).is_retryable(failure)
    settled = attrs.evolve(failure, should_retry=retryable)
    headers = {"content-type": "application/json", "x-should-retry": "true" if retryable else "false"}
    if failure.retry_after_ms is not None and failure.retry_after_ms >= 0:
        headers["retry-after-ms"] = str(int(failure.retry_after_ms))
    return ErrorResponse((status or error_status)(settled), headers, body(settled))


def error_status(failure: Failure) -> int:
    """The HTTP status ``error_response`` answers ``failure`` with: its own (>= 400), else 504 for a timeout, 429 for
    a rate limit, 502 for anything else."""
    if failure.status is not None and failure.status >= 400:
        return failure.status
    return _STATUS.get(failure.code, 502)


def openai_error_body(failure: Failure) -> bytes:
    """OpenAI's error shape (chat completions and Responses): ``{"error": {"message", "type", "code"}}``."""
    error = {"message": f"{failure.code}: {failure.message}", "type": OWN_ERROR_TYPE, "code": failure.code}
    return json.dumps({"error": error}, ensure_ascii=False).encode()
