"""A live endpoint: the HTTP client, its configuration, the HTTP byte source."""

from ._client import ChatClient
from ._config import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    ClientConfig,
    ConfigError,
    InsecureBaseUrlWarning,
    is_loopback,
)

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "InsecureBaseUrlWarning",
    "is_loopback",
]
