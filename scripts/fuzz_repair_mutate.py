"""Malformed streams from well-formed ones, for the ``repair`` fuzz target (``fuzz_repair.py``): the ways a stream goes
wrong on the wire, applied to a seed's lines and events rather than its bytes at random, so most mutations still
parse and reach the repairers' rules.

    mutate_stream(random.Random(1), seed_bytes) -> bytes

One call applies one to three of: a line deleted or duplicated; an event deleted, duplicated or moved; an identity
value (``id``, ``call_id``, ``item_id``, ``name``) blanked, nulled or changed; an index (``index``, ``output_index``,
``content_index``) changed; a finish or a flag (``finishReason``, ``finish_reason``, ``stop_reason``,
``willContinue``, ``thought``, ``blockReason``) nulled, flipped or made another reason; a ``[DONE]``, a comment, a
keep-alive or an ``event:`` line inserted at a line boundary; one line end or every one made CRLF (or a lone CR); the
body cut at any byte.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

__all__ = ["MUTATIONS", "mutate_stream"]

_IDENTITY = re.compile(rb'"(id|call_id|item_id|name|tool_call_id)"\s*:\s*("(?:[^"\\]|\\.)*"|null)')
_INDEX = re.compile(rb'"(index|output_index|content_index|sequence_number)"\s*:\s*(-?\d+)')
_FLAG = re.compile(rb'"(finishReason|finish_reason|stop_reason|willContinue|thought|blockReason)"\s*:\s*'
                   rb'("(?:[^"\\]|\\.)*"|null|true|false)')
_FLAGS = [b"null", b"true", b"false", b'""', b'"STOP"', b'"MAX_TOKENS"', b'"SAFETY"', b'"MALFORMED_FUNCTION_CALL"',
          b'"OTHER"', b'"stop"', b'"tool_calls"', b'"length"', b'"end_turn"', b'"tool_use"']
_INSERTS = [b"data: [DONE]\n\n", b": keep-alive\n\n", b": ping\n", b"\n", b"event: ping\n", b"event: error\n",
            b"data: [DONE]\n", b"id: 7\n", b"retry: 10\n", b"data:\n\n", b"\n\n"]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


_BLANK = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _events(data: bytes) -> list[bytes]:
    """``data`` cut after each blank line (the unterminated rest last), in one pass: a lazy ``.*?`` before the blank
    line, tried from every byte of a long unterminated tail, took half a minute on a 64 KiB one."""
    parts, start = [], 0
    for blank in _BLANK.finditer(data):
        parts.append(data[start : blank.end()])
        start = blank.end()
    return [*parts, data[start:]] if start < len(data) else parts


def _delete_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if lines:
        del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if lines:
        at = rng.randrange(len(lines))
        lines.insert(at if rng.random() < 0.7 else rng.randrange(len(lines) + 1), lines[at])
    return b"".join(lines)


def _delete_event(rng: random.Random, data: bytes) -> bytes:
    events = _events(data)
    if events:
        del events[rng.randrange(len(events))]
    return b"".join(events)


def _duplicate_event(rng: random.Random, data: bytes) -> bytes:
    events = _events(data)
    if events:
        at = rng.randrange(len(events))
        events.insert(at + 1 if rng.random() < 0.7 else rng.randrange(len(events) + 1), events[at])
    return b"".join(events)


def _move_event(rng: random.Random, data: bytes) -> bytes:
    events = _events(data)
    if len(events) > 1:
        event = events.pop(rng.randrange(len(events)))
        events.insert(rng.randrange(len(events) + 1), event)
    return b"".join(events)


def _identity(rng: random.Random, data: bytes) -> bytes:
    found = list(_IDENTITY.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    value = rng.choice([b'""', b"null", b'"x"', b'"call_1"', b'"toolu_1"', b'"fc_1"', b'"get_weather"',
                        match.group(2) + b"", b'"' + bytes(rng.choice(b"abc") for _ in range(3)) + b'"'])
    return data[: match.start(2)] + value + data[match.end(2):]


def _index(rng: random.Random, data: bytes) -> bytes:
    found = list(_INDEX.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    value = rng.choice([b"0", b"1", b"2", b"-1", b"7", str(int(match.group(2)) + 1).encode(), b'"0"', b"null"])
    return data[: match.start(2)] + value + data[match.end(2):]


def _flag(rng: random.Random, data: bytes) -> bytes:
    found = list(_FLAG.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    return data[: match.start(2)] + rng.choice(_FLAGS) + data[match.end(2):]


def _insert(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rng.randint(0, len(lines))
    lines.insert(at, rng.choice(_INSERTS))
    return b"".join(lines)


def _carriage_returns(rng: random.Random, data: bytes) -> bytes:
    choice = rng.randrange(3)
    if choice == 0:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    ends = [m.start() for m in re.finditer(rb"\n", data)]
    if not ends:
        return data
    at = rng.choice(ends)
    return data[:at] + (b"\r\n" if choice == 1 else b"\r") + data[at + 1:]


def _truncate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    if rng.random() < 0.5:  # near the end: the trailing usage chunk or terminator being sent
        return data[: max(0, len(data) - rng.randint(1, min(len(data), 400)))]
    return data[: rng.randrange(len(data))]


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "delete-line": _delete_line,
    "duplicate-line": _duplicate_line,
    "delete-event": _delete_event,
    "duplicate-event": _duplicate_event,
    "move-event": _move_event,
    "identity": _identity,
    "index": _index,
    "flag": _flag,
    "insert": _insert,
    "carriage-returns": _carriage_returns,
    "truncate": _truncate,
}


def mutate_stream(rng: random.Random, data: bytes) -> bytes:
    """One to three of ``MUTATIONS`` applied to ``data``."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        data = MUTATIONS[rng.choice(list(MUTATIONS))](rng, data)
    return data
