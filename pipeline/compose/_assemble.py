"""``assemble``: folds chunks into one ``AssistantMessage``.

- Text and reasoning come from their deltas, so a response that failed mid-stream still shows what it said.
- Tool calls come only from block-ends, which carry a validated ``ToolCallBlock``: a call that was never identified,
  or never closed, is not in the message. The reasoning blocks (with the signature or encrypted reasoning a provider
  needs back, docs/decisions/0028-reasoning-round-trip.md) come from block-ends too.
- A ``retry`` chunk discards the partial blocks of the attempt it ends; ``usage`` is the last attempt's usage and
  ``usage_total`` adds every attempt's (failed attempts were billed too).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from typing import Any

import attrs

from operators import (
    BlockEnd,
    BlockStart,
    Chunk,
    Code,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    Retry,
    TextDelta,
    ToolCallBlock,
    ToolCallKind,
    Usage,
    UsageChunk,
)
from operators.extend import BlockTexts

from .._assistant_turn import assistant_message

__all__ = ["Assembler", "AssistantMessage", "assemble", "assemble_async"]


@attrs.frozen
class AssistantMessage:
    """What the model answered, and how the response ended."""

    text: str
    reasoning: str
    tool_calls: tuple[ToolCallBlock, ...]
    usage: Usage | None
    usage_total: Usage | None
    finish: FinishReason
    retries: int = 0
    reasoning_blocks: tuple[ReasoningBlock, ...] = ()
    """The closed reasoning blocks in order, each with its signature / encrypted reasoning / item id if any."""

    @property
    def ok(self) -> bool:
        """True when the response ended without an error or abort."""
        return self.finish.kind not in ("error", "aborted")

    @property
    def refusal(self) -> str | None:
        """The refusal text when the model declined (finish code ``REFUSAL``)."""
        failure = self.finish.failure
        return failure.message if failure is not None and failure.code == Code.REFUSAL else None

    def to_message(self) -> dict[str, Any]:
        """This answer as the chat-shaped assistant message of the next request's history: ``content`` (None when it
        only called tools), ``tool_calls`` when it called any, and ``reasoning_blocks`` (the blocks' JSON) when a
        reasoning block carries what the provider needs back; ``ChatClient`` turns those into thinking /
        redacted_thinking blocks (api="messages") or reasoning items (api="responses") and leaves them out for chat
        completions (docs/decisions/0028-reasoning-round-trip.md)."""
        opaque = [block.to_dict() for block in self.reasoning_blocks if block.opaque]
        return assistant_message(self.text, self.tool_calls, opaque)

    def to_dict(self) -> dict[str, Any]:
        """``{"text", "reasoning", "tool_calls", "usage", "finish": {"kind", "code"}}`` (the CLI's --assembled); each
        call ``{"id", "name", ["kind",] "arguments"}``, its kind only when it is not a function (decision 0072)."""
        return {
            "text": self.text,
            "reasoning": self.reasoning,
            "tool_calls": [_call_dict(c) for c in self.tool_calls],
            "usage": self.usage.to_dict() if self.usage is not None else None,
            "finish": {"kind": self.finish.kind, "code": self.finish.code},
        }


def _call_dict(call: ToolCallBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name}
    if call.kind != ToolCallKind.FUNCTION:
        out["kind"] = call.kind
    out["arguments"] = call.arguments
    return out


class Assembler:
    """Feed chunks one at a time; ``result()`` gives the message so far (a snapshot, usable mid-stream)."""

    def __init__(self) -> None:
        self._kinds: dict[int, str] = {}
        self._texts = BlockTexts()
        self._calls: dict[int, ToolCallBlock] = {}
        self._reasoning: dict[int, ReasoningBlock] = {}
        self._usage: Usage | None = None
        self._usage_total: Usage | None = None
        self._finish: FinishReason | None = None
        self._retries = 0

    def feed(self, chunk: Chunk) -> None:
        if isinstance(chunk, TextDelta | ReasoningDelta):
            self._texts.add(chunk.index, chunk.text)
        elif isinstance(chunk, BlockStart):
            self._kinds[chunk.index] = chunk.block_type
            self._texts.open(chunk.index)
        elif isinstance(chunk, BlockEnd):
            if isinstance(chunk.block, ToolCallBlock):
                self._calls[chunk.index] = chunk.block
            elif isinstance(chunk.block, ReasoningBlock):
                self._reasoning[chunk.index] = chunk.block
        elif isinstance(chunk, UsageChunk):
            usage = chunk.usage
            self._usage = usage
            self._usage_total = usage if self._usage_total is None else self._usage_total + usage
        elif isinstance(chunk, Finish):
            self._finish = chunk.reason
        elif isinstance(chunk, Retry):
            self._retries += 1
            self._kinds.clear()
            self._texts.clear()
            self._calls.clear()
            self._reasoning.clear()
            self._usage = None

    @property
    def block_count(self) -> int:
        """Blocks opened by the current attempt (a retry starts again from zero)."""
        return len(self._kinds)

    def _joined(self, block_type: str) -> str:
        return "".join(self._texts.text(i) for i, kind in self._kinds.items() if kind == block_type)

    def result(self) -> AssistantMessage:
        finish = self._finish
        if finish is None:
            finish = FinishReason.error(Code.STREAM_CLOSED, "the chunks ended without a finish")
        return AssistantMessage(
            text=self._joined("text"),
            reasoning=self._joined("reasoning"),
            tool_calls=tuple(self._calls[i] for i in sorted(self._calls)),
            usage=self._usage,
            usage_total=self._usage_total,
            finish=finish,
            retries=self._retries,
            reasoning_blocks=tuple(self._reasoning[i] for i in sorted(self._reasoning)),
        )


def assemble(chunks: Iterable[Chunk]) -> AssistantMessage:
    """Folds chunks (a list, or any iterable) into an ``AssistantMessage``."""
    assembler = Assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler.result()


async def assemble_async(chunks: AsyncIterable[Chunk]) -> AssistantMessage:
    """The same for an async iterable, for example ``pipeline.stream(...)``."""
    assembler = Assembler()
    async for chunk in chunks:
        assembler.feed(chunk)
    return assembler.result()
