"""A live endpoint: the HTTP client, its configuration, the HTTP byte source."""

from ._client import ChatClient
from ._config import DEFAULT_IDLE_TIMEOUT, ClientConfig, ConfigError, is_loopback

__all__ = ["DEFAULT_IDLE_TIMEOUT", "ChatClient", "ClientConfig", "ConfigError", "is_loopback"]
