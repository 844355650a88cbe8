"""The fast path of the Responses parser (docs/decisions/0050-fast-path.md): whole reads of hot deltas.

``responses_read(chain, piece)``, as ``operators/_fast_chat.py``'s ``chat_read`` for chat: the complete events of the
read that are text, reasoning or arguments deltas (a function call's arguments or a custom tool call's input, of a
call of that kind already streaming them) are applied inline
through the rule stages' interface (``operators/_fast_apply.py``), the rest of the read goes to the general path. The
content admitted widens the parser's limit for its terminal event, as the general path does (``admit``).
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
from ._calls import DELTA_EVENTS
from ._events import ResponsesEvent
from ._stage import _ESCAPED

__all__ = ["responses_read"]

_responses = msgspec.json.Decoder(ResponsesEvent)


class _Delta(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A delta event as OpenAI writes it, decoded first (``ResponsesEvent`` declares a dozen fields, each one allocated
    and filled per event): the fields both declare are typed alike, and any key ``ResponsesEvent`` declares besides
    fails this decode (then ``ResponsesEvent``'s). The keys only this one names ``ResponsesEvent`` skips: decoded here
    as any JSON, so what decodes here decodes there, to the same ``type``, ``output_index`` and ``delta``, all that the
    loop below reads of an event."""

    type: str | None = None
    output_index: int | None = None
    item_id: Any = None
    delta: str | None = None
    sequence_number: Any = None
    content_index: Any = None
    logprobs: Any = None
    obfuscation: Any = None


_delta = msgspec.json.Decoder(_Delta).decode
_REASONING_EVENTS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_LIKELY = tuple(f"event: {name}\ndata: ".encode() for name in ("response.output_text.delta", *sorted(_REASONING_EVENTS),
                                                                 *sorted(DELTA_EVENTS)))
"""The headers of the hot deltas: tried first, each by a slice (``_fast_framing.decoded``)."""


def responses_read(chain: FastChain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    payload = _single(parser, piece, _LIKELY[0], chain.shape is not None)
    if payload is not None:  # one event: a text delta applied here, anything else read by the loop below
        event: Any
        try:
            event = _delta(payload)
        except (msgspec.DecodeError, RecursionError):
            try:
                event = _responses.decode(payload)
            except (msgspec.DecodeError, RecursionError):
                return False
        if event.type == "response.output_text.delta":
            delta = event.delta
            text_index = chain.coalesce.text_index
            if delta and text_index is not None:
                added = chain.close.add_text(text_index, delta)
                if added < 0:  # nothing changed: the general path reads it
                    return False
                parser.event_limit += _ESCAPED * added  # parser.admit(added), written out (once per read)
                parser.open_bytes = 0
                made = _new(TextDelta)  # TextDelta(text_index, delta) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, delta)
                chain.out.append(made)
                chain.shape = True  # the framing is clean: the next read's ``single`` need not look at it
                return True
        chain.shape = None  # anything else may leave the framing inside an event
        parser.open_bytes = 0
        events: list[Any] = [event]
        buf, cut = piece, len(piece) - 2
    else:
        chain.shape = None
        decoded = _decoded(_responses, parser, piece, None, _LIKELY)
        if decoded is None:
            return False
        events, buf, cut = decoded
    calls = parser.calls
    out = chain.out
    text_index, reasoning_index = chain.coalesce.text_index, chain.coalesce.reasoning_index
    run: list[str] = []
    run_index = mark = start = 0
    admitted = 0  # UTF-8 bytes of content: the terminal event may repeat them (``_ParseResponses.admit``)
    applied = 0
    for event in events:
        kind = event.type
        delta = event.delta
        if kind == "response.output_text.delta":
            if delta:
                if text_index is None or (run and run_index != text_index):
                    break
                if not run:  # a run of deltas of one block, added at its end (``_fast_apply.py``)
                    run_index, mark, start = text_index, len(out), applied
                run.append(delta)
                made = _new(TextDelta)  # TextDelta(text_index, delta) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, delta)
                out.append(made)
        elif kind in DELTA_EVENTS:
            index = event.output_index
            call = calls.get(index) if index is not None else None
            if call is None or not call.deltas or run or call.kind != DELTA_EVENTS[kind]:
                break
            if delta:
                added = fragment(chain, index, UNSET, UNSET, delta)
                if added < 0:
                    break
                admitted += added
                call.add_delta(delta)
        elif kind in _REASONING_EVENTS:
            if delta:
                if reasoning_index is None or (run and run_index != reasoning_index):
                    break
                if not run:
                    run_index, mark, start = reasoning_index, len(out), applied
                run.append(delta)
                out.append(ReasoningDelta(reasoning_index, delta))
        else:
            break
        applied += 1  # noqa: SIM113 (events applied; not an index: a refused run resets it)
    if run:  # the run as one text (``_fast_apply.py``)
        added = chain.close.add_text(run_index, "".join(run))
        if added < 0:  # it would cross max_text_bytes: taken back, the general path reads its deltas one by one
            del out[mark:]
            applied = start
        else:
            admitted += added
    parser.admit(admitted)
    if applied == len(events) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(events))
