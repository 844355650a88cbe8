"""A live endpoint: the HTTP client, its configuration, the HTTP byte source. Each API's request (its path,
headers and body) is a wire-format record of ``pipeline.formats``."""

from operators.extend import publish as _publish

from ._client import ChatClient
from ._config import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    GEMINI_BASE_URL,
    ClientConfig,
    ConfigError,
    InsecureBaseUrlWarning,
    is_loopback,
)

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "GEMINI_BASE_URL",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "InsecureBaseUrlWarning",
    "is_loopback",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
