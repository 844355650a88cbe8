"""The pipeline side of the wire-format registry: one ``WireFormat`` record per format, keyed by the names of
``operators.FORMATS`` (the operators side: each format's name, detection and parser, ``operators/_parse_format.py``).

Who reads a record: ``ChatClient`` (``api=`` is a record's name: the path and query it posts to, the headers, the
key header and whether the key also goes as ``Authorization: Bearer``, the body builder), ``ClientConfig`` (which
names exist), the emulator (the routes it serves, the title, whether a request asks to stream), the CLI (``chat
--api``, ``replay --format``), the sanitizing transport (which requests it repairs, where their key is) and the proxy
(its header allow-list, the upstream key's header, span names); all but the first three through the lookups over
every record, ``WireRegistry`` (``_lookup.py``). What only a layer above
knows of a format is that layer's own record keyed by the same name: the emulator's profiles
(``pipeline/emulator/_formats.py``), the sanitizer's repairer and error body (``pipeline/sanitize/_formats.py``).

Adding a format: docs/architecture.md, "Adding a wire format".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, TypeAlias

import attrs

from operators import FORMATS, Format

from ._addressing import StreamTest, body_says_stream, fill_path, path_pattern, query_suffix, url_says_stream
from ._requests import Builder, chat_request
from .gemini import gemini_request
from .messages import messages_request
from .responses import responses_request

__all__ = ["ANTHROPIC_VERSION", "APIS", "WIRE_FORMATS", "Api", "WireFormat", "wire_format"]

Api: TypeAlias = Format
"""A wire format's name, as ``ChatClient(api=...)`` takes it: one of ``APIS`` (``"chat"``, ``"messages"``, ...)."""

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
    """The path template: where a request is posted under the base URL (``"/messages"``), ``{model}`` standing for
    the model where the format's path carries it (``"/models/{model}:streamGenerateContent"``). A URL path that ends
    with it is the format's (``matches``); the emulator serves it under ``/v1`` too."""
    build: Builder
    """The streaming request body from the chat-shaped conversation (``build(messages, model=..., options=...)``)."""
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen)
    """Headers every request carries unless the caller's headers name them."""
    streams: StreamTest = body_says_stream
    """Whether a request asks for a stream: ``streams(method, path, query, body)``; by default a ``POST`` whose JSON
    body says ``"stream": true``."""
    key_header: str = "authorization"
    """The header the format's server reads the key from: ``authorization`` (as ``Bearer <key>``) or a header that
    carries the key as it is (``x-api-key``). The client sends ``Authorization: Bearer <key>`` (unless ``bearer`` is
    false) and this header besides; the proxy sends its upstream key in it."""
    forward_headers: tuple[str, ...] = ()
    """The format's own request headers (version, beta, organisation) the proxy forwards."""
    operation: str = "chat"
    """The OpenTelemetry GenAI ``gen_ai.operation.name`` of a request (the proxy's spans): ``chat``, or
    ``generate_content`` for an API that names it so."""
    secret_headers: tuple[str, ...] = ()
    """Other headers that carry a credential: never forwarded by the proxy (but as the client's own key), never
    logged, their value redacted as a key."""
    query: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen)
    """Query parameters every request's URL carries after the path (Gemini's ``alt=sse``, without which
    ``:streamGenerateContent`` answers one JSON array instead of a stream); none by default."""
    bearer: bool = attrs.field(default=True, kw_only=True)
    """Whether the client also sends the key as ``Authorization: Bearer <key>`` (gateways differ in the header they
    read). False for a server that reads ``Authorization`` as something else (Google reads it as an OAuth token and
    refuses an API key there): the key then goes in ``key_header`` only, which must not be ``authorization``."""
    _pattern: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)

    @_pattern.default
    def _compile(self) -> re.Pattern[str]:
        return path_pattern(self.path)

    @bearer.validator
    def _key_goes_somewhere(self, _: object, bearer: bool) -> None:
        if not bearer and self.key_header == "authorization":
            raise ValueError(f"the {self.name} format sends no Authorization: Bearer key (bearer=False), so its "
                             "key_header must be another header")

    @property
    def key_headers(self) -> tuple[str, ...]:
        """Headers that carry the API key as it is, besides ``Authorization: Bearer <key>``."""
        return () if self.key_header == "authorization" else (self.key_header,)

    def url_path(self, model: str | None = None) -> str:
        """The path a request for ``model`` is posted to (the template, ``{model}`` filled in)."""
        return fill_path(self.path, model)

    def target(self, model: str | None = None) -> str:
        """The path and query a request for ``model`` is posted to under the base URL: ``url_path(model)``, then
        ``?`` and ``query`` when the format has one (``/models/m:streamGenerateContent?alt=sse``)."""
        return self.url_path(model) + query_suffix(self.query)

    def matches(self, path: str) -> bool:
        """A URL path (trailing ``/`` ignored) is one of this format's: it ends with the path template."""
        return self._pattern.search(path.rstrip("/")) is not None

    def asks_stream(self, method: str, path: str, query: str, body: bytes | Mapping[str, Any]) -> bool:
        """A request to this format's path asks for a stream (``streams``)."""
        return self.streams(method, path, query, body)


_OPENAI = ("openai-organization", "openai-project", "openai-beta")


_RECORDS = (
    WireFormat(
        "chat", "the OpenAI chat completions format", "/chat/completions", chat_request, forward_headers=_OPENAI
    ),
    WireFormat(
        "messages",
        "the Anthropic Messages format",
        "/messages",
        messages_request,
        headers={"anthropic-version": ANTHROPIC_VERSION},
        key_header="x-api-key",  # Anthropic reads x-api-key; gateways differ, so the client sends both
        forward_headers=("anthropic-version", "anthropic-beta"),
    ),
    WireFormat("responses", "the OpenAI Responses format", "/responses", responses_request, forward_headers=_OPENAI),
    WireFormat(
        "gemini",
        "Google's Gemini format",
        "/models/{model}:streamGenerateContent",
        gemini_request,
        streams=url_says_stream(":streamGenerateContent", {"alt": "sse"}),
        key_header="x-goog-api-key",
        forward_headers=("x-goog-api-client", "x-goog-user-project"),
        operation="generate_content",
        query={"alt": "sse"},
        bearer=False,  # Google reads Authorization as an OAuth token: the key goes in x-goog-api-key only
    ),
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
