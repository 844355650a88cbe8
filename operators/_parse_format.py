"""``parse_stream``: the parse operator of a wire format, named or detected from the first event.

Four formats share the SSE framing (``_sse_framing.py``) and the signals the rules consume; each is one
``WireParser`` record of ``PARSER_RECORDS`` (its name, detection, parser and fast path), defined in the format's
package (``operators/messages/``, ``operators/responses/``; chat's parser is ``_parse_sse.py``):

    "chat"       OpenAI-compatible chat completions (``parse_sse``)
    "messages"   the Anthropic-style Messages API stream (``parse_messages_sse``)
    "responses"  the OpenAI Responses API stream (``parse_responses_sse``)
    "gemini"     Google's Gemini ``streamGenerateContent?alt=sse`` (``parse_gemini_sse``)

With no format given, the bytes are held until the first event that says which it is (docs/decisions/
0026-format-detection.md): an ``event:`` name (``message_start``, ``content_block_*`` ... for Messages,
``response.*`` for Responses), else the first ``data:`` payload's ``type``; a payload without one is the format whose
record claims it (Gemini's: ``candidates``, ``promptFeedback`` or ``usageMetadata``, no ``choices``), else chat
(``choices``, ``[DONE]``, ``{"error": ...}``). Undecided when the bytes end (or past ``max_event_bytes`` of them):
chat. The chosen parser then reads the held bytes and the rest, so detection never changes what a format's parser emits.
Detection is linear: each read's complete lines are looked at once (a long head of comment lines is not scanned
again on every read).

The marble diagram is on the factory: ``help(operators.parse_stream)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias, cast

import msgspec

from ._fast_chat import chat_read
from ._fast_framing import HotRead
from ._limits import DEFAULT_LIMITS, Limits
from ._parse_sse import _ParseSse, chat_stage
from ._signals import Signal
from ._stage import BaseStage, Batch, Operator, stage_operator
from ._wire_parser import ParserStage, WireParser, never
from .gemini import GEMINI_PARSER
from .messages import MESSAGES_PARSER
from .responses import RESPONSES_PARSER

__all__ = ["FORMATS", "HOT_READS", "PARSERS", "PARSER_RECORDS", "Format", "detect_format", "parse_stream"]

Format: TypeAlias = Literal["chat", "messages", "responses", "gemini"]

PARSER_RECORDS: tuple[WireParser, ...] = (
    WireParser("chat", _ParseSse, never, never, hot_read=chat_read),  # the default: a payload without a type is chat
    MESSAGES_PARSER,  # operators/messages/
    RESPONSES_PARSER,  # operators/responses/
    GEMINI_PARSER,  # operators/gemini/
)
"""One record per wire format, the default (chat) first: the registry ``FORMATS``, ``PARSERS``, ``HOT_READS`` and
detection read. A format's record lives in its package (``operators/<format>/_parse.py``)."""

FORMATS: tuple[Format, ...] = tuple(cast(Format, record.name) for record in PARSER_RECORDS)

PARSERS: Mapping[str, ParserStage] = MappingProxyType({record.name: record.stage for record in PARSER_RECORDS})
"""Format name -> the stage factory of its parser (the formats this build reads)."""

HOT_READS: Mapping[type, HotRead] = MappingProxyType(
    {record.stage: record.hot_read for record in PARSER_RECORDS if record.hot_read is not None}
)
"""The parser's class -> the fast path of its format (``default_chain``, docs/decisions/0050-fast-path.md)."""


class _Typed(msgspec.Struct):
    type: str | None = None
    error: object = None


_typed = msgspec.json.Decoder(_Typed)


def _owner(kind: bytes) -> Format | None:
    return next((cast(Format, record.name) for record in PARSER_RECORDS if record.owns_type(kind)), None)


def _of_payload(value: bytes) -> Format | None:
    if not value.startswith(b"{"):
        return "chat" if value == b"[DONE]" else None
    try:
        payload = _typed.decode(value)
    except msgspec.DecodeError:
        return "chat"  # the chat parser reports it as malformed
    kind = (payload.type or "").encode()
    if kind == b"error":
        return next((cast(Format, r.name) for r in PARSER_RECORDS if r.owns_error(payload.error)), "chat")
    if not kind:  # no type: a format whose payloads have none may claim it, else it is chat's
        return next((cast(Format, r.name) for r in PARSER_RECORDS if r.owns_payload(value)), "chat")
    return _owner(kind) or "chat"


