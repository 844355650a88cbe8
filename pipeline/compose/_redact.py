"""``redact_key(api_key)``: a chunk operator that keeps the API key out of everything a server can make us say.

A gateway can echo the key anywhere ("Incorrect API key provided: sk-..."): in an error message, a quoted payload,
a ``finish_reason`` (which becomes an upper-cased code), a refusal, a ``request_id``, text, reasoning, a tool call's
id, name or arguments, an anomaly's detail. ``ChatClient.chunks()`` ends with this operator, so ``stream()``,
``complete()``, ``run_turn``, the session log and the CLI only ever see redacted chunks::

    text-delta "key is sk-ab"   text-delta "c123456 ok"   block-end "key is sk-abc123456 ok"
    --------------------------------------------------------------------------------------->
    text-delta "key is "        text-delta "[redacted] ok"  block-end "key is [redacted] ok"

Two kinds of field:

- *streamed* text (``text``, reasoning, tool-call ``arguments_delta``) is redacted across deltas: a tail that could
  be the start of the key is held back until the next delta of the same block shows whether it is (then it is
  replaced) or is not (then it is emitted); the block's end, a ``finish``, a ``retry`` or the end of the stream emits
  what is held. Only the exact key is replaced there, so the deltas always join to the block-end's text.
- *whole* strings: every other string field of every chunk, found by walking its ``attrs`` fields (failure
  ``message``, ``code``, ``request_id``, anomaly ``kind`` / ``detail``, tool-call ``id`` and ``name``, a reasoning
  block's ``signature``, ``encrypted`` and ``item_id``, and any field added later) lose the key in any letter case,
  its upper-cased code form (``SK_PROJ_...``, what an unknown ``finish_reason`` becomes), and any start of the key 8
  characters or longer (a quote cut in the middle of it). docs/decisions/0040-redaction-coverage.md.

A key shorter than ``MIN_SECRET_CHARS`` (8) is not redacted: it is no secret worth the name, and replacing a one-letter
key would rewrite every word that contains the letter. See docs/decisions/0015-redaction.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from reactivex import Observable

from operators import (
    BlockEnd,
    Chunk,
    Failure,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    Retry,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)

from .._chunk_stage import ChunkStage, chunk_operator

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "redact_key", "redact_text"]

REDACTED = "[redacted]"
REDACTED_CODE = "REDACTED"
MIN_SECRET_CHARS = 8

Streamed = TextDelta | ReasoningDelta | ToolCallDelta

_V = TypeVar("_V", bound=attrs.AttrsInstance)

STREAMED_FIELDS: dict[type, str] = {
    TextDelta: "text",
    ReasoningDelta: "text",
    ToolCallDelta: "arguments_delta",
    TextBlock: "text",
    ReasoningBlock: "text",
    ToolCallBlock: "arguments",
}
"""The streamed text of each class (redacted exactly, across deltas); every other string field is a whole string."""


def _code_form(key: str) -> str:
    """What ``classify_finish`` makes of a ``finish_reason`` equal to the key."""
    return re.sub(r"[^A-Z0-9]+", "_", key.upper()).strip("_")


def _mask(text: str, form: str, replacement: str) -> str:
    """Replaces, in any letter case, every run of ``MIN_SECRET_CHARS`` or more characters that begins ``form``."""
    folded = text.lower()
    if len(folded) != len(text):  # a letter whose lower case is longer: compare as written
        folded = text
    probe, wanted = form[:MIN_SECRET_CHARS].lower(), form.lower()
    out: list[str] = []
    done = 0
    at = folded.find(probe)
    while at != -1:
        end = at + MIN_SECRET_CHARS
        while end - at < len(wanted) and end < len(text) and folded[end] == wanted[end - at]:
            end += 1
        out += [text[done:at], replacement]
        done = end
        at = folded.find(probe, end)
    out.append(text[done:])
    return "".join(out)


class _Secret:
    """The key, and the forms it can take in a whole string."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.forms = [form for form in (key, _code_form(key)) if len(form) >= MIN_SECRET_CHARS]

    def whole(self, text: str, replacement: str = REDACTED) -> str:
        for form in self.forms:
            text = _mask(text, form, replacement)
        return text

    def split(self, text: str) -> tuple[str, str]:
        """``(emit, hold)``: the exact key replaced; ``hold`` the longest tail that could begin the key."""
        parts = text.split(self.key)
        last = parts[-1]
        hold = 0
        at = last.find(self.key[0], max(0, len(last) - len(self.key) + 1))
        while at != -1:  # the leftmost start of a tail that begins the key gives the longest hold
            if self.key.startswith(last[at:]):
                hold = len(last) - at
                break
            at = last.find(self.key[0], at + 1)
        parts[-1] = last[: len(last) - hold]
        return REDACTED.join(parts), last[len(last) - hold :]


