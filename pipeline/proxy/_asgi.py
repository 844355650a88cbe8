"""What the proxy's ASGI side shares: the ASGI types, the proxy's own answers (``Refused``, ``error_response``) and
the hang-up extension its protocol gives each request (``HANG_UP``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from operators import Failure, LlmStreamError

from ..sanitize import error_body

__all__ = ["HANG_UP", "Receive", "Refused", "Scope", "Send", "error_response"]

HANG_UP = "llm_stream.hang_up"
"""A scope extension of the proxy's protocol: ``gone()``, a future done when the client's connection is gone."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Refused(LlmStreamError):
    """A request answered by the proxy itself, before (or instead of) the upstream."""

    def __init__(self, status: int, code: str, message: str, *, reason: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status, self.code, self.reason, self.headers = status, code, reason, headers


async def error_response(send: Send, status: int, code: str, message: str, headers: tuple[tuple[str, str], ...] = (),
                         *, path: str = "") -> int:
    """Our error, with our code, in the error shape of the API ``path`` belongs to (``pipeline.sanitize.error_body``:
    Anthropic's on ``/v1/messages``, Google's on Gemini's paths with ``status`` as its ``code``, OpenAI's elsewhere);
    returns its size."""
    body = error_body(path, Failure(code, message, status=status))
    out = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    out += [(k.encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    return len(body)
