"""The chunk protocol: the public output of the pipeline.

Every chunk is a frozen attrs class with slots, a ``to_dict()`` (a JSON-ready dict) whose first key is ``type``, and
a ``to_json()`` (that dict as strict JSON text):

    block-start      {"type", "index", "block_type"}                  a block opens (indices 0, 1, 2, ... shared)
    text-delta       {"type", "index", "text"}                        visible text
    reasoning-delta  {"type", "index", "text"}                        chain of thought
    tool-call-delta  {"type", "index", "id", ["name",] ["kind",] "arguments_delta"}  id is "" until known, name
                                                                      once known, kind unless "function"
    block-end        {"type", "index", "block"}                       the finished block (held until [DONE]);
                                                                      a reasoning block may carry signature,
                                                                      encrypted and item_id; a tool call its
                                                                      kind (unless "function") and signature
    usage            {"type", "usage"}                                token accounting (before the finish)
    finish           {"type", "reason"}                               exactly one, always last
    anomaly          {"type", "kind", "index", "detail"}              what a gateway did wrong (opt-in)
    retry            {"type", "attempt", "max_retries", "delay_ms", "failure"}  an attempt failed and is retried

``chunk_from_dict`` (a dict) and ``chunk_from_json`` (JSON text) read any of them back (the session log stores
failed attempts as chunk records). The values the chunks carry are in ``_chunk_values.py`` (``Failure``,
``FinishReason``, ``Usage``) and ``_blocks.py`` (the finished blocks).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from ._blocks import Block, ReasoningBlock, TextBlock, ToolCallBlock, ToolCallKind, block_from_dict, non_empty_kind
from ._chunk_values import Failure, FinishReason, Json, Usage

__all__ = [
    "Anomaly",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "Chunk",
    "Finish",
    "ReasoningBlock",
    "ReasoningDelta",
    "Retry",
    "TextBlock",
    "TextDelta",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolCallKind",  # defined in _blocks; named here with the chunks that carry it
    "Usage",  # defined in _chunk_values; named here too, where _usage.py takes it
    "UsageChunk",
    "chunk_from_dict",
    "chunk_from_json",
]

BlockType: TypeAlias = Literal["text", "reasoning", "tool-call"]


class JsonText:
    """What every chunk shares: ``to_json()``, its ``to_dict()`` as strict JSON text (one line, UTF-8 kept)."""

    __slots__ = ()

    def to_dict(self) -> Json:
        raise NotImplementedError

    def to_json(self) -> str:
        """``to_dict()`` as strict JSON text, as ``llm-stream replay --json`` prints it."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)


# -- the chunks ---------------------------------------------------------------------------------------------------


@attrs.frozen
class BlockStart(JsonText):
    index: int
    block_type: BlockType
    type: ClassVar[str] = "block-start"

    def to_dict(self) -> Json:
        return {"type": "block-start", "index": self.index, "block_type": self.block_type}


@attrs.frozen
class TextDelta(JsonText):
    index: int
    text: str
    type: ClassVar[str] = "text-delta"

    def to_dict(self) -> Json:
        return {"type": "text-delta", "index": self.index, "text": self.text}


@attrs.frozen
class ReasoningDelta(JsonText):
    index: int
    text: str
    type: ClassVar[str] = "reasoning-delta"

    def to_dict(self) -> Json:
        return {"type": "reasoning-delta", "index": self.index, "text": self.text}


@attrs.frozen
class ToolCallDelta(JsonText):
    """One fragment of a tool call: ``id`` is ``""`` until known, ``name`` is None until known. ``kind`` (a
    ``ToolCallKind``, known from the call's first fragment on; docs/decisions/0072-client-run-tool-calls.md) is in
    the JSON only when it is not ``"function"``."""

    index: int
    id: str
    name: str | None
    arguments_delta: str
    kind: str = attrs.field(default=ToolCallKind.FUNCTION, kw_only=True, validator=non_empty_kind)
    type: ClassVar[str] = "tool-call-delta"

    def to_dict(self) -> Json:
        out: Json = {"type": "tool-call-delta", "index": self.index, "id": self.id}
        if self.name is not None:
            out["name"] = self.name
        if self.kind != ToolCallKind.FUNCTION:
            out["kind"] = self.kind
        out["arguments_delta"] = self.arguments_delta
        return out


