"""A live endpoint: the HTTP client, its configuration, each API's request body, the HTTP byte source."""

from ._client import ANTHROPIC_VERSION, ChatClient
from ._config import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    ClientConfig,
    ConfigError,
    InsecureBaseUrlWarning,
    is_loopback,
)
from ._requests import APIS, DEFAULT_MAX_TOKENS, Api, chat_request, messages_request, responses_request

__all__ = [
    "ANTHROPIC_VERSION",
    "APIS",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TOTAL_TIMEOUT",
    "Api",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "InsecureBaseUrlWarning",
    "chat_request",
    "is_loopback",
    "messages_request",
    "responses_request",
]
