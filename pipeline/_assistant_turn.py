"""The chat-shaped assistant message of a request's history, the one home for its shape in ``pipeline``.

Built from an ``AssistantMessage`` (``to_message()``) and from the session's events (``Session.messages()``):
``content`` is None only when the message called tools and ``""`` when it said nothing at all (the API refuses an
empty ``tool_calls`` list and a missing content); ``reasoning_blocks`` holds the JSON of the reasoning blocks that
carry what the provider needs back (docs/decisions/0028-reasoning-round-trip.md), for the request builders. A tool
call's signature (Gemini's ``thoughtSignature``, docs/decisions/0071-gemini-format.md) rides on its tool call as
``"extra_content": {"google": {"thought_signature": ...}}``, the shape of Google's OpenAI-compatible endpoint.

A tool call's ``type`` is its kind (docs/decisions/0072-client-run-tool-calls.md): ``"function"``, or the kind of a
call the client runs through the Responses API (``"custom"``, ``"apply_patch"``, ``"shell"``, ``"local_shell"``,
``"computer"``, ``"mcp_approval"``); every kind keeps its name and arguments under ``function``, so one reader reads
every call, and code that sends only ``"function"`` calls never mistakes another kind for one. A call without a
``type`` (a history written by hand) is a function call. The Responses request builder sends each kind back as its own
item; the other builders refuse a call that is not a function (``pipeline.formats.ToolKindError``).
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
    @property
    def signature(self) -> str | None: ...
    @property
    def kind(self) -> str: ...


def assistant_message(
    text: str, calls: Iterable[_Call], reasoning: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """``{"role": "assistant", "content", ["tool_calls"], ["reasoning_blocks"]}`` as fresh dicts."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    tool_calls = [_tool_call(call) for call in calls]
    if tool_calls:
        message["tool_calls"] = tool_calls
    elif not text:
        message["content"] = ""
    blocks = [dict(block) for block in reasoning]
    if blocks:
        message[REASONING_BLOCKS] = blocks
    return message


def _tool_call(call: _Call) -> dict[str, Any]:
    function = {"name": call.name, "arguments": call.arguments}
    out: dict[str, Any] = {"id": call.id, "type": call.kind, "function": function}
    if call.signature is not None:
        out["extra_content"] = {"google": {"thought_signature": call.signature}}
    return out