@attrs.frozen
class BlockEnd(JsonText):
    index: int
    block: Block
    type: ClassVar[str] = "block-end"

    def to_dict(self) -> Json:
        return {"type": "block-end", "index": self.index, "block": self.block.to_dict()}


@attrs.frozen
class UsageChunk(JsonText):
    usage: Usage
    type: ClassVar[str] = "usage"

    def to_dict(self) -> Json:
        return {"type": "usage", "usage": self.usage.to_dict()}


@attrs.frozen
class Finish(JsonText):
    reason: FinishReason
    type: ClassVar[str] = "finish"

    def to_dict(self) -> Json:
        return {"type": "finish", "reason": self.reason.to_dict()}


@attrs.frozen
class Anomaly(JsonText):
    """What a gateway did wrong, and what was done about it. Emitted only when asked for."""

    kind: str
    index: int | None
    detail: str
    type: ClassVar[str] = "anomaly"

    def to_dict(self) -> Json:
        return {"type": "anomaly", "kind": self.kind, "index": self.index, "detail": self.detail}


@attrs.frozen
class Retry(JsonText):
    """An attempt ended in a retryable failure; the request is sent again after ``delay_ms``."""

    attempt: int
    max_retries: int | None
    delay_ms: float
    failure: Failure
    type: ClassVar[str] = "retry"

    def to_dict(self) -> Json:
        return {
            "type": "retry",
            "attempt": self.attempt,
            "max_retries": self.max_retries,
            "delay_ms": self.delay_ms,
            "failure": self.failure.to_dict(),
        }


Chunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish | Anomaly | Retry
)
CHUNK_TYPES: tuple[type, ...] = (
    BlockStart,
    TextDelta,
    ReasoningDelta,
    ToolCallDelta,
    BlockEnd,
    UsageChunk,
    Finish,
    Anomaly,
    Retry,
)


def chunk_from_dict(data: Mapping[str, Any]) -> Chunk:
    """Reads back what ``to_dict()`` wrote. Raises ``ValueError`` for anything else."""
    try:
        kind = data["type"]
        if kind == "block-start":
            return BlockStart(data["index"], data["block_type"])
        if kind == "text-delta":
            return TextDelta(data["index"], data["text"])
        if kind == "reasoning-delta":
            return ReasoningDelta(data["index"], data["text"])
        if kind == "tool-call-delta":
            # a record may leave out an id that was not known yet (the session log stores no empty ids)
            return ToolCallDelta(data["index"], data.get("id", ""), data.get("name"), data["arguments_delta"],
                                 kind=data.get("kind", ToolCallKind.FUNCTION))
        if kind == "block-end":
            return BlockEnd(data["index"], block_from_dict(data["block"]))
        if kind == "usage":
            return UsageChunk(Usage.from_dict(data["usage"]))
        if kind == "finish":
            reason = data["reason"]
            failure = reason.get("failure")
            return Finish(FinishReason(reason["kind"], Failure.from_dict(failure) if failure else None))
        if kind == "anomaly":
            return Anomaly(data["kind"], data.get("index"), data["detail"])
        if kind == "retry":
            return Retry(data["attempt"], data.get("max_retries"), data["delay_ms"], Failure.from_dict(data["failure"]))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a chunk: {dict(data)!r} ({exc})") from exc
    raise ValueError(f"unknown chunk type {kind!r}")


def chunk_from_json(text: str | bytes) -> Chunk:
    """Reads back what ``to_json()`` wrote. Raises ``ValueError`` for anything else. (Before 0.2 this name took the
    dict, which still works with a ``DeprecationWarning``: use ``chunk_from_dict`` for a dict.)"""
    if isinstance(text, Mapping):
        warnings.warn("chunk_from_json(dict) is deprecated: use chunk_from_dict", DeprecationWarning, stacklevel=2)
        return chunk_from_dict(text)
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"not a chunk: {data!r:.80}")
    return chunk_from_dict(data)
