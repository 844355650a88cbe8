"""The fast path of ``default_chain`` (docs/decisions/0050-fast-path.md): whole reads of hot deltas, per format.

``HOT_READS[type(parser)](chain, piece)`` returns False to leave the read to the general path untouched, or True once
it has taken it: the complete events it could apply inline are applied (their chunks appended to ``chain.out``), the
rest of the read from the first other event on (and an incomplete tail with other than ``data:`` / ``event:`` lines
in it) is handed to ``chain.general``. An event is applied inline only when the rules would turn it into exactly one
delta chunk and nothing else: its state change is the one the rules would make (``_fast_apply.py``), so both paths
stay one. The framing and the hand-over to the general path are ``_fast_framing.py``'s. The text case, by far the most
frequent, is written out in each loop rather than called (a call per event costs more than its few lines);
reasoning and fragments go through ``_fast_apply.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._chain import Chain, HotRead
from ._chunks import TextDelta
from ._fast_apply import _new, _set_index, _set_text, fragment, reasoning
from ._fast_framing import decoded as _decoded
from ._fast_framing import finish as _finish
from ._messages_stage import _ParseMessages
from ._parse_sse import _ParseSse
from ._responses_events import ResponsesEvent
from ._responses_stage import _ParseResponses
from ._wire import UNSET, WireChunk

__all__ = ["HOT_READS", "HotRead"]


_MESSAGES_HEADERS = (b"data: ", b"event: content_block_delta\ndata: ")


# -- chat completions -------------------------------------------------------------------------------------------------

_chat = msgspec.json.Decoder(WireChunk)


def _chat_read(chain: Chain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    decoded = _decoded(_chat, parser, piece)
    if decoded is None:
        return False
    chunks, buf, cut = decoded
    close, out = chain.close, chain.out
    limit = close.limits.max_text_bytes
    text_index = chain.coalesce.text_index
    buffer = close.texts.buffer(text_index) if text_index is not None else None
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
            if said and (content or delta.tool_calls or reasoning(chain, said) < 0):
                break
        elif delta.reasoning_details:
            break
        if delta.tool_calls:
            if content or len(delta.tool_calls) != 1:
                break
            call = delta.tool_calls[0]
            function = call.function
            if function is None or fragment(chain, call.index, call.id, function.name, function.arguments) < 0:
                break
        elif type(content) is str:
            if content:
                if buffer is None:
                    break
                encoded = content.encode("utf-8", "surrogatepass")
                size = close.text_bytes + len(encoded)
                if size > limit:
                    break
                buffer += encoded
                close.text_bytes = size
                made = _new(TextDelta)  # TextDelta(text_index, content) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, content)
                out.append(made)
        elif content is not None:
            break
        applied += 1
    if applied == len(chunks) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(chunks))


# -- the Messages API -------------------------------------------------------------------------------------------------


class _MessagesDelta(msgspec.Struct):
    """A delta as the fast path reads it: a field of another type fails the decode, and the read goes general."""

    type: str | None = None
    text: str | msgspec.UnsetType | None = UNSET
    thinking: str | msgspec.UnsetType | None = UNSET
    partial_json: str | msgspec.UnsetType | None = UNSET


class _MessagesEvent(msgspec.Struct):
    type: str | None = None
    index: int | None = None
    delta: _MessagesDelta | None = None


_messages = msgspec.json.Decoder(_MessagesEvent)


def _messages_read(chain: Chain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    decoded = _decoded(_messages, parser, piece, _MESSAGES_HEADERS)
    if decoded is None:
        return False
    events, buf, cut = decoded
    blocks = parser.blocks
    close, out = chain.close, chain.out
    limit = close.limits.max_text_bytes
    text_index = chain.coalesce.text_index
    buffer = close.texts.buffer(text_index) if text_index is not None else None
    applied = 0
    for event in events:
        delta = event.delta
        index = event.index
        if event.type != "content_block_delta" or delta is None or type(index) is not int or index < 0:
            break
        block = blocks.get(index)
        if block is None:
            break
        kind = delta.type
        if kind == "text_delta" and block.kind == "text":
            text = delta.text
            if type(text) is not str:
                break
            if text:
                if buffer is None:
                    break
                encoded = text.encode("utf-8", "surrogatepass")
                size = close.text_bytes + len(encoded)
                if size > limit:
                    break
                buffer += encoded
                close.text_bytes = size
                made = _new(TextDelta)  # TextDelta(text_index, text) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, text)
                out.append(made)
        elif kind == "thinking_delta" and block.kind == "thinking":
            thinking = delta.thinking
            if type(thinking) is not str or (thinking and reasoning(chain, thinking) < 0):
                break
        elif kind == "input_json_delta" and block.kind == "tool":
            if type(delta.partial_json) is not str or fragment(chain, index, UNSET, UNSET, delta.partial_json) < 0:
                break
            block.deltas = True
        else:
            break
        applied += 1
    if applied == len(events) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(events))


# -- the Responses API ------------------------------------------------------------------------------------------------

_responses = msgspec.json.Decoder(ResponsesEvent)
_REASONING_EVENTS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


def _responses_read(chain: Chain, piece: bytes) -> bool:
    parser: Any = chain.format_parser
    decoded = _decoded(_responses, parser, piece)
    if decoded is None:
        return False
    events, buf, cut = decoded
    calls = parser.calls
    close, out = chain.close, chain.out
    limit = close.limits.max_text_bytes
    text_index = chain.coalesce.text_index
    buffer = close.texts.buffer(text_index) if text_index is not None else None
    admitted = 0  # UTF-8 bytes of content: the terminal event may repeat them (``_ParseResponses.admit``)
    applied = 0
    for event in events:
        kind = event.type
        delta = event.delta
        if kind == "response.output_text.delta":
            if delta:
                if buffer is None:
                    break
                encoded = delta.encode("utf-8", "surrogatepass")
                size = close.text_bytes + len(encoded)
                if size > limit:
                    break
                buffer += encoded
                close.text_bytes = size
                admitted += len(encoded)
                made = _new(TextDelta)  # TextDelta(text_index, delta) without attrs' __init__ (_fast_apply.py)
                _set_index(made, text_index)
                _set_text(made, delta)
                out.append(made)
        elif kind == "response.function_call_arguments.delta":
            index = event.output_index
            call = calls.get(index) if index is not None else None
            if call is None or not call.deltas:
                break
            if delta:
                added = fragment(chain, index, UNSET, UNSET, delta)
                if added < 0:
                    break
                admitted += added
                call.deltas += 1
                call.arguments.append(delta)
        elif kind in _REASONING_EVENTS:
            if delta:
                added = reasoning(chain, delta)
                if added < 0:
                    break
                admitted += added
        else:
            break
        applied += 1
    parser.admit(admitted)
    if applied == len(events) and cut + 2 == len(buf):  # the whole read, nothing left open
        return True
    return _finish(chain, parser, buf, cut, applied, len(events))


HOT_READS: dict[type, HotRead] = {
    _ParseSse: _chat_read,
    _ParseMessages: _messages_read,
    _ParseResponses: _responses_read,
}
"""The parser's class -> the fast path of its format."""
