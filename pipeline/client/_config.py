"""Where a ``ChatClient`` sends its requests: ``ClientConfig``, resolved from arguments and the environment."""

from __future__ import annotations

import ipaddress
import os
import sys
import warnings
from collections.abc import Mapping
from urllib.parse import urlsplit

import attrs

from operators import DEFAULT_LIMITS, Limits, LlmStreamError
from pipeline.formats import APIS, WIRE_FORMATS, Api

from .._secrets import register_secret, split_url_key

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "GEMINI_BASE_URL",
    "ClientConfig",
    "ConfigError",
    "InsecureBaseUrlWarning",
    "is_loopback",
]

DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds without a byte (or a comment) before an attempt fails with ``TIMEOUT``; covers connecting, the status
line, the headers and every body read."""

DEFAULT_TOTAL_TIMEOUT = 600.0
"""Seconds one attempt may take from the request to the last byte before it fails with ``TIMEOUT`` (time spent
waiting for the consumer to take what was read is not counted)."""

_KNOWN_HOSTS: dict[str, tuple[tuple[str, ...], str]] = {
    "api.deepseek.com": (("DEEPSEEK_API_KEY",), "deepseek-chat"),
    "api.openai.com": (("OPENAI_API_KEY",), "gpt-4o-mini"),
    # google-genai's order: GOOGLE_API_KEY wins when both are set (google/genai/_api_client.py, get_env_api_key)
    "generativelanguage.googleapis.com": (("GOOGLE_API_KEY", "GEMINI_API_KEY"), "gemini-2.5-flash"),
}
"""Host -> (the environment variables of its provider's key, first wins; the provider's default model)."""

_DEFAULT_BASE_URL = "https://api.deepseek.com/v1"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
"""The Gemini API's documented base (google-genai's ``https://generativelanguage.googleapis.com/`` and its default
``v1beta``): ``api="gemini"``'s default base URL."""


class ConfigError(LlmStreamError, ValueError):
    """The client cannot be configured: what is missing and how to give it."""


class InsecureBaseUrlWarning(UserWarning):
    """A plain-``http`` base URL to a host that is not loopback: the API key and the conversation travel in clear.
    Emitted when a ``ClientConfig`` (so a ``ChatClient``) is made for such a URL; TLS verification of ``https`` URLs
    stays on."""


