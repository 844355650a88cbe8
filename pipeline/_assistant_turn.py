"""The chat-shaped assistant message of a request's history, the one home for its shape in ``pipeline``.

Built from an ``AssistantMessage`` (``to_message()``) and from the session's events (``Session.messages()``):
``content`` is None only when the message called tools and ``""`` when it said nothing at all (the API refuses an
empty ``tool_calls`` list and a missing content); ``reasoning_blocks`` holds the JSON of the reasoning blocks that
carry what the provider needs back (docs/decisions/0028-reasoning-round-trip.md), for the request builders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

__all__ = ["REASONING_BLOCKS", "assistant_message"]

REASONING_BLOCKS: Final = "reasoning_blocks"
"""The assistant message's key for the opaque reasoning blocks (not an OpenAI field: chat requests leave it out)."""


class _Call(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


def assistant_message(
    text: str, calls: Iterable[_Call], reasoning: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """``{"role": "assistant", "content", ["tool_calls"], ["reasoning_blocks"]}`` as fresh dicts."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    tool_calls = [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in calls
    ]
    if tool_calls:
        message["tool_calls"] = tool_calls
    elif not text:
        message["content"] = ""
    blocks = [dict(block) for block in reasoning]
    if blocks:
        message[REASONING_BLOCKS] = blocks
    return message
