"""Where a ``ChatClient`` sends its requests: ``ClientConfig``, resolved from arguments and the environment."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import attrs

from operators import DEFAULT_LIMITS, Limits, LlmStreamError

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_TOTAL_TIMEOUT", "ClientConfig", "ConfigError", "is_loopback"]

DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds without a byte (or a comment) before an attempt fails with ``TIMEOUT``; covers connecting, the status
line, the headers and every body read."""

DEFAULT_TOTAL_TIMEOUT = 600.0
"""Seconds one attempt may take from the request to the last byte before it fails with ``TIMEOUT``."""

_KNOWN_HOSTS = {
    "api.deepseek.com": ("DEEPSEEK_API_KEY", "deepseek-chat"),
    "api.openai.com": ("OPENAI_API_KEY", "gpt-4o-mini"),
}


class ConfigError(LlmStreamError, ValueError):
    """The client cannot be configured: what is missing and how to give it."""


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
    """Where to send requests. ``api_key`` is never shown in a repr, a message or a log line."""

    base_url: str
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    connect_timeout: float = 30.0
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    limits: Limits = DEFAULT_LIMITS

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
    ) -> ClientConfig:
        """Arguments first, then ``LLM_STREAM_BASE_URL`` / ``LLM_STREAM_API_KEY`` / ``LLM_STREAM_MODEL``, then
        ``DEEPSEEK_API_KEY`` or ``OPENAI_API_KEY`` when the base URL is theirs. A non-loopback URL needs a key."""
        env = os.environ if env is None else env
        url = (base_url or env.get("LLM_STREAM_BASE_URL") or "https://api.deepseek.com/v1").rstrip("/")
        host = urlsplit(url).hostname or ""
        known = _KNOWN_HOSTS.get(host)
        key = api_key or env.get("LLM_STREAM_API_KEY") or (env.get(known[0]) if known else None)
        chosen_model = model or env.get("LLM_STREAM_MODEL") or (known[1] if known else None)
        if chosen_model is None:
            if not is_loopback(url):
                raise ConfigError(f"no model for {url}: pass --model or set LLM_STREAM_MODEL")
            chosen_model = "clean"
        if not key and not is_loopback(url):
            hint = f" or {known[0]}" if known else ""
            raise ConfigError(f"no API key for {url}: set LLM_STREAM_API_KEY{hint}")
        return cls(
            base_url=url,
            model=chosen_model,
            api_key=key or None,
            idle_timeout=DEFAULT_IDLE_TIMEOUT if idle_timeout is None else idle_timeout,
            total_timeout=DEFAULT_TOTAL_TIMEOUT if total_timeout is None else total_timeout,
            limits=DEFAULT_LIMITS if limits is None else limits,
        )
