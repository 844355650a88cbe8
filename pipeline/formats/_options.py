"""``RequestOptions``: what a request asks for besides the conversation, written once for every format.

The request builders (``chat_request``, ``messages_request``, ``responses_request``, ``gemini_request``) and
``ChatClient`` take the same options; each builder maps them to its format's fields (docs/decisions/
0027-request-shapes.md): ``max_tokens`` is the Messages API's ``max_tokens`` (4096 unless given), the Responses API's
``max_output_tokens`` and Gemini's ``generationConfig.maxOutputTokens``; ``stop`` is the Messages API's
``stop_sequences``, Gemini's ``stopSequences`` and refused by the Responses API; ``tool_choice`` is given in chat
shape (Gemini's ``toolConfig.functionCallingConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["RequestOptions"]


def _tools(value: Sequence[Mapping[str, Any]] | None) -> tuple[Mapping[str, Any], ...] | None:
    return None if value is None else tuple(value)


def _stop(value: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    return value if value is None or isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class RequestOptions:
    """The options of one request, in chat shape; ``None`` leaves a field out of the body (the API's default)."""

    tools: tuple[Mapping[str, Any], ...] | None = attrs.field(default=None, converter=_tools)
    """Chat tools (``{"type": "function", "function": {name, description, parameters}}``); a tool in another shape
    (a server tool such as ``{"type": "web_search"}``) goes through as given."""
    system: str | None = None
    """A system prompt sent before every system or developer message of the conversation."""
    temperature: float | None = None
    max_tokens: int | None = None
    stop: str | tuple[str, ...] | None = attrs.field(default=None, converter=_stop)
    tool_choice: Any = None
    """``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``."""

    @classmethod
    def of(cls, options: RequestOptions | None, fields: Mapping[str, Any]) -> RequestOptions:
        """``options`` with the options ``fields`` names (keywords such as ``tools=...``) set over it; ``TypeError``
        for a field that is not an option."""
        unknown = sorted(set(fields) - set(_FIELDS))
        if unknown:
            raise TypeError(f"unexpected keyword {', '.join(unknown)}; the request options are {', '.join(_FIELDS)}")
        if options is None:
            return cls(**fields)
        return attrs.evolve(options, **fields) if fields else options

    def values(self) -> tuple[Any, ...]:
        """The fields in declaration order: ``tools, system, temperature, max_tokens, stop, tool_choice``."""
        return attrs.astuple(self, recurse=False)


_FIELDS: tuple[str, ...] = tuple(field.name for field in attrs.fields(RequestOptions))
