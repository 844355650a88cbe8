"""What of a client's request reaches the upstream: its path (normalised, never outside the upstream's base path),
its query (as sent, none added), the headers on an allow-list, and the key (the client's, or the proxy's own).

Forwarded (docs/proxy.md): ``content-type``, ``accept``, ``accept-encoding``, ``user-agent``, ``idempotency-key``, the
APIs' own version, beta and organisation headers that the wire-format records name (``forward_headers``:
``openai-organization``, ``openai-project``, ``openai-beta``, ``anthropic-version``, ``anthropic-beta``,
``x-goog-api-client``, ``x-goog-user-project``), the W3C
trace context (``traceparent``, ``tracestate``), the names the operator adds (``--forward-headers``), and the key as
configured. Never: cookies, ``x-forwarded-*``, ``forwarded``,
``via``, ``proxy-*``, hop-by-hop headers (and any header ``Connection`` names), ``expect``, ``host``,
``content-length``.

Keys: the key headers are those the wire-format records name (``pipeline.formats.WIRE_REGISTRY``: ``authorization``,
``x-api-key``) and their ``secret_headers``. With ``client_keys`` a request must carry one of them
(``Authorization: Bearer K``, ``x-api-key: K`` or ``x-goog-api-key: K``; the 401 names them all), and its key
is never forwarded; with ``upstream_key`` that key
goes upstream in the header of the format whose endpoint family the request's path is in (``x-api-key`` for
``messages/...``, ``x-goog-api-key`` for ``models/m:...``) and as ``Authorization: Bearer`` for every other; with
neither, the client's key headers go upstream as they came.
The proxy's own keys written by a client into a forwarded header's value (or the query, ``Keys.scrub``) go upstream as
``[redacted]``.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

import attrs
import httpx

from operators import LlmStreamError
from pipeline.formats import WIRE_REGISTRY, WireRegistry

__all__ = [
    "ALLOWED",
    "API_PREFIXES",
    "KEY_HEADERS",
    "Keys",
    "OutsideBase",
    "UpstreamUrls",
    "api_relative",
    "bearer",
    "forwarded_headers",
    "upstream_path",
    "upstream_request",
]

_ALWAYS = frozenset({
    "content-type",
    "accept",
    "accept-encoding",
    "user-agent",
    "idempotency-key",
    "traceparent",
    "tracestate",
})
ALLOWED = _ALWAYS | WIRE_REGISTRY.forward_headers
"""Forwarded: the headers any request may carry and the registered formats' own."""
KEY_HEADERS = WIRE_REGISTRY.secret_headers
NEVER = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "expect", "host", "content-length", "cookie", "forwarded", "via",
})
"""Dropped whatever ``--forward-headers`` says (and so is every ``x-forwarded-*`` and ``proxy-*``)."""


API_PREFIXES = (b"/v1/", b"/v1beta/", b"/v1beta1/")
"""The API version segments a forwarded path begins with: ``/v1/`` (OpenAI's, Anthropic's, Vertex AI's), ``/v1beta/``
(the Gemini API's, google-genai's default) and ``/v1beta1/`` (google-genai's default on Vertex AI). Each stands for
the upstream's base URL: ``/v1beta/models/m:streamGenerateContent`` goes to ``<upstream>/models/m:...``, so an
unmodified SDK needs only its base URL changed."""


def api_relative(raw_path: bytes) -> bytes | None:
    """The path under the API version segment (``models/m:streamGenerateContent`` of
    ``/v1beta/models/m:streamGenerateContent``), as sent; None for a path the proxy does not forward."""
    for prefix in API_PREFIXES:
        if raw_path.startswith(prefix):
            return raw_path[len(prefix):]
    return None


class OutsideBase(LlmStreamError, ValueError):
    """The request's path leaves the upstream's base path (``/v1/%2e%2e/x``)."""


def upstream_path(base_path: str, raw: bytes) -> str:
    """``base_path`` + the client's path after ``/v1/``, dot segments resolved, each segment kept as the client
    encoded it; ``OutsideBase`` when a ``..`` climbs above ``base_path``."""
    segments: list[str] = []
    for segment in raw.decode("latin-1").split("/"):
        plain = unquote(segment)
        if plain == ".":
            continue
        if plain == "..":
            if not segments:
                raise OutsideBase("the path leaves the upstream's base path")
            segments.pop()
            continue
        if ".." in plain.replace("\\", "/").split("/"):  # an encoded slash is a segment boundary for some servers
            raise OutsideBase("the path leaves the upstream's base path")
        segments.append(segment)
    return base_path.rstrip("/") + "/" + "/".join(segments)


def bearer(value: str) -> str | None:
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


