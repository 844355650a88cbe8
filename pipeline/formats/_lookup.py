"""The lookups over every ``WireFormat`` record that the layers above ask instead of keeping tables of their own:
which format a request to a path is and whether it asks for a stream (the sanitizing transport, the proxy's span
names), where a request's key is (the transport's ``api_key``, the proxy's client keys), which headers carry a key
or another credential (never forwarded but as the client's key, never logged), which of the formats' own headers the
proxy forwards, and which header the proxy's upstream key goes in. Building one registers its key headers with the
``llm_stream`` loggers' redacting filter (``pipeline._logging.register_key_headers``: header names, no secret).

``WIRE_REGISTRY`` is the one over ``WIRE_FORMATS``; a test builds a ``WireRegistry`` over records of its own
(tests/pipeline/test_wire_registry.py adds a made-up fourth format this way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from .._logging import register_key_headers
from ._addressing import family_pattern
from ._registry import WIRE_FORMATS, WireFormat

__all__ = ["WIRE_REGISTRY", "WireRegistry"]

_BEARER = "authorization"
_PATHS_KEPT = 256
_PATH_LONGEST = 512


def _unique(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name.lower() for name in names))


def _records(records: Iterable[WireFormat]) -> tuple[WireFormat, ...]:
    return tuple(records)


@attrs.frozen
class WireRegistry:
    """The lookups over ``records`` (in order: the first record whose path a request's path ends with is its
    format)."""

    records: tuple[WireFormat, ...] = attrs.field(converter=_records)
    _paths: dict[str, WireFormat | None] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    """``by_path``'s answers for the paths asked (at most ``_PATHS_KEPT``): every request asks it (decision 0073)."""
    _names: tuple[tuple[str, ...], frozenset[str], frozenset[str]] = attrs.field(init=False, eq=False, repr=False)
    """The header sets, found once (the records are fixed): asked on every request by the transport and the proxy."""

    def __attrs_post_init__(self) -> None:
        keys = _unique([_BEARER, *(record.key_header for record in self.records)])
        secret = frozenset(_unique([*keys, *(h for record in self.records for h in record.secret_headers)]))
        forward = frozenset(_unique([name for record in self.records for name in record.forward_headers]))
        object.__setattr__(self, "_names", (keys, secret, forward))
        register_key_headers(self.secret_headers)  # the log filter redacts their values wherever a message quotes one

    def by_path(self, path: str) -> WireFormat | None:
        """The format whose path template ``path`` ends with (trailing ``/`` ignored), else ``None``."""
        try:
            return self._paths[path]
        except KeyError:
            pass
        found = next((record for record in self.records if record.matches(path)), None)
        if len(path) <= _PATH_LONGEST:
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            self._paths[path] = found
        return found

    def by_endpoint(self, relative: str) -> WireFormat | None:
        """The format whose path template is exactly ``relative`` (leading and trailing ``/`` ignored; ``{model}``
        one segment): the proxy's span names (``gen_ai.operation.name``)."""
        path = "/" + relative.strip("/")
        return next((record for record in self.records if record.matches(path) and
                     record.path.count("/") == path.count("/")), None)

    def streamed(self, method: str, path: str, query: str, body: bytes | Mapping[str, Any]) -> WireFormat | None:
        """The format of a request that asks for a stream (its path is the format's and the format's ``streams``
        says so), else ``None``."""
        record = self.by_path(path)
        return record if record is not None and record.asks_stream(method, path, query, body) else None

    @property
    def key_headers(self) -> tuple[str, ...]:
        """Every header a key comes in: ``authorization`` (``Bearer <key>``) first, then each record's own."""
        return self._names[0]

    @property
    def secret_headers(self) -> frozenset[str]:
        """Every header that carries a credential: the key headers and each record's ``secret_headers``."""
        return self._names[1]

    @property
    def forward_headers(self) -> frozenset[str]:
        """The formats' own headers the proxy forwards (version, beta, organisation)."""
        return self._names[2]

    def api_key(self, get: Callable[[str], str | None]) -> str | None:
        """The key a request carries, ``get`` giving a header's value by its lower-case name: ``Authorization:
        Bearer <key>``, else the first other key header with a value, in the records' order."""
        for name in self.key_headers:
            value = get(name) or ""
            if name == _BEARER:
                scheme, _, token = value.partition(" ")
                if scheme.lower() == "bearer" and token.strip():
                    return token.strip()
            elif value.strip():
                return value.strip()
        return None

    def upstream_key_header(self, relative: str) -> str:
        """The header a key for a request to ``relative`` (the path under the API's base) goes in: that of the format
        whose path template the path ends with (Vertex AI's ``projects/.../models/m:streamGenerateContent``), else of
        the format whose endpoint family the path is in (``family_pattern``: ``messages/count_tokens`` is
        ``x-api-key``'s, ``models/m:countTokens`` ``x-goog-api-key``'s, OpenAI's ``models`` no format's), else
        ``authorization`` (as ``Bearer <key>``)."""
        path = relative.split("?", 1)[0].strip("/")
        record = self.by_path("/" + path)
        if record is None:
            record = next((r for r in self.records if family_pattern(r.path).match(path)), None)
        return _BEARER if record is None else record.key_header

    def upstream_key(self, relative: str, key: str) -> tuple[str, str]:
        """The header and value that carry the proxy's own ``key`` upstream for a request to ``relative``."""
        name = self.upstream_key_header(relative)
        return (name, f"Bearer {key}") if name == _BEARER else (name, key)


WIRE_REGISTRY: Final = WireRegistry(WIRE_FORMATS.values())
"""The lookups over the registered formats (``WIRE_FORMATS``)."""