_HERE = os.path.dirname(os.path.abspath(__file__))


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package (and attrs' generated code),
    counted from the frame that calls ``warnings.warn``."""
    frame = sys._getframe(2)  # the caller of the function that asked
    level = 2
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_HERE) or name.startswith("<attrs generated")):
            break
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def is_loopback(base_url: str) -> bool:
    """True for ``localhost`` and loopback IP literals (127.0.0.0/8, ::1); a DNS name like 127.example.com is not."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class ClientConfig:
    """Where to send requests. ``api_key`` is never shown in a repr, a message or a log line.

    A key in the base URL's query (``?key=...``, Google's documented style; also ``api_key``) is moved out of it:
    it becomes ``api_key`` (when none is given; a different one is a ``ConfigError``) and travels in the API's key
    header (``x-goog-api-key`` for Gemini), never in the URL; ``base_url`` keeps its other parameters."""

    base_url: str
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    connect_timeout: float = 30.0
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    limits: Limits = DEFAULT_LIMITS
    api: Api = attrs.field(default="chat", validator=lambda _, __, value: _check_api(value))
    """Which API the requests speak: ``"chat"`` (``/chat/completions``), ``"messages"`` (``/messages``),
    ``"responses"`` (``/responses``) or ``"gemini"`` (``/models/{model}:streamGenerateContent?alt=sse``, the key in
    ``x-goog-api-key`` only); docs/decisions/0027-request-shapes.md, 0071-gemini-format.md."""

    @property
    def url(self) -> str:
        """The URL requests are posted to: the base URL and the API's path (its record's template, the model filled
        in where it carries one), then the record's query if it has one (``?alt=sse``)."""
        return f"{self.base_url}{WIRE_FORMATS[self.api].target(self.model)}"

    def __attrs_post_init__(self) -> None:
        base_url, url_key = _url_key(self.base_url, self.api_key)
        if url_key is not None:
            object.__setattr__(self, "base_url", base_url)  # attrs' documented way to set a frozen field in post-init
            object.__setattr__(self, "api_key", url_key)
        parts = urlsplit(self.base_url)
        if parts.scheme.lower() == "http" and not is_loopback(self.base_url):
            where = f"http://{parts.netloc.rpartition('@')[2]}"  # no user info: it could hold a secret
            warnings.warn(
                InsecureBaseUrlWarning(
                    f"{where} is plain http to a host that is not loopback: the API key and the messages would "
                    "travel unencrypted; use https"
                ),
                stacklevel=_caller_stacklevel(),
            )

    @classmethod
    def resolve(
        cls,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        api: Api | None = None,
    ) -> ClientConfig:
        """Each setting from the first of (docs/decisions/0020-environment-and-logging.md):

        - base URL: ``base_url``, ``LLM_STREAM_BASE_URL``, ``OPENAI_BASE_URL`` (not for ``api="gemini"``: it names
          an OpenAI-compatible endpoint), then ``https://api.deepseek.com/v1``, or for ``api="gemini"`` Google's
          ``https://generativelanguage.googleapis.com/v1beta`` (``GEMINI_BASE_URL``);
        - API key: ``api_key``, a ``?key=`` in that base URL (moved out of it), ``LLM_STREAM_API_KEY``,
          ``OPENAI_API_KEY``, then the key the host's provider names (``DEEPSEEK_API_KEY`` for
          ``api.deepseek.com``; ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``, for
          ``generativelanguage.googleapis.com``, google-genai's order); ``OPENAI_API_KEY`` is sent only to
          ``api.openai.com`` or to the origin of ``OPENAI_BASE_URL``, and a provider's key only to its host, never to
          another host by accident;
        - model: ``model``, ``LLM_STREAM_MODEL``, then the provider's default (``gemini-2.5-flash`` for Google's
          host; ``clean`` on loopback);
        - API: ``api``, then ``"chat"``.

        A non-loopback URL needs a key and a model (``ConfigError`` says which variable to set)."""
        env = os.environ if env is None else env
        openai_url = (env.get("OPENAI_BASE_URL") or "").strip()
        fallback = (None, GEMINI_BASE_URL) if api == "gemini" else (openai_url, _DEFAULT_BASE_URL)
        chosen_url = base_url or env.get("LLM_STREAM_BASE_URL") or fallback[0] or fallback[1]
        url, url_key = _url_key(chosen_url, api_key)  # before any message names the URL
        url = url.rstrip("/")
        host = urlsplit(url).hostname or ""
        known = _KNOWN_HOSTS.get(host)
        openai_key = env.get("OPENAI_API_KEY") if _openai_key_may_go_to(url, openai_url) else None
        provider_key = next((env[name] for name in known[0] if env.get(name)), None) if known else None
        key = api_key or url_key or env.get("LLM_STREAM_API_KEY") or openai_key or provider_key
        chosen_model = model or env.get("LLM_STREAM_MODEL") or (known[1] if known else None)
        if chosen_model is None:
            if not is_loopback(url):
                raise ConfigError(f"no model for {url}: pass --model or set LLM_STREAM_MODEL")
            chosen_model = "clean"
        if not key and not is_loopback(url):
            raise ConfigError(f"no API key for {url}: {_key_hint(known, env)}")
        return cls(
            base_url=url,
            model=chosen_model,
            api_key=key or None,
            idle_timeout=DEFAULT_IDLE_TIMEOUT if idle_timeout is None else idle_timeout,
            total_timeout=DEFAULT_TOTAL_TIMEOUT if total_timeout is None else total_timeout,
            limits=DEFAULT_LIMITS if limits is None else limits,
            api="chat" if api is None else api,
        )


def _url_key(url: str, api_key: str | None) -> tuple[str, str | None]:
    """``(url without its key parameters, the key it carried)``, the key registered with the log filter; a key that
    differs from ``api_key`` (or two different ones) is a ``ConfigError`` that quotes neither."""
    try:
        base, key = split_url_key(url)
    except ValueError as exc:
        raise ConfigError(f"base_url: {exc}; give the key once, as api_key") from None
    if key is None:
        return url, None
    register_secret(key)
    if api_key is not None and api_key != key:
        raise ConfigError("base_url carries a key (?key=...) that differs from api_key: give one key, as api_key")
    return base, key


def _check_api(value: object) -> None:
    if value not in APIS:
        known = ", ".join(repr(name) for name in APIS)
        raise ConfigError(f"api is one of {known}, got {value!r:.80}")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` with the default port filled in; None for a URL without a host or with a bad port."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def _openai_key_may_go_to(url: str, openai_url: str) -> bool:
    """``OPENAI_API_KEY`` goes to OpenAI's own host, and to ``OPENAI_BASE_URL``'s origin: the pair the user set
    together, as for the openai SDK. Any other host (a gateway named by ``base_url`` or ``LLM_STREAM_BASE_URL``,
    another provider, loopback) does not get it."""
    target = _origin(url)
    if target is None:
        return False
    if target[1] == "api.openai.com":
        return True
    return bool(openai_url) and _origin(openai_url) == target


def _key_hint(known: tuple[tuple[str, ...], str] | None, env: Mapping[str, str]) -> str:
    names = ("LLM_STREAM_API_KEY", *(known[0] if known else ()))
    hint = "set " + (names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}")
    if env.get("OPENAI_API_KEY") and not (known and "OPENAI_API_KEY" in known[0]):
        hint += (" (OPENAI_API_KEY is set, but it is sent only to api.openai.com or to OPENAI_BASE_URL's host; set "
                 "OPENAI_BASE_URL to this URL to send it here)")
    return hint