def detect_format(head: bytes) -> Format | None:
    """The format the first telling event of ``head`` names, or ``None`` while its complete lines say nothing."""
    text = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    start = 0
    while (end := text.find(b"\n", start)) != -1:  # the last line may be incomplete: never looked at
        line = text[start:end] if text[start : start + 1] != b":" else b""  # a comment line costs nothing
        start = end + 1
        if line.startswith(b"event:"):
            owner = _owner(line[6:].strip())
            if owner is not None:
                return owner
        elif line.startswith(b"data:"):
            found = _of_payload(line[5:].strip())
            if found is not None:
                return found
    return None


class _Detect(BaseStage[bytes, Signal]):
    """Holds the bytes until the format is known, then hands them and the rest to that format's parser."""

    __slots__ = ("comments", "finished", "head", "inner", "limits", "scanned")

    def __init__(self, limits: Limits, *, comments: bool = False) -> None:
        self.limits = limits
        self.comments = comments
        self.head = bytearray()
        self.scanned = 0  # the head's bytes up to the end of its last complete line: already looked at
        self.inner: BaseStage[bytes, Signal] | None = None
        self.finished = False  # the inner parser's, copied after each call

    def _start(self, chosen: Format, out: list[Signal]) -> None:
        factory = PARSERS.get(chosen, chat_stage)
        self.inner = factory(self.limits, comments=self.comments)
        held = bytes(self.head)
        self.head.clear()
        if held:
            self.inner.on_batch(held, out)
            self.finished = self.inner.finished

    def on_batch(self, batch: bytes, out: list[Signal]) -> None:
        if self.inner is not None:
            self.inner.on_batch(batch, out)
            self.finished = self.inner.finished
            return
        self.head += batch
        chosen = self._scan(final=False, new=len(batch))
        if chosen is None and len(self.head) <= self.limits.max_event_bytes:
            return
        self._start(chosen or "chat", out)

    def _scan(self, *, final: bool, new: int = 0) -> Format | None:
        """Detection over the lines completed since the last read (all the rest when ``final``); a line end is looked
        for in the ``new`` bytes only (the earlier ones past ``scanned`` have none), so a long first line in small
        reads costs its bytes once."""
        head = self.head
        start = self.scanned
        stop = min(len(head), self.limits.max_event_bytes + 1)  # past it detection gives up: never scanned
        since = max(start, len(head) - new)
        end = stop if final else max(head.rfind(b"\n", since, stop), head.rfind(b"\r", since, stop)) + 1
        if end <= start:
            return None
        # a CR ending the previous scan may have been half of a CRLF: its LF then starts an empty line, telling nothing
        fresh = bytes(head[start:end])
        self.scanned = end
        return detect_format(fresh if not final else fresh + b"\n")

    def on_end(self, out: list[Signal]) -> None:
        if self.inner is None:
            self._start(self._scan(final=True) or "chat", out)
        assert self.inner is not None
        if not self.inner.finished:
            self.inner.on_end(out)

    def on_failure(self, error: Exception, out: list[Signal]) -> bool:
        if self.inner is None:
            self._start("chat", out)
        assert self.inner is not None
        return self.inner.on_failure(error, out)


def parse_stream(
    format: Format | None = None, limits: Limits | None = None, *, comments: bool = False
) -> Operator[bytes, Batch[Signal]]:
    r"""Bytes to wire values for ``format`` (``"chat"``, ``"messages"``, ``"responses"``, ``"gemini"``), or for the
    format the first event names when ``format`` is None. ``comments=True`` reports each comment line as a
    ``comment`` anomaly. ``ValueError`` for a format this build does not read.

    Marble (``m`` a Messages event, ``c`` what ``parse_messages_sse`` makes of it)::

        bytes:  --"event: message_st"--"art\ndata: {..}\n\n"--|
        out:    --[]-------------------[c]--------------------|

    Decision note: docs/decisions/0026-format-detection.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    if format is None:
        return stage_operator(lambda: _Detect(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))
    if format not in PARSERS:
        known = ", ".join(repr(name) for name in PARSERS)
        raise ValueError(f"format is one of {known} (or None to detect it), got {format!r}")
    factory = PARSERS[format]
    return stage_operator(lambda: factory(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))
