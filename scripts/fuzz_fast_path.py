"""The ``fast_path`` target of ``scripts/fuzz.py``: the default chain against the rule chain as its oracle.

The default chain (``translate`` without ``rules=``) runs ``operators.extend.default_chain`` and its fast path
(docs/decisions/0050-fast-path.md); ``rules=protocol_rules(limits)`` runs the same rules as separate operators, the
general path. For one input they must give exactly the same chunks, anomalies included, unsplit and at each split
the input's plan draws and one event per read (how a live stream arrives: the shapes a fast path keeps between its
reads), with the format detected and with one named (drawn from the input's CRC-32 among
``operators.FORMATS``: chat, messages, responses, gemini).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import Any

import pipeline
from operators import FORMATS, Chunk, Limits
from scripts.fuzz_reference import ensure

__all__ = ["check_fast_path", "event_reads", "run_chunks"]

_BLANK_LINE = re.compile(rb"(?<=\r\n\r\n)|(?<=\n\n)|(?<=\r\r)")

Plan = Callable[[bytes], tuple[Limits, list[list[bytes]]]]


def run_chunks(pieces: list[bytes], limits: Limits, format: Any, *, general: bool) -> list[Chunk]:
    out: list[Chunk] = []
    errors: list[Exception] = []
    rules = pipeline.protocol_rules(limits) if general else None
    pipeline.translate(pieces, anomalies=True, limits=limits, format=format, rules=rules).subscribe(
        on_next=out.append, on_error=errors.append
    )
    if errors:
        raise errors[0]
    return out


def event_reads(data: bytes) -> list[bytes]:
    """``data`` cut after every blank line: one event per read (the last read may hold an open event)."""
    return [piece for piece in _BLANK_LINE.split(data) if piece]


def check_fast_path(data: bytes, plan: Plan) -> None:
    limits, splits = plan(data)
    named = FORMATS[zlib.crc32(data) % len(FORMATS)]
    for format in (None, named):
        for pieces in [[data], event_reads(data), *splits]:
            fast = run_chunks(pieces, limits, format, general=False)
            ensure(fast == run_chunks(pieces, limits, format, general=True),
                   f"the fast path and the rule chain differ ({format or 'detected'}, {len(pieces)} reads)")
