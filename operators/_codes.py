"""The finish codes: every code a failure can carry, whether it is retried by default, and what produces it.

Retry decisions look at ``Failure.code`` only. The table below is the single source of truth: ``docs/protocol.md``
is generated from ``CODES`` and a test fails when the two drift apart.

    Finish codes
    ├── retryable by default (RetryPolicy.retryable_codes)
    │   ├── EMPTY_RESPONSE ........ a stop with no block opened; a 2xx with no body
    │   ├── MALFORMED_TOOL_CALL ... a tool call still lacking an id or a name at [DONE]; a Responses built-in
    │   │                           call whose item never finished (its action unknown)
    │   ├── RATE_LIMIT ............ HTTP 429 (or an in-band rate_limit_error)
    │   ├── SERVER ................ HTTP >= 500; an in-band error without a status
    │   ├── TIMEOUT ............... no byte for the idle timeout (any wait); the attempt's total deadline
    │   ├── TRANSPORT ............. the connection failed or broke
    │   └── STREAM_CLOSED ......... the bytes (or [DONE]) ended before the format's end and before any finish;
    │                               a Messages message_start inside an open message (the first was cut)
    └── not retryable by default
        ├── AUTH .................. HTTP 401 / 403
        ├── QUOTA ................. quota or balance wording; HTTP 402 in-band
        ├── INVALID_REQUEST ....... HTTP 400 / 413
        ├── CONTEXT_WINDOW_EXCEEDED HTTP 400 with context-overflow wording
        ├── HTTP_<status> ......... any other non-2xx status
        ├── MALFORMED_RESPONSE .... a payload that is not JSON or has the wrong shape; a non-SSE 2xx body; a
        │                           stream of another wire format than the one read (named in the message)
        ├── LIMIT_EXCEEDED ........ a response crossed one of its Limits (event, ignored lines, arguments, text, ...)
        ├── CONTENT_FILTER ........ finish_reason "content_filter"
        ├── REFUSAL ............... the model answered with delta.refusal instead of content
        ├── PAUSE_TURN ............ a Messages stop_reason "pause_turn": the provider paused a long server-tool turn
        ├── UNSUPPORTED_OUTPUT .... a response asking the client to act on an item the protocol cannot carry
        │                           (a client-executed tool_search_call, an unknown item type...)
        ├── <UPPER_CASE> .......... any other finish_reason, upper-cased
        ├── ABORTED ............... the caller cancelled (an "aborted" finish, never retried)
        └── UNKNOWN ............... an unexpected exception inside the pipeline
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

import attrs

__all__ = ["CODES", "DEFAULT_RETRYABLE_CODES", "Code", "CodeInfo", "http_status_code"]

class Code(StrEnum):
    """The fixed finish codes. A ``StrEnum``: ``failure.code == RATE_LIMIT`` holds for the plain string a
    ``Failure`` carries, and the two open families (``HTTP_<status>``, an upper-cased finish reason) stay strings."""

    EMPTY_RESPONSE = "EMPTY_RESPONSE"
    MALFORMED_TOOL_CALL = "MALFORMED_TOOL_CALL"
    RATE_LIMIT = "RATE_LIMIT"
    SERVER = "SERVER"
    TIMEOUT = "TIMEOUT"
    TRANSPORT = "TRANSPORT"
    STREAM_CLOSED = "STREAM_CLOSED"
    AUTH = "AUTH"
    QUOTA = "QUOTA"
    INVALID_REQUEST = "INVALID_REQUEST"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    CONTENT_FILTER = "CONTENT_FILTER"
    REFUSAL = "REFUSAL"
    PAUSE_TURN = "PAUSE_TURN"
    UNSUPPORTED_OUTPUT = "UNSUPPORTED_OUTPUT"
    ABORTED = "ABORTED"
    UNKNOWN = "UNKNOWN"


@attrs.frozen
class CodeInfo:
    """One row of the code table."""

    code: str = attrs.field(converter=str)
    retryable: bool
    produced_by: str


_ROWS = (
    CodeInfo(Code.EMPTY_RESPONSE,
        True,
        "a stop finish with no block opened (reasoning counts as content); a 2xx response with no body",
    ),
    CodeInfo(Code.MALFORMED_TOOL_CALL,
        True,
        "a tool call still lacking an id or a name at [DONE] (close_on_done); a Responses apply_patch, shell, "
        "local_shell or computer call whose item never finished before the terminal event (its action unknown)",
    ),
    CodeInfo(
        Code.RATE_LIMIT,
        True,
        "HTTP 429; an in-band error of type rate_limit_error; Google's RESOURCE_EXHAUSTED (its RetryInfo the wait)",
    ),
    CodeInfo(
        Code.SERVER,
        True,
        "HTTP >= 500; an in-band error with no status, or of type api_error / overloaded_error; Google's "
        "UNAVAILABLE / INTERNAL",
    ),
    CodeInfo(
        Code.TIMEOUT,
        True,
        "no byte and no comment for the idle timeout (default 300 s) while connecting, waiting for the status line "
        "and headers, or reading any body; or the attempt's total_timeout (default 600 s) passed; Google's "
        "DEADLINE_EXCEEDED",
    ),
    CodeInfo(Code.TRANSPORT, True, "the connection could not be made or broke mid-stream"),
    CodeInfo(
        Code.STREAM_CLOSED,
        True,
        "the bytes ended before [DONE] and before any finish_reason (parse_sse); a Messages or Responses stream ended "
        "(at the end of the bytes or at a data: [DONE]) before its own end event and before any stop reason; a "
        "Messages message_start with another id inside the open message (the first message was cut)",
    ),
    CodeInfo(
        Code.AUTH,
        False,
        "HTTP 401 / 403; an in-band authentication_error or permission_error; Google's UNAUTHENTICATED / "
        "PERMISSION_DENIED, or API_KEY_INVALID",
    ),
    CodeInfo(
        Code.QUOTA,
        False,
        "quota, balance or credit wording in the error; HTTP 402 in-band; a Google RESOURCE_EXHAUSTED whose quota is "
        "per day, 0 or spent credit",
    ),
    CodeInfo(
        Code.INVALID_REQUEST,
        False,
        "HTTP 400 (no context-overflow wording) or 413; in-band invalid_request_error; Google's INVALID_ARGUMENT, "
        "FAILED_PRECONDITION, OUT_OF_RANGE, NOT_FOUND",
    ),
    CodeInfo(Code.CONTEXT_WINDOW_EXCEEDED, False, "HTTP 400 or an in-band error with context-overflow wording"),
    CodeInfo("HTTP_<status>", False, "any other non-2xx HTTP status, for example HTTP_404"),
    CodeInfo(Code.MALFORMED_RESPONSE,
        False,
        "a payload that is not JSON or has the wrong shape (parse_sse); a 2xx body that is not SSE; a stream of "
        "another wire format than the one read (a chat-completions stream read as Responses...): the message names "
        "the format seen and the format= that reads it; the same request would get the same bytes",
    ),
    CodeInfo(Code.LIMIT_EXCEEDED,
        False,
        "one SSE line or event, the lines carrying nothing, one call's arguments, the response's text, its tool "
        "calls or an error body crossed its Limits value; the message names the limit and the value",
    ),
    CodeInfo(Code.CONTENT_FILTER, False, 'finish_reason "content_filter" (classify_finish)'),
    CodeInfo(Code.REFUSAL, False, "the model answered in delta.refusal instead of content (classify_finish)"),
    CodeInfo(
        Code.PAUSE_TURN,
        False,
        'a Messages stop_reason "pause_turn": the provider paused a long server-tool turn; continue it by sending the '
        "answer back as the next assistant message (a retry would start it over)",
    ),
    CodeInfo(
        Code.UNSUPPORTED_OUTPUT,
        False,
        "a Responses output item the client must act on that the protocol does not carry as a tool call (a "
        "tool_search_call with execution client, an item type it does not know...; custom, apply_patch, shell, "
        "local_shell, computer and mcp_approval calls are carried, decision 0072), named in the message: the same "
        "request would get it again",
    ),
    CodeInfo("<FINISH_REASON>", False, 'any other finish_reason, upper-cased: "mystery_reason" gives MYSTERY_REASON'),
    CodeInfo(Code.ABORTED, False, "the caller cancelled the request; carried by an aborted finish, never retried"),
    CodeInfo(Code.UNKNOWN, False, "an unexpected exception inside the pipeline, reported with its type and message"),
)

CODES: Mapping[str, CodeInfo] = MappingProxyType({row.code: row for row in _ROWS})
"""Every finish code by name, in table order."""

DEFAULT_RETRYABLE_CODES: tuple[str, ...] = tuple(row.code for row in _ROWS if row.retryable)
"""The codes a ``normal`` RetryPolicy retries unless told otherwise."""


def http_status_code(status: int) -> str:
    """The code for a non-2xx status that no other rule claims: ``HTTP_<status>``."""
    return f"HTTP_{status}"
