"""The fast path's state changes (docs/decisions/0050-fast-path.md): what the rules do with one hot delta, applied
to their own stage objects, or nothing at all (-1) when the rules would do anything more than emit that one delta.

Each function mirrors, for one case, ``coalesce_identity`` (which block, which call), ``accumulate_arguments`` (the
call's arguments buffer, ``max_arguments_bytes``) and ``close_on_done`` (the block's text buffer, ``max_text_bytes``);
``classify_finish`` passes deltas on unchanged. The checks come first, the changes after, so a refused delta leaves
every stage as it was and the general path decides it. They return the UTF-8 bytes the delta carried.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._chain import Chain
from ._chunks import ReasoningDelta, TextDelta, ToolCallDelta
from ._wire import UNSET

__all__ = ["fragment", "reasoning"]

# A text delta is the one object made per event on the hottest path: made with its slots set directly, it costs about
# half of what attrs' frozen __init__ costs (a bound object.__setattr__ per field). Only while TextDelta stays two
# plain fields (no validator, converter or default), which this checks once, at import.
_FIELDS = attrs.fields(TextDelta)
if [(f.name, f.validator, f.converter, f.default) for f in _FIELDS] != [
    ("index", None, None, attrs.NOTHING),
    ("text", None, None, attrs.NOTHING),
]:  # pragma: no cover
    raise ImportError("TextDelta changed shape: update operators/_fast_apply.py")
_new = object.__new__
_set_index = TextDelta.__dict__["index"].__set__
_set_text = TextDelta.__dict__["text"].__set__


def reasoning(chain: Chain, text: str) -> int:
    """A non-empty reasoning delta of the open reasoning block."""
    index = chain.coalesce.reasoning_index
    if index is None:
        return -1
    close = chain.close
    buffer = close.texts.buffer(index)
    if buffer is None:
        return -1
    encoded = text.encode("utf-8", "surrogatepass")
    size = close.text_bytes + len(encoded)
    if size > close.limits.max_text_bytes:
        return -1
    buffer += encoded
    close.text_bytes = size
    chain.out.append(ReasoningDelta(index, text))
    return len(encoded)


def _settled(value: Any, known: str | None, call_reported: set[str], key: str) -> bool:
    """Whether an identity value changes nothing and reports nothing: absent, the value already established, or an
    empty value already reported for this call."""
    if value is UNSET:
        return True
    if type(value) is str and value:
        return value == known
    return (value is None or value == "") and key in call_reported


def fragment(chain: Chain, wire_index: Any, wire_id: Any, name: Any, arguments: Any) -> int:
    """An arguments fragment (``str``, or absent) of a call already open at ``wire_index``, whose identity values
    change nothing."""
    if type(wire_index) is not int:
        return -1
    coalesce = chain.coalesce
    call = coalesce.by_wire_index.get(wire_index)
    if call is None:
        return -1
    if not _settled(wire_id, call.id, call.reported, "empty-id"):
        return -1
    if not _settled(name, call.name, call.reported, "empty-name"):
        return -1
    accumulate = chain.accumulate
    state = accumulate.calls.get(call.index)
    if state is None:
        return -1
    if type(arguments) is str:
        encoded = arguments.encode("utf-8", "surrogatepass")
        if len(state.parts) + len(encoded) > accumulate.limits.max_arguments_bytes:
            return -1
    elif arguments is UNSET:
        arguments, encoded = "", b""
    else:
        return -1
    coalesce.last_call = call
    state.id = call.id
    state.name = call.name
    state.parts += encoded
    chain.out.append(ToolCallDelta(call.index, call.id or "", call.name, arguments))
    return len(encoded)
