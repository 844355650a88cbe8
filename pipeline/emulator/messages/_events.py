"""The Anthropic Messages event builder: ``MessageEvents`` writes the events of one stream, as the real API sends them.

Every event is named after its payload's ``type`` (``event: content_block_delta`` / ``data: {"type":
"content_block_delta", ...}``). Usage: ``input_tokens`` excludes the cache, ``cache_read_input_tokens`` =
``CACHE_READ_TOKENS``, ``cache_creation_input_tokens`` = ``CACHE_WRITE_TOKENS``. The profiles
(``_profiles.py``) are written with it; ``anthropic_error`` is the API's error shape, ``messages_error_shape`` a
refused request in it.
"""

from __future__ import annotations

from typing import Any

from ..._json import dumps
from .._errors import RequestError
from .._script import ScriptOptions
from .._sse import Event, Json, raw_event

__all__ = ["CACHE_READ_TOKENS", "CACHE_WRITE_TOKENS", "MessageEvents", "anthropic_error", "messages_error_shape"]

CACHE_READ_TOKENS = 16
"""``cache_read_input_tokens`` of every Messages stream."""
CACHE_WRITE_TOKENS = 8
"""``cache_creation_input_tokens`` of every Messages stream."""


def anthropic_error(error_type: str, message: str) -> Json:
    """``{"type": "error", "error": {"type", "message"}}``: the Messages API's error shape (HTTP and in-band)."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error"}


def messages_error_shape(error: RequestError) -> Json:
    """A request the emulator refuses, in the Messages API's error shape (``invalid_request_error`` for a 400,
    ``not_found_error`` for a 404, else ``api_error``)."""
    return anthropic_error(_ERROR_TYPES.get(error.status, "api_error"), error.message)


class MessageEvents:
    """Builds the events of one Messages stream (one message id, model and usage)."""

    def __init__(self, options: ScriptOptions) -> None:
        self.options = options
        self.message_id = "msg_emu" + options.completion_id[-24:]

    def tool_id(self, n: int) -> str:
        return f"toolu_emu{n}_{self.message_id[-12:]}"

    @staticmethod
    def event(name: str, payload: Json) -> Event:
        return raw_event(f"event: {name}", f"data: {dumps(payload)}")

    def usage(self, output_tokens: int) -> Json:
        return {
            "input_tokens": self.options.prompt_tokens,
            "cache_creation_input_tokens": CACHE_WRITE_TOKENS,
            "cache_read_input_tokens": CACHE_READ_TOKENS,
            "output_tokens": output_tokens,
        }

    def start(self) -> Event:
        message: Json = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.options.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**self.usage(1), "service_tier": "standard"},
        }
        return self.event("message_start", {"type": "message_start", "message": message})

    def ping(self) -> Event:
        return self.event("ping", {"type": "ping"})

    def block_start(self, index: int, block: Json) -> Event:
        return self.event(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        )

    def text_block(self, index: int) -> Event:
        return self.block_start(index, {"type": "text", "text": ""})

    def tool_block(self, index: int, tool_id: str | None, name: str | None = "get_weather", **extra: Any) -> Event:
        """A ``tool_use`` block start; ``tool_id=None`` leaves the ``id`` out."""
        block: Json = {"type": "tool_use"}
        if tool_id is not None:
            block["id"] = tool_id
        block["name"] = name
        block["input"] = {}
        block.update(extra)
        return self.block_start(index, block)

    def delta(self, index: int, delta: Json) -> Event:
        return self.event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})

    def text(self, index: int, text: str) -> Event:
        return self.delta(index, {"type": "text_delta", "text": text})

    def json(self, index: int, fragment: str) -> Event:
        return self.delta(index, {"type": "input_json_delta", "partial_json": fragment})

    def block_stop(self, index: int) -> Event:
        return self.event("content_block_stop", {"type": "content_block_stop", "index": index})

    def end(self, stop_reason: str, output_tokens: int) -> list[Event]:
        """``message_delta`` with the stop reason and the final usage, then ``message_stop``."""
        delta = {"stop_reason": stop_reason, "stop_sequence": None}
        payload = {"type": "message_delta", "delta": delta, "usage": self.usage(output_tokens)}
        return [self.event("message_delta", payload), self.event("message_stop", {"type": "message_stop"})]

    def error(self, error_type: str, message: str) -> Event:
        return self.event("error", anthropic_error(error_type, message))
