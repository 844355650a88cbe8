"""The terminal renderer: chunks one a line, readably, or as JSON; and the output flags that choose between them."""

from __future__ import annotations

import argparse
import json
import os
from typing import TextIO

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Chunk,
    Finish,
    ReasoningDelta,
    Retry,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from pipeline.compose import Assembler, AssistantMessage

__all__ = ["Printer", "add_output_flags", "output_mode"]


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``--json`` | ``--assembled``, and ``--anomalies``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="one chunk a line, to_json() exactly")
    group.add_argument("--assembled", action="store_true", help="only the assembled message, as one JSON object")
    parser.add_argument(
        "--anomalies", action="store_true", help="include anomaly chunks in --json output (always shown as text)"
    )


def output_mode(args: argparse.Namespace) -> str:
    """``"json"``, ``"assembled"`` or ``"text"``, from the output flags."""
    if getattr(args, "json", False):
        return "json"
    if getattr(args, "assembled", False):
        return "assembled"
    return "text"


class Printer:
    """Renders chunks one a line, readably (``--json``: ``to_json()`` exactly; ``--assembled``: only the message)."""

    def __init__(self, out: TextIO, *, mode: str = "text", color: bool | None = None) -> None:
        self.out = out
        self.mode = mode
        if color is None:
            color = out.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.color = color
        self.assembler = Assembler()
        self.counts: dict[str, int] = {}

    def _c(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def chunk(self, chunk: Chunk) -> None:
        self.assembler.feed(chunk)
        self.counts[chunk.type] = self.counts.get(chunk.type, 0) + 1
        if self.mode == "json":
            self.out.write(json.dumps(chunk.to_json(), ensure_ascii=False, allow_nan=False) + "\n")
        elif self.mode == "text":
            self.out.write(self.render(chunk) + "\n")
        self.out.flush()

    def render(self, chunk: Chunk) -> str:
        at = f"{chunk.index:>3}" if hasattr(chunk, "index") and chunk.index is not None else "   "
        if isinstance(chunk, BlockStart):
            return f"{at} {self._c('1', '▶ start')}      {chunk.block_type}"
        if isinstance(chunk, TextDelta):
            return f"{at}   text       {json.dumps(chunk.text, ensure_ascii=False)}"
        if isinstance(chunk, ReasoningDelta):
            return f"{at}   {self._c('2', 'reasoning')}  {self._c('2', json.dumps(chunk.text, ensure_ascii=False))}"
        if isinstance(chunk, ToolCallDelta):
            name = chunk.name if chunk.name is not None else "?"
            ident = chunk.id or "?"
            return f"{at}   tool-call  {ident} {name} +{json.dumps(chunk.arguments_delta, ensure_ascii=False)}"
        if isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                body = f"tool-call {block.id} {block.name}({block.arguments})"
            else:
                body = f"{block.type} {json.dumps(block.text, ensure_ascii=False)}"
            return f"{at} {self._c('1', '■ end')}        {body}"
        if isinstance(chunk, UsageChunk):
            parts = " · ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in chunk.usage.to_json().items())
            return f"    {self._c('36', 'usage')}        {parts}"
        if isinstance(chunk, Anomaly):
            where = f"[{chunk.index}] " if chunk.index is not None else ""
            return f"    {self._c('33', '! anomaly')}    {chunk.kind} {where}{chunk.detail}"
        if isinstance(chunk, Retry):
            limit = f"/{chunk.max_retries}" if chunk.max_retries is not None else ""
            return (
                f"    {self._c('35', '↻ retry')}      attempt {chunk.attempt}{limit} in {chunk.delay_ms:.0f} ms "
                f"after {chunk.failure.code}: {chunk.failure.message}"
            )
        if isinstance(chunk, Finish):
            reason = chunk.reason
            if reason.failure is None:
                return f"    {self._c('32', 'finish')}       {reason.kind}"
            failure = reason.failure
            return f"    {self._c('31', 'finish')}       {reason.kind} {failure.code}: {failure.message}"
        return f"    {chunk.to_json()}"

    def message(self) -> AssistantMessage:
        return self.assembler.result()

    def summary(self) -> None:
        message = self.message()
        if self.mode == "assembled":
            self.out.write(json.dumps(message.to_json(), ensure_ascii=False, allow_nan=False) + "\n")
            return
        if self.mode != "text":
            return
        blocks = self.assembler.block_count
        anomalies = self.counts.get("anomaly", 0)
        total = sum(self.counts.values())
        finish = message.finish.kind + (f" {message.finish.code}" if message.finish.code else "")
        lines = [
            "",
            f"{total} chunks, {blocks} blocks, {anomalies} anomalies, {message.retries} retries; finish: {finish}",
        ]
        for call in message.tool_calls:
            lines.append(f"  tool call {call.id} {call.name}({call.arguments})")
        if message.usage is not None:
            lines.append(f"  usage {json.dumps(message.usage.to_json())}")
        self.out.write("\n".join(lines) + "\n")
