"""The fast path's deltas (docs/decisions/0050-fast-path.md): what the rules do with the hot deltas, through the rule
stages' own interface, or nothing at all (-1) when the rules would do anything more than emit those deltas.

The stages' interface, which their rule path uses too, so the two paths cannot drift apart:
``coalesce.text_index`` / ``coalesce.reasoning_index`` (the open blocks), ``coalesce.settled_call(wire_index, id,
name)`` (the call a delta whose identity changes nothing belongs to), ``accumulate.extend(index, id, name,
arguments)`` (a fragment within ``max_arguments_bytes``) and ``close.add_text(index, text)`` (a text or reasoning
delta within ``max_text_bytes``); ``classify_finish`` passes deltas on unchanged.

Text and reasoning: the deltas of one block that follow each other in a read (a run) are added at the end of the
read's loop, as one text, with one ``close.add_text`` (one call per read rather than per event); their chunks are
appended as they are read. When the run would cross ``max_text_bytes``, its chunks are taken back out of
``chain.out`` and nothing has changed: the general path reads those deltas one by one and decides which one crosses.
Any other hot delta after a run ends the read's inline work, so the deltas count against the limit in the rules'
order. A refused fragment changes nothing either (``settled_call`` marks the call the latest, as the general path then
does too). ``fragment`` returns the UTF-8 bytes the fragment carried.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._chunks import TextDelta, ToolCallDelta
from ._fast_framing import FastChain
from ._wire import UNSET

__all__ = ["fragment"]

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


def fragment(chain: FastChain, wire_index: Any, wire_id: Any, name: Any, arguments: Any) -> int:
    """An arguments fragment (``str``, or absent) of a call already open at ``wire_index``, whose identity values
    change nothing."""
    if type(arguments) is not str:
        if arguments is not UNSET:
            return -1
        arguments = ""
    call = chain.coalesce.settled_call(wire_index, wire_id, name)
    if call is None:
        return -1
    added: int = chain.accumulate.extend(call.index, call.id, call.name, arguments)
    if added >= 0:
        chain.out.append(ToolCallDelta(call.index, call.id or "", call.name, arguments, kind=call.kind))
    return added
