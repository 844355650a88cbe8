"""How a wire format's requests are addressed and how one asks to stream: the pieces a ``WireFormat`` record is
built from (``_registry.py``), so that the transport, the proxy, the client and the emulator read them there.

- A **path template** is where a request is posted under the base URL; it may carry ``{model}``
  (``"/models/{model}:streamGenerateContent"``). ``path_pattern`` makes the matcher from a URL path to the format:
  a path matches when it ends with the template, ``{model}`` standing for one non-empty path segment. A record's
  query parameters follow the path in the URL (``query_suffix``: ``?alt=sse``).
- A **stream test** says whether a request asks for a stream: ``(method, path, query, body) -> bool``, the body as
  the bytes sent or already decoded to a mapping. ``body_says_stream`` is the OpenAI and Anthropic way (a ``POST``
  whose JSON body says ``"stream": true``); ``url_says_stream(...)`` is the way of APIs that stream by their URL
  (Gemini: ``:streamGenerateContent`` and ``alt=sse``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias
from urllib.parse import parse_qsl, urlencode

import msgspec

__all__ = ["MODEL", "StreamTest", "body_says_stream", "fill_path", "path_pattern", "query_suffix", "url_says_stream"]

MODEL = "{model}"
"""The placeholder a path template may carry: the request's model, one path segment."""

StreamTest: TypeAlias = Callable[[str, str, str, "bytes | Mapping[str, Any]"], bool]
"""``(method, path, query, body) -> bool``: whether a request to the format's path asks for a stream."""


def path_pattern(template: str) -> re.Pattern[str]:
    """The matcher of a path template: a URL path (trailing ``/`` removed) that ends with the template, ``{model}``
    matching one non-empty segment. A template without ``{model}`` matches exactly the paths ``str.endswith``
    accepts."""
    literal = [re.escape(part) for part in template.split(MODEL)]
    return re.compile("[^/]+".join(literal) + r"\Z")


def family_pattern(template: str) -> re.Pattern[str]:
    """The matcher of a path under the API's base that belongs to the same endpoint family as the template: the
    template's segments from the start, ``{model}`` one non-empty segment, a last segment's ``:method`` any method, and
    anything after (``/messages`` matches ``messages/count_tokens``; ``/models/{model}:streamGenerateContent`` matches
    ``models/m:countTokens`` but not OpenAI's ``models`` or ``models/gpt-4o``)."""
    stem, colon, _ = template.strip("/").rpartition(":")
    head = stem if colon and "/" not in template.rpartition(":")[2] else template.strip("/")
    literal = "[^/]+".join(re.escape(part) for part in head.split(MODEL))
    method = ":[^/]+" if head is stem and colon else ""
    return re.compile(f"{literal}{method}(?:/|\\Z)")


def fill_path(template: str, model: str | None) -> str:
    """The template with ``{model}`` replaced by ``model`` (``ValueError`` when it needs one and none is given)."""
    if MODEL not in template:
        return template
    if not model:
        raise ValueError(f"the path {template} carries the model: give one")
    return template.replace(MODEL, model)


def query_suffix(query: Mapping[str, str]) -> str:
    """``?`` and the parameters, encoded in order, for a format whose requests carry a query (``?alt=sse``); ``""``
    for none."""
    return f"?{urlencode(dict(query))}" if query else ""


class _Streamed(msgspec.Struct):
    stream: Any = None


def body_says_stream(method: str, path: str, query: str, body: bytes | Mapping[str, Any]) -> bool:
    """A ``POST`` whose JSON body says ``"stream": true`` (chat completions, Messages, Responses)."""
    if method != "POST":
        return False
    if isinstance(body, Mapping):
        return body.get("stream") is True
    try:
        decoded = msgspec.json.decode(body, type=_Streamed)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return decoded.stream is True


def url_says_stream(suffix: str, query: Mapping[str, str]) -> StreamTest:
    """A ``POST`` whose path ends with ``suffix`` and whose query has each of ``query``'s parameters with its value
    (Gemini: ``url_says_stream(":streamGenerateContent", {"alt": "sse"})``); the body is not read."""
    wanted = dict(query)

    def says(method: str, path: str, query_string: str, body: bytes | Mapping[str, Any]) -> bool:
        if method != "POST" or not path.rstrip("/").endswith(suffix):
            return False
        given = dict(parse_qsl(query_string, keep_blank_values=True))
        return all(given.get(name) == value for name, value in wanted.items())

    return says
