"""The chunk protocol: the public output of the pipeline.

Every chunk is a frozen attrs class with slots, a ``to_dict()`` (a JSON-ready dict) whose first key is ``type``, and
a ``to_json()`` (that dict as strict JSON text):

    block-start      {"type", "index", "block_type"}                  a block opens (indices 0, 1, 2, ... shared)
    text-delta       {"type", "index", "text"}                        visible text
    reasoning-delta  {"type", "index", "text"}                        chain of thought
    tool-call-delta  {"type", "index", "id", ["name",] "arguments_delta"}  id is "" until known, name once known
    block-end        {"type", "index", "block"}                       the finished block (held until [DONE]);
                                                                      a reasoning block may carry signature,
                                                                      encrypted and item_id
    usage            {"type", "usage"}                                token accounting (before the finish)
    finish           {"type", "reason"}                               exactly one, always last
    anomaly          {"type", "kind", "index", "detail"}              what a gateway did wrong (opt-in)
    retry            {"type", "attempt", "max_retries", "delay_ms", "failure"}  an attempt failed and is retried

``chunk_from_dict`` (a dict) and ``chunk_from_json`` (JSON text) read any of them back (the session log stores
failed attempts as chunk records).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from ._blocks import Block, ReasoningBlock, TextBlock, ToolCallBlock, block_from_dict, non_empty_str
from ._numbers import whole_ms

__all__ = [
    "Anomaly",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "Chunk",
    "Failure",
    "Finish",
    "FinishKind",
    "FinishReason",
    "ReasoningBlock",
    "ReasoningDelta",
    "Retry",
    "TextBlock",
    "TextDelta",
    "ToolCallBlock",
    "ToolCallDelta",
    "Usage",
    "UsageChunk",
    "chunk_from_dict",
    "chunk_from_json",
]

BlockType: TypeAlias = Literal["text", "reasoning", "tool-call"]
FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]

Json: TypeAlias = dict[str, Any]


class JsonText:
    """What every chunk shares: ``to_json()``, its ``to_dict()`` as strict JSON text (one line, UTF-8 kept)."""

    __slots__ = ()

    def to_dict(self) -> Json:
        raise NotImplementedError

    def to_json(self) -> str:
        """``to_dict()`` as strict JSON text, as ``llm-stream replay --json`` prints it."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)


def _plain_code(value: object) -> object:
    """``RATE_LIMIT`` is stored as the plain string ``"RATE_LIMIT"``: equal to it, and printed the same."""
    return str(value) if isinstance(value, StrEnum) else value


@attrs.frozen
class Failure:
    """Why a response failed: a stable routing ``code`` plus what is known about it."""

    code: str = attrs.field(converter=_plain_code, validator=non_empty_str)
    message: str
    status: int | None = None
    retry_after_ms: int | None = attrs.field(default=None, converter=whole_ms)
    """The provider's wait (``retry-after-ms``, else ``Retry-After``) in whole milliseconds, rounded up."""
    request_id: str | None = None
    should_retry: bool | None = None
    """The provider's own say (``x-should-retry: true`` / ``false``), which overrides the code's retryability in
    ``RetryPolicy.normal`` as the openai SDK does; None when it said nothing."""

    def to_dict(self) -> Json:
        """The failure as a JSON-ready dict (the fields that are set)."""
        out: Json = {"code": self.code, "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        if self.request_id is not None:
            out["request_id"] = self.request_id
        if self.should_retry is not None:
            out["should_retry"] = self.should_retry
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Failure:
        return cls(
            code=data["code"],
            message=data["message"],
            status=data.get("status"),
            retry_after_ms=data.get("retry_after_ms"),
            request_id=data.get("request_id"),
            should_retry=data.get("should_retry"),
        )


def _failure_matches_kind(instance: FinishReason, attribute: attrs.Attribute[Any], value: object) -> None:
    needs = instance.kind in ("error", "aborted")
    if needs and value is None:
        raise ValueError(f"a {instance.kind!r} finish must carry a failure")
    if not needs and value is not None:
        raise ValueError(f"a {instance.kind!r} finish carries no failure")


@attrs.frozen
class FinishReason:
    """``stop``, ``tool-calls``, ``max-tokens``, or ``error`` / ``aborted`` with a failure."""

    kind: FinishKind
    failure: Failure | None = attrs.field(default=None, validator=_failure_matches_kind)

    @property
    def code(self) -> str | None:
        return self.failure.code if self.failure is not None else None

    def to_dict(self) -> Json:
        out: Json = {"kind": self.kind}
        if self.failure is not None:
            out["failure"] = self.failure.to_dict()
        return out

    @classmethod
    def error(cls, code: str, message: str, **facts: Any) -> FinishReason:
        return cls("error", Failure(code, message, **facts))


_USAGE_KEYS = (
    "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"
)


@attrs.frozen
class Usage:
    """Token accounting with disjoint counts: billed input is input + cache_read + cache_write. A count the wire did
    not give, or gave invalid, is ``None`` and left out of the JSON: unknown, never 0 (decision 0046)."""

    input_tokens: int | float | None
    output_tokens: int | float | None
    total_tokens: int | None = None
    cache_read_tokens: int | float | None = None
    cache_write_tokens: int | float | None = None
    reasoning_tokens: int | float | None = None

    def to_dict(self) -> Json:
        out: Json = {}
        for key in _USAGE_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | float | None, b: int | float | None) -> Any:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        def both(a: int | float | None, b: int | float | None) -> Any:  # a sum with an unknown part is unknown
            return None if a is None or b is None else a + b

        return Usage(
            input_tokens=both(self.input_tokens, other.input_tokens),
            output_tokens=both(self.output_tokens, other.output_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens)
            if self.total_tokens is not None and other.total_tokens is not None
            else None,
            cache_read_tokens=add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=add(self.reasoning_tokens, other.reasoning_tokens),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(
            input_tokens=data.get("input_tokens"),
            output_tokens=data.get("output_tokens"),
            total_tokens=data.get("total_tokens"),
            cache_read_tokens=data.get("cache_read_tokens"),
            cache_write_tokens=data.get("cache_write_tokens"),
            reasoning_tokens=data.get("reasoning_tokens"),
        )


# -- the finished blocks -----------------------------------------------------------------------------------------


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
    """One fragment of a tool call: ``id`` is ``""`` until known, ``name`` is None until known."""

    index: int
    id: str
    name: str | None
    arguments_delta: str
    type: ClassVar[str] = "tool-call-delta"

    def to_dict(self) -> Json:
        out: Json = {"type": "tool-call-delta", "index": self.index, "id": self.id}
        if self.name is not None:
            out["name"] = self.name
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
            return ToolCallDelta(data["index"], data.get("id", ""), data.get("name"), data["arguments_delta"])
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
