"""The HTTP error profiles: an OpenAI-style JSON error with the status a gateway sends, or a page instead of a stream.

Each function takes ``ScriptOptions`` and returns a ``Script``; ``_profiles.py`` names them and describes them.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._json import dumps
from ._errors import error_body
from ._script import JSON_CONTENT_TYPE, Script, ScriptOptions, Write

__all__ = ["auth", "context", "error_script", "html_200", "quota", "rate_limit", "server_error", "unavailable"]


def error_script(
    status: int,
    message: str,
    error_type: str,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Script:
    """An OpenAI-style JSON error response: ``{"error": {"message", "type", "param", "code"}}``."""
    body = error_body(message, error_type, code, param)
    return Script(status, JSON_CONTENT_TYPE, (Write(dumps(body).encode()),), dict(headers or {}))


def rate_limit(options: ScriptOptions) -> Script:
    return error_script(
        429,
        "Rate limit reached for requests on the emulator. Please try again in 2s.",
        "requests",
        "rate_limit_exceeded",
        headers={"retry-after": options.retry_after, "x-ratelimit-remaining-requests": "0"},
    )


def server_error(options: ScriptOptions) -> Script:
    return error_script(500, "The server had an error while processing your request. Sorry about that!", "server_error")


def unavailable(options: ScriptOptions) -> Script:
    return error_script(503, "The engine is currently overloaded, please try again later.", "server_error")


def auth(options: ScriptOptions) -> Script:
    return error_script(
        401,
        "Incorrect API key provided: te**st. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )


def quota(options: ScriptOptions) -> Script:
    return error_script(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    )


def context(options: ScriptOptions) -> Script:
    return error_script(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9731 tokens. "
        "Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


_HTML_PAGE = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def html_200(options: ScriptOptions) -> Script:
    return Script(200, "text/html; charset=utf-8", (Write(_HTML_PAGE.encode()),))
