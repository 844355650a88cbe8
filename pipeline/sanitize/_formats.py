"""Which repairer a request's stream gets: by the request's path (``/chat/completions``, ``/messages``,
``/responses``), for a ``POST`` whose JSON body says ``"stream": true``. Each format names its ``StreamRepair``
class and the HTTP error body in its API's own shape (``_repair.py``).

The formats and their paths are the wire-format registry's (``pipeline.formats.WIRE_FORMATS``): a format added there
without a repairer here fails at import. The repairers stay on this side: ``pipeline.formats`` sits below
``pipeline.sanitize`` (docs/architecture.md), so its records cannot name them without an import cycle."""

from __future__ import annotations

from typing import Any

import attrs
import msgspec

from operators import Limits
from pipeline.formats import WIRE_FORMATS

from ._chat_repair import ChatRepair
from ._repair import ErrorBody, StreamRepair, openai_error_body
from .messages import MessagesRepair, messages_error_body
from .responses import ResponsesRepair, responses_error_body

__all__ = ["STREAM_FORMATS", "StreamFormat", "streamed_format"]


def _chat(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return ChatRepair(limits=limits, api_key=api_key, strict=strict)


def _messages(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return MessagesRepair(limits=limits, api_key=api_key, strict=strict)


def _responses(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return ResponsesRepair(limits=limits, api_key=api_key, strict=strict)


@attrs.frozen
class StreamFormat:
    """One wire format the transport and the proxy repair: the path its requests end with, its repairer (built with
    the request's limits and key; ``strict`` is the library's outcome policy where the format has one) and its
    error body."""

    name: str
    path: str
    make: Any
    """``(*, limits, api_key, strict) -> StreamRepair``."""
    error_body: ErrorBody

    def repair(self, *, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
        repair: StreamRepair = self.make(limits=limits, api_key=api_key, strict=strict)
        return repair


_REPAIRS: dict[str, tuple[Any, ErrorBody]] = {
    "chat": (_chat, openai_error_body),
    "messages": (_messages, messages_error_body),
    "responses": (_responses, responses_error_body),
}

if set(_REPAIRS) != set(WIRE_FORMATS):
    raise ImportError(f"the sanitizer repairs {sorted(_REPAIRS)}, the registry has {sorted(WIRE_FORMATS)}")

STREAM_FORMATS: tuple[StreamFormat, ...] = tuple(
    StreamFormat(name, record.path, *_REPAIRS[name]) for name, record in WIRE_FORMATS.items()
)


class _Streamed(msgspec.Struct):
    stream: Any = None


def streamed_format(method: str, path: str, content: bytes) -> StreamFormat | None:
    """The format of a streamed request (``POST`` to a known path with ``"stream": true``), else ``None``."""
    if method != "POST":
        return None
    path = path.rstrip("/")
    found = next((f for f in STREAM_FORMATS if path.endswith(f.path)), None)
    if found is None:
        return None
    try:
        body = msgspec.json.decode(content, type=_Streamed)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return found if body.stream is True else None
