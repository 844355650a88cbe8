"""The fast path of the Messages parser (docs/decisions/0050-fast-path.md): whole reads of hot deltas.

``messages_read(chain, piece)``, as ``operators/_fast_chat.py``'s ``chat_read`` for chat: the complete events of the
read that are text, thinking or ``input_json_delta`` deltas of blocks already open are applied inline through the rule
stages' interface (``operators/_fast_apply.py``), the rest of the read goes to the general path. An event is decoded
into a small typed delta event: a field of another type fails the decode, and the read goes general.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._chunks import ReasoningDelta, TextDelta
from .._fast_apply import _new, _set_index, _set_text, fragment
from .._fast_framing import FastChain
from .._fast_framing import decoded as _decoded
from .._fast_framing import finish as _finish
from .._fast_framing import single as _single
from .._wire import UNSET

__all__ = ["messages_read"]

_HEADERS = (b"data: ", b"event: content_block_delta\ndata: ")
_LIKELY = _HEADERS[1:]
_HOT = _HEADERS[1]


class _MessagesDelta(msgspec.Struct, forbid_unknown_fields=True):
    """A delta as the fast path reads it: a field of another type fails the decode, and the read goes general. So
    does a key not named here: the parser decodes every value (an invalid UTF-8 string or a number out of range is
    ``MALFORMED_RESPONSE`` there), which a skipped key would leave unchecked."""

    type: str | None = None
    text: str | msgspec.UnsetType | None = UNSET
    thinking: str | msgspec.UnsetType | None = UNSET
    partial_json: str | msgspec.UnsetType | None = UNSET


class _MessagesEvent(msgspec.Struct, forbid_unknown_fields=True):
    type: str | None = None
    index: int | None = None
    delta: _MessagesDelta | None = None


_messages = msgspec.json.Decoder(_MessagesEvent)
_string = msgspec.json.Decoder(str).decode
_PREFIX = _HOT + b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":"'
_END = b'"}}\n\n'
"""A text delta as Anthropic writes it: ``_PREFIX % index``, the text as one JSON string, ``_END`` (``shape``)."""


def messages_read(chain: FastChain, piece: bytes) -> bool:
    shape = chain.shape
    if shape:  # the shape of the text delta before: this read is one too when it starts and ends as that one did
        prefix, text_index, limit = shape
        at = len(prefix)
        if piece[:at] == prefix and piece[-5:] == _END and len(piece) <= limit:
            try:  # exactly one JSON string between them (no other key, no space, no line end: the decode refuses)
                said: str = _string(piece[at - 1 : -4])
            except (msgspec.DecodeError, RecursionError):
                return False
            if said:
                if chain.close.add_text(text_index, said) < 0:  # nothing changed: the general path reads it
                    return False
                made = _new(TextDelta)  # TextDelta(text_index, said) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, said)
                chain.out.append(made)
                return True
    parser: Any = chain.format_parser
    payload = _single(parser, piece, _HOT, shape is not None)  # (any shape: the framing is clean)
    if payload is not None:  # one event: a text delta applied here, anything else read by the loop below
        try:
            event = _messages.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            return False
        delta = event.delta
        index = event.index
        if delta is not None and delta.type == "text_delta" and event.type == "content_block_delta":
            text = delta.text
            text_index = chain.coalesce.text_index
            opened = parser.blocks.get(index) if type(index) is int and index >= 0 else None
            if type(text) is str and text and text_index is not None and opened is not None and opened.kind == "text":
                if chain.close.add_text(text_index, text) < 0:  # nothing changed: the general path reads it
                    return False
                parser.open_bytes = 0
                made = _new(TextDelta)  # TextDelta(text_index, text) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, text)
                chain.out.append(made)
                if shape is None:  # the shape of this read, kept when it is the usual one (else () till general)
                    prefix = _PREFIX % index
                    usual = piece[: len(prefix)] == prefix and piece[-5:] == _END
                    chain.shape = (prefix, text_index, parser.event_limit) if usual else ()
                return True
        chain.shape = None  # anything else may leave the framing inside an event, or change the blocks
        parser.open_bytes = 0
        events: list[Any] = [event]
        buf, cut = piece, len(piece) - 2
    else:
        chain.shape = None
        decoded = _decoded(_messages, parser, piece, _HEADERS, _LIKELY)
        if decoded is None:
            return False
        events, buf, cut = decoded
    blocks = parser.blocks
    out = chain.out
    text_index, reasoning_index = chain.coalesce.text_index, chain.coalesce.reasoning_index
    run: list[str] = []
    run_index = mark = start = 0
    applied = 0
    last: Any = None  # the index of the event before, whose block is ``block`` (a read's deltas are mostly one's)
    block: Any = None
    for event in events:
        delta = event.delta
        index = event.index
        if event.type != "content_block_delta" or delta is None:
            break
        if index != last:
            if type(index) is not int or index < 0:
                break
            block = blocks.get(index)
            if block is None:
                break
            last = index
        kind = delta.type
        if kind == "text_delta" and block.kind == "text":
            text = delta.text
            if type(text) is not str:
                break
            if text:
                if text_index is None or (run and run_index != text_index):
                    break
                if not run:  # a run of deltas of one block, added at its end (``_fast_apply.py``)
                    run_index, mark, start = text_index, len(out), applied
                run.append(text)
                made = _new(TextDelta)  # TextDelta(text_index, text) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, text)
                out.append(made)
        elif kind == "thinking_delta" and block.kind == "thinking":
            thinking = delta.thinking
            if type(thinking) is not str:
                break
            if thinking:
                if reasoning_index is None or (run and run_index != reasoning_index):
                    break
                if not run:
                    run_index, mark, start = reasoning_index, len(out), applied
                run.append(thinking)
                out.append(ReasoningDelta(reasoning_index, thinking))
        elif kind == "input_json_delta" and block.kind == "tool":
            if run or type(delta.partial_json) is not str:
                break
            if fragment(chain, index, UNSET, UNSET, delta.partial_json) < 0:
                break
            block.deltas = True
        else:
            break
        applied += 1  # noqa: SIM113 (events applied; not an index: a refused run resets it)
    if run and chain.close.add_text(run_index, "".join(run)) < 0:  # the run as one text (``_fast_apply.py``)
        del out[mark:]  # it would cross max_text_bytes: taken back, the general path reads its deltas one by one
        applied = start
    if applied == len(events) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(events))
