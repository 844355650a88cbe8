"""``ToolDefinitionError``: a tool, a signature or a tools module that the registry cannot use."""

from __future__ import annotations

from operators import LlmStreamError

__all__ = ["ToolDefinitionError"]


class ToolDefinitionError(LlmStreamError, TypeError, ValueError):
    """A tool the registry cannot use: a name the API would refuse, parameters that are not an object schema (or
    not valid JSON Schema Draft 2020-12, or with a ``$ref`` that does not resolve), a signature with no JSON Schema
    (``*args``, an unsupported hint), a second tool of the same name, a tools module that cannot be loaded or exposes
    no tools.

    It is both a ``TypeError`` and a ``ValueError``: before it existed each of these raised one of the two, and an
    ``except TypeError`` or ``except ValueError`` written then still catches it (``io.UnsupportedOperation`` is an
    ``OSError`` and a ``ValueError`` for the same reason). What the model gets wrong at call time is never raised: it
    is a ``ToolResult(is_error=True)``.
    """
