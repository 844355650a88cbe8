"""The fast path of the chat completions parser (docs/decisions/0050-fast-path.md): whole reads of hot deltas.

``chat_read(chain, piece)`` returns False to leave the read to the general path untouched, or True once it has taken
it: the complete events it could apply inline are applied (their chunks appended to ``chain.out``), the rest of the
read from the first other event on is handed to the general path (``_fast_framing.py``). An event is applied inline
only when the rules would turn it into exactly one delta chunk and nothing else, through the rule stages' own
interface (``_fast_apply.py``), so both paths stay one. The text case, by far the most frequent, is written out in the
loop rather than called (a call per event costs more than its few lines). Each format's fast path is in its package
(``operators/messages/_fast.py``, ...); the registry record of a format names it (``_parse_format.py``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._chunks import ReasoningDelta, TextDelta
from ._fast_apply import _new, _set_index, _set_text, fragment
from ._fast_framing import FastChain
from ._fast_framing import decoded as _decoded
from ._fast_framing import finish as _finish
from ._fast_framing import single as _single
from ._wire import UNSET, WireChunk

__all__ = ["chat_read"]

_chat = msgspec.json.Decoder(WireChunk)


def chat_read(chain: FastChain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    payload = _single(parser, piece, b"data: ", chain.shape is not None)
    if payload is not None:  # one event: a text delta applied here, anything else read by the loop below
        try:
            chunk = _chat.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            return False
        choices = chunk.choices
        if (chunk.usage is None and chunk.x_groq is None and choices and len(choices) == 1
                and (chunk.error is UNSET or chunk.error is None)):
            choice = choices[0]
            delta = choice.delta
            text_index = chain.coalesce.text_index
            if not choice.index and choice.finish_reason is None and delta is not None and not delta.refusal:
                content = delta.content
                said = delta.reasoning_content if type(delta.reasoning_content) is str else delta.reasoning
                if (type(content) is str and content and text_index is not None and not delta.tool_calls
                        and (not said if type(said) is str else not delta.reasoning_details)):
                    if chain.close.add_text(text_index, content) < 0:  # nothing changed: the general path reads it
                        return False
                    parser.open_bytes = 0
                    made = _new(TextDelta)  # TextDelta(text_index, content) without attrs' __init__
                    _set_index(made, text_index)
                    _set_text(made, content)
                    chain.out.append(made)
                    chain.shape = True  # the framing is clean: the next read's ``single`` need not look at it
                    return True
        chain.shape = None  # anything else may leave the framing inside an event
        parser.open_bytes = 0
        chunks: list[Any] = [chunk]
        buf, cut = piece, len(piece) - 2
    else:
        chain.shape = None
        decoded = _decoded(_chat, parser, piece)
        if decoded is None:
            return False
        chunks, buf, cut = decoded
    out = chain.out
    text_index, reasoning_index = chain.coalesce.text_index, chain.coalesce.reasoning_index
    run: list[str] = []
    run_index = mark = start = 0
    applied = 0
    for chunk in chunks:
        choices = chunk.choices
        if (chunk.usage is not None or chunk.x_groq is not None or not choices or len(choices) != 1
                or (chunk.error is not UNSET and chunk.error is not None)):
            break
        choice = choices[0]
        delta = choice.delta
        if choice.index or choice.finish_reason is not None or delta is None or delta.refusal:
            break
        content = delta.content
        said = delta.reasoning_content if type(delta.reasoning_content) is str else delta.reasoning
        if type(said) is str:
            if said:
                if content or delta.tool_calls or reasoning_index is None or (run and run_index != reasoning_index):
                    break
                if not run:
                    run_index, mark, start = reasoning_index, len(out), applied
                run.append(said)
                out.append(ReasoningDelta(reasoning_index, said))
        elif delta.reasoning_details:
            break
        if delta.tool_calls:
            if content or len(delta.tool_calls) != 1 or run:
                break
            call = delta.tool_calls[0]
            function = call.function
            if function is None or fragment(chain, call.index, call.id, function.name, function.arguments) < 0:
                break
        elif type(content) is str:
            if content:
                if text_index is None or (run and run_index != text_index):
                    break
                if not run:  # a run of deltas of one block, added at its end (``_fast_apply.py``)
                    run_index, mark, start = text_index, len(out), applied
                run.append(content)
                made = _new(TextDelta)  # TextDelta(text_index, content) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, content)
                out.append(made)
        elif content is not None:
            break
        applied += 1  # noqa: SIM113 (events applied; not an index: a refused run resets it)
    if run and chain.close.add_text(run_index, "".join(run)) < 0:  # the run as one text (``_fast_apply.py``)
        del out[mark:]  # it would cross max_text_bytes: taken back, the general path reads its deltas one by one
        applied = start
    if applied == len(chunks) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(chunks))
