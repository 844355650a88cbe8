"""Which repairer a request's stream gets: the format whose record (``pipeline.formats.WIRE_REGISTRY``) the request's
path matches and says it asks for a stream (chat completions, Messages, Responses: a ``POST`` whose JSON body says
``"stream": true``). Each format names its ``StreamRepair`` class and the HTTP error body in its API's own shape
(``_repair.py``); where the request's key is (``api_key``) is the registry's too.

The formats, their paths and how they ask to stream are the wire-format registry's: a format added there without a
repairer here fails at import. The repairers stay on this side: ``pipeline.formats`` sits below
``pipeline.sanitize`` (docs/architecture.md), so its records cannot name them without an import cycle."""

from __future__ import annotations

from typing import Any

import attrs

from operators import Failure, Limits
from pipeline.formats import WIRE_FORMATS, WIRE_REGISTRY

from ._chat_repair import ChatRepair
from ._repair import ErrorBody, ErrorStatus, StreamRepair, error_status, openai_error_body
from .gemini import GeminiRepair, gemini_error_body, gemini_error_status
from .messages import MessagesRepair, messages_error_body
from .responses import ResponsesRepair, responses_error_body

__all__ = ["STREAM_FORMATS", "StreamFormat", "api_key", "error_body", "streamed_format"]


def _chat(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return ChatRepair(limits=limits, api_key=api_key, strict=strict)


def _messages(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return MessagesRepair(limits=limits, api_key=api_key, strict=strict)


def _responses(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return ResponsesRepair(limits=limits, api_key=api_key, strict=strict)


def _gemini(*, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
    return GeminiRepair(limits=limits, api_key=api_key, strict=strict)


@attrs.frozen
class StreamFormat:
    """One wire format the transport and the proxy repair: its path template, its repairer (built with
    the request's limits and key; ``strict`` is the library's outcome policy where the format has one), its
    error body and the HTTP status it answers a failure found before the first byte with."""

    name: str
    path: str
    make: Any
    """``(*, limits, api_key, strict) -> StreamRepair``."""
    error_body: ErrorBody
    error_status: ErrorStatus = error_status

    def repair(self, *, limits: Limits | None, api_key: str | None, strict: bool) -> StreamRepair:
        repair: StreamRepair = self.make(limits=limits, api_key=api_key, strict=strict)
        return repair


_REPAIRS: dict[str, tuple[Any, ErrorBody, ErrorStatus]] = {
    "chat": (_chat, openai_error_body, error_status),
    "messages": (_messages, messages_error_body, error_status),
    "responses": (_responses, responses_error_body, error_status),
    "gemini": (_gemini, gemini_error_body, gemini_error_status),  # google-genai reads the status, no header
}

if set(_REPAIRS) != set(WIRE_FORMATS):
    raise ImportError(f"the sanitizer repairs {sorted(_REPAIRS)}, the registry has {sorted(WIRE_FORMATS)}")

STREAM_FORMATS: tuple[StreamFormat, ...] = tuple(
    StreamFormat(name, record.path, *_REPAIRS[name]) for name, record in WIRE_FORMATS.items()
)


def streamed_format(method: str, path: str, content: bytes, query: str = "") -> StreamFormat | None:
    """The format of a request that asks for a stream (``WIRE_REGISTRY.streamed``: a path the format's template
    matches, and the format's own test: ``"stream": true`` in the body for the three formats), else ``None``."""
    record = WIRE_REGISTRY.streamed(method, path, query, content)
    if record is None:
        return None
    return next((found for found in STREAM_FORMATS if found.name == record.name), None)


def api_key(headers: Any) -> str | None:
    """The key a request carries (``headers``: its ``httpx`` headers), in any key header a record names
    (``WIRE_REGISTRY.api_key``)."""
    return WIRE_REGISTRY.api_key(headers.get)


def error_body(path: str, failure: Failure) -> bytes:
    """``failure`` as the HTTP error body of the API a request ``path`` belongs to (the format whose template the path
    ends with: Anthropic's shape on ``.../messages``), OpenAI's for any other path: what the transport answers a
    failure found before the first byte with, and the proxy its own refusals."""
    record = WIRE_REGISTRY.by_path(path)
    found = next((known for known in STREAM_FORMATS if record is not None and known.name == record.name), None)
    return (openai_error_body if found is None else found.error_body)(failure)
