"""The emulator's two private exceptions and the OpenAI-style error body they (and the error profiles) send.

Both derive from ``LlmStreamError``, the library's one exception root; neither reaches a caller of the public face.
"""

from __future__ import annotations

from typing import Any

from operators import LlmStreamError

__all__ = ["ConnectionCutError", "RequestError", "error_body"]


def error_body(message: str, error_type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``, the shape OpenAI answers a failed request with."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


class ConnectionCutError(LlmStreamError):
    """Raised inside a streaming response to make the server drop the connection (logged by nobody)."""


class RequestError(LlmStreamError):
    """A request the emulator refuses: answered with ``status`` and an ``invalid_request_error`` body."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> dict[str, Any]:
        return error_body(self.message, "invalid_request_error", self.code, self.param)
