"""The fast path of the Gemini parser (docs/decisions/0050-fast-path.md, "Gemini"): whole reads of plain events.

``gemini_read(chain, piece)``, as ``operators/_fast_chat.py``'s ``chat_read`` for chat: the complete events of the
read (LF or CRLF line ends, ``_fast_framing.decoded``) whose candidate 0 carries only text and thought parts, of
blocks already open, are applied inline through the rule stages' interface (``operators/_fast_apply.py``); each
event's ``usageMetadata`` counts and a ``finishReason`` (parser state: the rules see them only at the end) are kept as
the parser keeps them (``_stage._ParseGemini``). From the first other event on (a block opening, a crossed limit, a
second candidate...), the rest of the read goes to the general path.

An event is decoded into ``_Event``, which is what makes it plain: every field the parser decodes is decoded here at
least as strictly (a field skipped is not checked: an invalid UTF-8 string or a number out of range there would pass
here and fail the parser), and what the parser would do more with than keep fails the decode (a part with another key
than ``text`` and ``thought``: a ``functionCall``, a ``thoughtSignature``, a file...; ``promptFeedback``, ``error``,
a chat or Messages payload's ``choices`` / ``type``, another candidate's ``index``, another ``role``, a count the
parser would drop or keep as a float, a ``usageMetadata`` key not known): the read then goes general, whole, and the
rules read it. A check made by the decoder costs no Python per event.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from .._chunks import ReasoningDelta, TextDelta
from .._fast_apply import _new, _set_index, _set_text
from .._fast_framing import FastChain
from .._fast_framing import decoded as _decoded
from .._fast_framing import finish as _finish
from .._fast_framing import single_crlf as _single_crlf
from .._usage import MAX_COUNT
from ._events import UNSET, USAGE_FIELDS

__all__ = ["gemini_read"]

_Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
"""A count the parser keeps as it is (``is_count``): an integer in 64 bits, not negative."""
_Absent = msgspec.UnsetType
"""A field that must be absent: any value (``null`` too) fails the decode."""


class _Counts(msgspec.Struct, rename="camel", frozen=True, gc=False, forbid_unknown_fields=True):
    """``usageMetadata``: the counts the parser reads (``_events.USAGE_FIELDS``), each a valid count or absent, and
    the other keys Google sends, read as the parser reads them (``dict[str, Any]``: a value is decoded, so an invalid
    UTF-8 string or a number out of range fails both). Any other key fails the decode (skipping it would not check
    it)."""

    prompt_token_count: _Count | None = None
    cached_content_token_count: _Count | None = None
    candidates_token_count: _Count | None = None
    thoughts_token_count: _Count | None = None
    total_token_count: _Count | None = None
    tool_use_prompt_token_count: Any = None
    prompt_tokens_details: Any = None
    cache_tokens_details: Any = None
    candidates_tokens_details: Any = None
    tool_use_prompt_tokens_details: Any = None
    traffic_type: Any = None
    service_tier: Any = None


_NO_COUNTS = _Counts()
if tuple(info.encode_name for info in msgspec.structs.fields(_Counts))[:5] != USAGE_FIELDS:  # pragma: no cover
    raise ImportError("_events.USAGE_FIELDS changed: update operators/gemini/_fast.py")


class _Part(msgspec.Struct, rename="camel", gc=False, forbid_unknown_fields=True):
    """A text or thought part; any other key (a file, a call, a signature...) sends the read general."""

    text: str
    thought: Any = None


class _Content(msgspec.Struct, gc=False):
    parts: list[_Part] | None = None
    role: Literal["model"] | None = None  # decoded, as the parser decodes it (another role goes general)


class _Candidate(msgspec.Struct, rename="camel", gc=False):
    content: _Content | None = None
    finish_reason: str | None = None
    finish_message: Any = None
    index: Literal[0] | None = None


class _Event(msgspec.Struct, rename="camel", gc=False):
    candidates: list[_Candidate] | None = None
    usage_metadata: _Counts = _NO_COUNTS  # (``null``, which the parser reads as absent, goes general)
    prompt_feedback: _Absent = UNSET
    error: _Absent = UNSET
    choices: _Absent = UNSET
    type: _Absent = UNSET


_gemini = msgspec.json.Decoder(_Event)


def gemini_read(chain: FastChain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    if parser.finish is not None or parser.open is not None:  # after the finish, or a call streaming: the rules read
        return False
    payload = _single_crlf(parser, piece)
    if payload is not None:  # one event (Google's framing): no list of payloads, no split
        try:
            events: list[_Event] = [_gemini.decode(payload)]
        except (msgspec.DecodeError, RecursionError):
            return False
        parser.open_bytes = 0
        buf, cut = piece, len(piece) - 2
    else:
        decoded = _decoded(_gemini, parser, piece)
        if decoded is None:
            return False
        events, buf, cut = decoded
    out = chain.out
    text_index, reasoning_index = chain.coalesce.text_index, chain.coalesce.reasoning_index
    run: list[str] = []
    run_index = mark = start = 0
    finish: _Candidate | None = None
    applied = 0
    for event in events:
        candidates = event.candidates
        if candidates:
            if len(candidates) != 1:
                break
            candidate = candidates[0]
            content = candidate.content
            parts = content.parts if content is not None else None
            if parts:
                at, ran = len(out), len(run)
                for part in parts:
                    text = part.text
                    if not text:
                        continue
                    if part.thought is True:
                        if reasoning_index is None or (run and run_index != reasoning_index):
                            break
                        if not run:
                            run_index, mark, start = reasoning_index, len(out), applied
                        run.append(text)
                        out.append(ReasoningDelta(reasoning_index, text))
                    else:
                        if text_index is None or (run and run_index != text_index):
                            break
                        if not run:  # a run of deltas of one block, added at its end (``_fast_apply.py``)
                            run_index, mark, start = text_index, len(out), applied
                        run.append(text)
                        made = _new(TextDelta)  # TextDelta(text_index, text) without attrs' __init__ (_fast_apply.py)
                        _set_index(made, text_index)
                        _set_text(made, text)
                        out.append(made)
                else:
                    parts = None
                if parts is not None:  # a block to open: the event's deltas taken back, it goes general
                    del out[at:]
                    del run[ran:]
                    break
            if candidate.finish_reason is not None:
                finish = candidate
        applied += 1  # events applied (not an index: a refused run resets it)
        if finish is not None:  # what follows the finish is read by the rules (``after-finish``)
            break
    if run:
        if chain.close.add_text(run_index, "".join(run)) < 0:  # the run as one text (``_fast_apply.py``)
            del out[mark:]  # it would cross max_text_bytes: taken back, the general path reads its deltas one by one
            applied = start
            finish = None  # the finish event is among those taken back (unseen: the rules halt within the run)
        else:
            parser.said = True
    if applied:  # the parser's state after them, as ``_ParseGemini._response`` leaves it: each count's last value
        usage = parser.usage
        counts = events[applied - 1].usage_metadata
        if (value := counts.prompt_token_count) is not None:
            usage["promptTokenCount"] = value
        if (value := counts.cached_content_token_count) is not None:
            usage["cachedContentTokenCount"] = value
        if (value := counts.candidates_token_count) is not None:
            usage["candidatesTokenCount"] = value
        if (value := counts.thoughts_token_count) is not None:
            usage["thoughtsTokenCount"] = value
        if (value := counts.total_token_count) is not None:
            usage["totalTokenCount"] = value
        if applied > 1:
            _earlier(usage, events[applied - 2 :: -1], counts)
        if finish is not None:  # the finish event is the last one applied
            parser._finish(finish.finish_reason, finish.finish_message)
    if applied == len(events) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(events))


def _earlier(usage: dict[str, int], earlier: list[_Event], last: _Counts) -> None:
    """Each count the last event applied lacks: its last value in the events before it (``earlier``, last first).
    Written out per count: an attribute read by name (``getattr``) cost three times as much per event."""
    if last.prompt_token_count is None:
        for event in earlier:
            if event.usage_metadata.prompt_token_count is not None:
                usage["promptTokenCount"] = event.usage_metadata.prompt_token_count
                break
    if last.cached_content_token_count is None:
        for event in earlier:
            if event.usage_metadata.cached_content_token_count is not None:
                usage["cachedContentTokenCount"] = event.usage_metadata.cached_content_token_count
                break
    if last.candidates_token_count is None:
        for event in earlier:
            if event.usage_metadata.candidates_token_count is not None:
                usage["candidatesTokenCount"] = event.usage_metadata.candidates_token_count
                break
    if last.thoughts_token_count is None:
        for event in earlier:
            if event.usage_metadata.thoughts_token_count is not None:
                usage["thoughtsTokenCount"] = event.usage_metadata.thoughts_token_count
                break
    if last.total_token_count is None:
        for event in earlier:
            if event.usage_metadata.total_token_count is not None:
                usage["totalTokenCount"] = event.usage_metadata.total_token_count
                break
