"""The pipeline side of the wire-format registry: one ``WireFormat`` record per format, keyed by the names of
``operators.FORMATS`` (the operators side: each format's name, detection and parser, ``operators/_parse_format.py``).

Who reads a record: ``ChatClient`` (``api=`` is a record's name: the path it posts to, the headers, the body
builder), ``ClientConfig`` (which names exist), the emulator (the routes it serves, the title), the CLI (``chat
--api``, ``replay --format``) and the sanitizer (the path a request it repairs ends with). What only a layer above
knows of a format is that layer's own record keyed by the same name: the emulator's profiles
(``pipeline/emulator/_formats.py``), the sanitizer's repairer and error body (``pipeline/sanitize/_formats.py``).

Adding a format: docs/architecture.md, "Adding a wire format".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeAlias

import attrs

from operators import FORMATS, Format

from ._requests import Builder, chat_request
from .messages import messages_request
from .responses import responses_request

__all__ = ["ANTHROPIC_VERSION", "APIS", "WIRE_FORMATS", "Api", "WireFormat", "wire_format"]

Api: TypeAlias = Format
"""A wire format's name, as ``ChatClient(api=...)`` takes it: ``"chat"``, ``"messages"`` or ``"responses"``."""

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header of a Messages API request, unless the client's ``headers`` give one."""


def _frozen(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class WireFormat:
    """What the pipeline needs to know of one wire format."""

    name: Format
    """The format's name in ``operators.FORMATS`` (its parser: ``operators.parse_stream(name)``)."""
    title: str
    """How messages name it: ``"the Anthropic Messages format"``."""
    path: str
    """Where a request is posted under the base URL (``"/messages"``); the emulator serves it under ``/v1`` too."""
    build: Builder
    """The streaming request body from the chat-shaped conversation (``build(messages, model=..., options=...)``)."""
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen)
    """Headers every request carries unless the caller's headers name them."""
    key_headers: tuple[str, ...] = ()
    """Headers that carry the API key as it is, besides ``Authorization: Bearer <key>``."""


_RECORDS = (
    WireFormat("chat", "the OpenAI chat completions format", "/chat/completions", chat_request),
    WireFormat(
        "messages",
        "the Anthropic Messages format",
        "/messages",
        messages_request,
        headers={"anthropic-version": ANTHROPIC_VERSION},
        key_headers=("x-api-key",),  # Anthropic reads x-api-key; gateways differ, so both are sent
    ),
    WireFormat("responses", "the OpenAI Responses format", "/responses", responses_request),
)

WIRE_FORMATS: Final[Mapping[str, WireFormat]] = MappingProxyType({record.name: record for record in _RECORDS})
"""Format name -> its record, in the order of ``operators.FORMATS``."""

if tuple(WIRE_FORMATS) != FORMATS:  # one name per format on both sides (tests/pipeline/client/test_client_apis.py)
    raise ImportError(f"the pipeline's wire formats {tuple(WIRE_FORMATS)} are not the parsers' {FORMATS}")

APIS: Final[tuple[Api, ...]] = FORMATS
"""The names ``ChatClient(api=...)`` accepts: exactly the formats the parsers read."""


def wire_format(name: object) -> WireFormat:
    """The record of ``name``; ``ValueError`` naming the known formats for any other name."""
    record = WIRE_FORMATS.get(name) if isinstance(name, str) else None
    if record is None:
        known = ", ".join(repr(known) for known in WIRE_FORMATS)
        raise ValueError(f"api is one of {known}, got {name!r:.80}")
    return record
