"""The terminal renderer: chunks one a line, readably, or as JSON; the output flags that choose between them; and
when to colour (``use_color``: ``--color`` > ``FORCE_COLOR`` > ``NO_COLOR`` > a terminal)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from typing import Any, TextIO

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Chunk,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    Retry,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallKind,
    UsageChunk,
)
from pipeline.compose import Assembler, AssistantMessage

__all__ = ["Printer", "add_color_flag", "add_output_flags", "message_json", "output_mode", "plural", "use_color"]

COMMENT = "comment"
"""The anomaly kind ``parse_sse`` gives an SSE comment line (``: keepalive``): counted as a comment, not an anomaly."""

INTERRUPTED = "interrupted (Ctrl-C) before the finish"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 chunk``, ``0 chunks``, ``2 anomalies``."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def use_color(choice: str, out: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """``--color always|never`` decides; ``auto`` looks at ``FORCE_COLOR`` (set and not empty: colour), then
    ``NO_COLOR`` (set and not empty: none), then whether ``out`` is a terminal (and ``TERM`` is not ``dumb``)."""
    env = os.environ if env is None else env
    if choice == "always":
        return True
    if choice == "never":
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("NO_COLOR"):
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty()) and env.get("TERM") != "dumb"


def add_color_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the readable output: auto (default: FORCE_COLOR, else NO_COLOR, else on a terminal)",
    )


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``--json`` | ``--assembled``, ``--anomalies`` and ``--color``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="one chunk a line, its to_json() exactly")
    group.add_argument("--assembled", action="store_true", help="only the assembled message, as one JSON object")
    parser.add_argument(
        "--anomalies", action="store_true", help="include anomaly chunks in --json output (always shown as text)"
    )
    add_color_flag(parser)


def output_mode(args: argparse.Namespace) -> str:
    """``"json"``, ``"assembled"`` or ``"text"``, from the output flags."""
    if getattr(args, "json", False):
        return "json"
    if getattr(args, "assembled", False):
        return "assembled"
    return "text"


def message_json(message: AssistantMessage, *, interrupted: bool = False) -> dict[str, Any]:
    """``--assembled``: ``message.to_dict()`` with the failure's message in ``finish`` (``null`` without a failure);
    when interrupted before the finish, the finish is ``aborted``/``ABORTED`` saying so."""
    out = message.to_dict()
    if interrupted:
        out["finish"] = {"kind": "aborted", "code": "ABORTED", "message": INTERRUPTED}
        return out
    failure = message.finish.failure
    out["finish"]["message"] = failure.message if failure is not None else None
    return out


class Printer:
    """Renders chunks one a line, readably (``--json``: ``to_json()`` exactly; ``--assembled``: only the message)."""

    def __init__(self, out: TextIO, *, mode: str = "text", color: bool | None = None) -> None:
        self.out = out
        self.mode = mode
        self.color = use_color("auto", out) if color is None else color
        self.assembler = Assembler()
        self.counts: dict[str, int] = {}

    def _c(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def chunk(self, chunk: Chunk) -> None:
        self.assembler.feed(chunk)
        kind = COMMENT if isinstance(chunk, Anomaly) and chunk.kind == COMMENT else chunk.type
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.mode == "json":
            self.out.write(chunk.to_json() + "\n")
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
            delta = json.dumps(chunk.arguments_delta, ensure_ascii=False)
            return f"{at}   tool-call  {ident} {name} +{delta}{_kind(chunk.kind)}"
        if isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                body = f"tool-call {block.id} {block.name}({block.arguments}){_kind(block.kind)}"
            else:
                body = f"{block.type} {json.dumps(block.text, ensure_ascii=False)}"
                if isinstance(block, ReasoningBlock):
                    body += _opaque_parts(block)
            return f"{at} {self._c('1', '■ end')}        {body}"
        if isinstance(chunk, UsageChunk):
            parts = " · ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in chunk.usage.to_dict().items())
            return f"    {self._c('36', 'usage')}        {parts}"
        if isinstance(chunk, Anomaly) and chunk.kind == COMMENT:
            return f"    {self._c('2', ': comment')}    {self._c('2', chunk.detail)}"
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
        return f"    {chunk.to_dict()}"

    def message(self) -> AssistantMessage:
        return self.assembler.result()

    def summary(self, *, interrupted: bool = False) -> None:
        """The closing summary (text), or the assembled message (``--assembled``); nothing for ``--json``.
        ``interrupted``: Ctrl-C came before the finish (a finish already seen is still reported as it was)."""
        interrupted = interrupted and not self.counts.get("finish")
        message = self.message()
        if self.mode == "assembled":
            assembled = message_json(message, interrupted=interrupted)
            self.out.write(json.dumps(assembled, ensure_ascii=False, allow_nan=False) + "\n")
            self.out.flush()
            return
        if self.mode != "text":
            return
        counts = [
            plural(sum(self.counts.values()), "chunk"),
            plural(self.assembler.block_count, "block"),
            plural(self.counts.get("anomaly", 0), "anomaly", "anomalies"),
        ]
        if self.counts.get(COMMENT):
            counts.append(plural(self.counts[COMMENT], "comment"))
        counts.append(plural(message.retries, "retry", "retries"))
        finish = message.finish.kind + (f" {message.finish.code}" if message.finish.code else "")
        lines = ["", f"{', '.join(counts)}; finish: {INTERRUPTED if interrupted else finish}"]
        for call in message.tool_calls:
            lines.append(f"  tool call {call.id} {call.name}({call.arguments}){_kind(call.kind)}")
        if message.usage is not None:
            lines.append(f"  usage {json.dumps(message.usage.to_dict())}")
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()


def _kind(kind: str) -> str:
    """`` · custom`` for a tool call that is not a function (decision 0072), else nothing."""
    return "" if kind == ToolCallKind.FUNCTION else f" · {kind}"


def _opaque_parts(block: ReasoningBlock) -> str:
    """What a reasoning block carries for the provider, by size only (it is opaque and long): `` · signed (504
    characters) · encrypted (744 characters) · item rs_1``."""
    parts = []
    if block.signature is not None:
        parts.append(f"signed ({len(block.signature)} characters)")
    if block.encrypted is not None:
        parts.append(f"encrypted ({len(block.encrypted)} characters)")
    if block.item_id is not None:
        parts.append(f"item {block.item_id}")
    return "".join(f" · {part}" for part in parts)