def redact_text(text: str, api_key: str | None) -> str:
    """``text`` as a whole string with ``api_key`` redacted (unchanged when the key is None or too short)."""
    if not api_key or len(api_key) < MIN_SECRET_CHARS:
        return text
    return _Secret(api_key).whole(text)


class _Redactor(ChunkStage[Chunk, Chunk]):
    """Per-subscription state: the held-back tail of each streamed block, by index."""

    def __init__(self, secret: _Secret) -> None:
        self.secret = secret
        self.held: dict[int, tuple[Streamed, str]] = {}

    def whole_fields(self, value: _V) -> _V:
        """``value`` with every string field but its streamed one redacted as a whole string, nested ``attrs`` values
        (a finish's reason and failure, a block) included: a field added to a chunk class is covered as it comes."""
        streamed = STREAMED_FIELDS.get(type(value))
        changes: dict[str, Any] = {}
        for field in attrs.fields(type(value)):
            if field.name == streamed:
                continue
            item = getattr(value, field.name)
            if isinstance(item, str):
                code = field.name == "code" and type(value) is Failure
                redacted: Any = self.secret.whole(item, REDACTED_CODE if code else REDACTED)
            elif attrs.has(type(item)):
                redacted = self.whole_fields(item)
            else:
                continue
            if redacted != item:
                changes[field.name] = redacted
        return attrs.evolve(value, **changes) if changes else value  # type: ignore[misc]  # mypy: a bound TypeVar

    def streamed(self, chunk: Streamed, out: list[Chunk]) -> None:
        if isinstance(chunk, ToolCallDelta):
            chunk = self.whole_fields(chunk)
            text = chunk.arguments_delta
        else:
            text = chunk.text
        previous = self.held.pop(chunk.index, None)
        emit, hold = self.secret.split((previous[1] if previous else "") + text)
        if hold:
            self.held[chunk.index] = (chunk, hold)
        if emit == text:
            out.append(chunk)
        elif isinstance(chunk, ToolCallDelta):
            out.append(attrs.evolve(chunk, arguments_delta=emit))
        elif emit:
            out.append(attrs.evolve(chunk, text=emit))

    def release(self, index: int, out: list[Chunk]) -> None:
        held = self.held.pop(index, None)
        if held is None:
            return
        template, text = held
        if isinstance(template, ToolCallDelta):
            out.append(attrs.evolve(template, arguments_delta=text))
        else:
            out.append(attrs.evolve(template, text=text))

    def release_all(self, out: list[Chunk]) -> None:
        for index in list(self.held):
            self.release(index, out)

    def block_end(self, chunk: BlockEnd) -> BlockEnd:
        block = self.whole_fields(chunk.block)
        exact = REDACTED.join
        if isinstance(block, ToolCallBlock):
            block = attrs.evolve(block, arguments=exact(block.arguments.split(self.secret.key)))
        else:
            block = attrs.evolve(block, text=exact(block.text.split(self.secret.key)))
        return attrs.evolve(chunk, block=block)

    def on_end(self, out: list[Chunk]) -> None:
        self.release_all(out)

    def on_failure(self, error: Exception, out: list[Chunk]) -> bool:
        self.release_all(out)
        return False

    def on_item(self, chunk: Chunk, out: list[Chunk]) -> None:
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            self.streamed(chunk, out)
        elif isinstance(chunk, BlockEnd):
            self.release(chunk.index, out)
            out.append(self.block_end(chunk))
        else:
            if isinstance(chunk, Finish | Retry):
                self.release_all(out)
            out.append(self.whole_fields(chunk))


def redact_key(api_key: str | None) -> Callable[[Observable[Chunk]], Observable[Chunk]]:
    """A chunk operator removing ``api_key`` from every string field of every chunk (identity for no key or a key
    shorter than ``MIN_SECRET_CHARS``). State is per subscription; no I/O."""
    if not api_key or len(api_key) < MIN_SECRET_CHARS:
        return lambda source: source
    secret = _Secret(api_key)

    return chunk_operator(lambda: _Redactor(secret))
