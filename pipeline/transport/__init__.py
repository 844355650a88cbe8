"""A live endpoint: the HTTP client, its configuration, the HTTP byte source, the key's redaction."""

from ._client import ChatClient
from ._config import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    ClientConfig,
    ConfigError,
    InsecureBaseUrlWarning,
    is_loopback,
)
from ._redact import redact_key

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "InsecureBaseUrlWarning",
    "is_loopback",
    "redact_key",
]
