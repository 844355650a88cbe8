"""The vocabulary of the Messages API stream, for ``parse_messages_sse``: stop reasons, block kinds, usage.

- Stop reasons map to the chat vocabulary ``classify_finish`` reads (docs/decisions/0024-messages-format.md):
  ``end_turn`` / ``stop_sequence`` -> ``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``;
  ``refusal`` and ``pause_turn`` (and any other string) pass through, so ``classify_finish`` makes them the errors
  ``REFUSAL`` and ``PAUSE_TURN``.
- Usage: ``message_start.message.usage`` merged field by field with each ``message_delta.usage`` (a ``null`` leaves the
  earlier value); its ``input_tokens`` exclude the cache reads and writes, so the OpenAI-shaped ``prompt_tokens`` is
  their sum, and the usage normalisation (``_usage.py``) gives the disjoint counts back.
- The small helpers of the parser: a block's state (its signature or redacted data kept), typed field access (a wrong
  type is ``Malformed``), chunk makers.
"""

from __future__ import annotations

import json
from typing import Any

from .._chunks import Anomaly
from .._exceptions import LlmStreamError
from .._signals import Signal
from .._usage import is_count
from .._wire import (
    UNSET,
    WireDelta,
    WireFunction,
    WireToolCall,
    wire_chunk,
)

__all__ = [
    "FINISH_REASONS",
    "Block",
    "Malformed",
    "block_kind",
    "compact",
    "identity",
    "index_of",
    "merge_into",
    "object_at",
    "server_tool_name",
    "string_at",
]

FINISH_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
"""Messages stop reasons with a chat-vocabulary equivalent; any other string passes through unchanged."""

_SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "mcp_tool_listing"})
"""What Anthropic runs itself (docs/decisions/0072-client-run-tool-calls.md, "The Messages side"): its server tools'
calls and the MCP connector's calls and tool listings; with every ``*_tool_result`` block, informational."""


def block_kind(block_type: object) -> str:
    """``text``, ``thinking``, ``redacted_thinking``, ``tool`` (a ``tool_use``: a call the client runs, whoever the
    ``caller``), ``server`` (what Anthropic runs: ``server_tool_use``, ``mcp_tool_use``, ``mcp_tool_listing``, any
    ``*_tool_result``) or ``other`` (``compaction``, ``fallback``, ``container_upload``, anything new)."""
    if block_type in ("text", "thinking", "redacted_thinking"):
        return str(block_type)
    if block_type == "tool_use":
        return "tool"
    if block_type in _SERVER_TOOL_BLOCKS or (isinstance(block_type, str) and block_type.endswith("_tool_result")):
        return "server"
    return "other"


def server_tool_name(block: dict[str, Any]) -> str:
    """What a server-tool anomaly names: the tool's ``name`` (and the MCP ``server_name``, or a listing's
    ``mcp_server_name``), else the block type."""
    name = block.get("name")
    server = block.get("server_name", block.get("mcp_server_name"))
    label = name if isinstance(name, str) and name else str(block.get("type"))
    return f"{label} on {server}" if isinstance(server, str) and server else label


def compact(value: object) -> str:
    """Arguments given whole (a block's ``input``) as compact JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def merge_into(merged: dict[str, Any], usage: object) -> bool:
    """Merges one usage object into ``merged`` field by field (``null``, or anything but a valid count after a valid
    one, keeps the earlier value); False when it is not an object."""
    if not isinstance(usage, dict):
        return False
    for key, value in usage.items():
        if value is None or (not is_count(value) and is_count(merged.get(key))):
            continue  # a string, a list, a negative or fractional count: never erases a valid one
        merged[key] = value
    return True


class Malformed(LlmStreamError):
    """A payload field of the wrong type: caught by the parser, which halts with ``MALFORMED_RESPONSE``."""


class Block:
    """What the parser keeps of one content block."""

    __slots__ = ("deltas", "id", "kind", "opaque", "stopped", "whole")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.whole: str | None = None  # a tool's input given whole in its start
        self.deltas = False  # an input_json_delta came
        self.stopped = False
        self.opaque: str | None = None  # a thinking block's signature, a redacted_thinking block's data
        self.id: str | None = None  # a tool_use block's id, once a start gave one

    def started(self, index: int, block: dict[str, Any]) -> Signal:
        """A ``tool_use`` start (the first or a repeated one): its identity as the wire gave it, unless it names another
        id than the block's: a block index names one block, the first identity stays (decision 0070)."""
        given = block.get("id")
        if type(given) is str and given:
            if self.id is not None and given != self.id:
                return Anomaly("conflicting-identity", index, f"id {given[:60]!r} ignored: block {index} is "
                               f"{self.id[:60]!r}")
            self.id = given
        return wire_chunk(WireDelta(tool_calls=[identity(index, block)]))

    def keep_opaque(self, field: str, value: object, out: list[Signal], index: int) -> None:
        """A signature or redacted data: a non-empty string replaces what the block held; ``""`` and absent leave
        it; anything else is an ``invalid-reasoning`` anomaly."""
        if type(value) is str:
            if value:
                self.opaque = value
        elif value is not None:
            out.append(Anomaly("invalid-reasoning", index, f"{field} of type {type(value).__name__} ignored"))


def index_of(body: dict[str, Any]) -> int:
    index = body.get("index")
    if type(index) is not int or index < 0:
        raise Malformed(f"{body.get('type')} without a valid index")
    return index


def object_at(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if not isinstance(value, dict):
        raise Malformed(f"{body.get('type')}.{key} is not an object")
    return value


def string_at(delta: dict[str, Any], key: str) -> str:
    value = delta.get(key)
    if not isinstance(value, str):
        raise Malformed(f"{delta.get('type')}.{key} is not a string")
    return value


def identity(index: int, block: dict[str, Any]) -> WireToolCall:
    """A ``tool_use`` start's identity, as the wire gave it."""
    return WireToolCall(index=index, id=block.get("id", UNSET), function=WireFunction(name=block.get("name", UNSET)))