@attrs.frozen
class Keys:
    """The proxy's own keys: what clients must present (``client``) and what goes upstream (``upstream``)."""

    client: tuple[str, ...] = ()
    upstream: str | None = None
    formats: WireRegistry = WIRE_REGISTRY
    """Where a key comes in and goes out: the wire-format records' key headers."""

    def accepted(self) -> str:
        """The headers a client key is accepted in, as the 401 names them: ``Authorization: Bearer <key>, x-api-key:
        <key> or x-goog-api-key: <key>`` (the wire-format records' key headers)."""
        names = sorted(set(self.formats.key_headers) - {"authorization"})
        forms = ["Authorization: Bearer <key>", *(f"{name}: <key>" for name in names)]
        return ", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else forms[0]

    def admits(self, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """A request carries one of the client keys (always, when there are none)."""
        if not self.client:
            return True
        presented: list[str] = []
        key_headers = self.formats.key_headers
        for raw_name, value in headers:
            name = raw_name.decode("latin-1")
            if name == "authorization":
                presented.append(bearer(value.decode("latin-1")) or "")
            elif name in key_headers:
                presented.append(value.decode("latin-1").strip())
        # compare_digest against every key, so the time taken does not tell which key or prefix matched
        matched = False
        for candidate in presented:
            for key in self.client:
                matched |= hmac.compare_digest(candidate.encode(), key.encode())
        return matched

    def scrub(self, text: str, replacement: str = "[redacted]") -> str:
        """``text`` without any of the proxy's own keys (as written, or percent-encoded): a client that writes one
        into a query or a forwarded header's value does not get it sent upstream."""
        for key in (*self.client, *((self.upstream,) if self.upstream else ())):
            if len(key) < 8:
                continue
            for form in {key, quote(key, safe="")}:
                if form in text:
                    text = text.replace(form, replacement)
        return text


def _matches(name: str, extra: tuple[str, ...]) -> bool:
    return any(name == item or (item.endswith("*") and name.startswith(item[:-1])) for item in extra)


def forwarded_headers(
    headers: Iterable[tuple[bytes, bytes]], *, keys: Keys, extra: tuple[str, ...], relative: str
) -> list[tuple[str, str]]:
    """The headers sent upstream, from the client's (lower-cased names, as the ASGI server gives them), for a request
    to ``relative`` (its path under the upstream's base path: which header the upstream key goes in)."""
    pairs = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers]
    named = {token.strip().lower() for name, value in pairs if name == "connection" for token in value.split(",")}
    forward_client_key = not keys.client and keys.upstream is None
    secret, allowed = KEY_HEADERS | keys.formats.secret_headers, ALLOWED | keys.formats.forward_headers
    out: list[tuple[str, str]] = []
    for name, value in pairs:
        if name in NEVER or name in named or name.startswith(("x-forwarded-", "proxy-")):
            continue
        if name in secret:
            if forward_client_key:
                out.append((name, value))
        elif name in allowed or _matches(name, extra):
            out.append((name, keys.scrub(value)))
    if keys.upstream is not None:
        out.append(keys.formats.upstream_key(relative, keys.upstream))
    return out


class UpstreamUrls:
    """The upstream URLs of recent request targets: httpx parses a URL in ~90 us of the proxy's CPU, and clients ask
    for a few paths. At most ``KEPT`` of them, of targets up to ``LONGEST`` bytes (bounded memory)."""

    KEPT = 64
    LONGEST = 512

    def __init__(self) -> None:
        self._urls: dict[bytes, httpx.URL] = {}

    def get(self, base: httpx.URL, target: bytes) -> httpx.URL:
        """``base`` with ``target`` as its path and query; ``httpx.InvalidURL`` when it is none."""
        url = self._urls.get(target)
        if url is None:
            url = base.copy_with(raw_path=target)
            if len(target) <= self.LONGEST:
                if len(self._urls) >= self.KEPT:
                    self._urls.clear()
                self._urls[target] = url
        return url


def upstream_request(method: str, url: httpx.URL, headers: list[tuple[bytes, bytes]], body: bytes,
                     extensions: dict[str, Any]) -> httpx.Request:
    """``httpx.Request(method, url, headers=headers, content=body, extensions=extensions)`` for ``headers`` without
    ``Host`` and ``Content-Length`` (``forwarded_headers`` drops both): the same request, headers in the same order
    (``Host`` first, ``Content-Length`` where httpx puts it), its headers normalized once instead of twice."""
    host = (b"Host", url.netloc)
    if body:
        raw = [host, *headers, (b"Content-Length", str(len(body)).encode("ascii"))]
    elif method.upper() in ("POST", "PUT", "PATCH"):
        raw = [host, (b"Content-Length", b"0"), *headers]
    else:
        raw = [host, *headers]
    request = httpx.Request(method, url, headers=raw, stream=httpx.ByteStream(body), extensions=extensions)
    request.read()  # its content, as ``content=`` reads it
    return request
