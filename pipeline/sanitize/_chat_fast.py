"""The byte tests of ``ChatRepair``'s fast path: an event proven to need no rule is forwarded without being decoded.

``plain_events``: a block of whole events, each one ``data: {...}`` line that no rule reads, found by a few byte
searches whatever the number of events; ``plain_prefix``: where a block that is not stops being a candidate (the
deltas before a finish in the same read). ``text_shape``: the bytes around the text of one ``"content"`` delta, so a
later read shaped the same is proven rule-free by its text alone. ``Kept``: the reads of an open event, joined once.
The repair itself is ``_chat_repair.py``.
"""

from __future__ import annotations

__all__ = ["Kept", "plain_events", "plain_prefix", "text_shape"]

_RULED = (b'"finish_reason":"', b'"finish_reason": "', b'"tool_calls"', b'"error"', b"[DONE]")
"""What makes an event one a rule reads (``plain_events`` checks more: this only finds where to stop trying)."""


def plain_events(block: bytes, key: bytes | None) -> int:
    """How many whole events ``block`` holds when each is one ``data: {...}`` line that no rule reads (no tool call,
    no error, no finish, not the API ``key``), else 0: a few byte searches, whatever the number of events.

    The line test: the block's ``n`` newlines, ``n // 2 - 1`` of them pairs before ``data: {`` and the last pair at
    its end, leave no newline for any other line, so it is ``n // 2`` events of one ``data: {`` line each (no
    ``[DONE]`` event, no ``event:`` or comment line) and ``[DONE]`` inside one is text; counting ``\n`` (one byte)
    is cheaper than counting ``\n\n`` (decision 0073)."""
    if not (block.startswith(b"data: {") and block.endswith(b"\n\n")):
        return 0
    lines = block.count(b"\n")
    events = lines // 2
    if lines % 2 or block.count(b"\n\ndata: {") != events - 1 or b'"tool_calls"' in block or b'"error"' in block:
        return 0
    finishes, nulls = block.count(b'"finish_reason"'), block.count(b'"finish_reason":null')
    if finishes != nulls and finishes != nulls + block.count(b'"finish_reason": null'):
        return 0
    return 0 if key is not None and key in block else events


def plain_prefix(buf: bytes, start: int, end: int, key: bytes | None) -> int:
    """Where the first event of ``buf[start:end]`` that a rule may read begins (a finish, a tool call, an error,
    ``[DONE]``, the key), so the events before it can be tried at once with ``plain_events``; ``start`` when that is
    the first event or none was found (the events then go one by one, as before)."""
    found = [at for marker in (*_RULED, *((key,) if key else ())) if (at := buf.find(marker, start, end)) >= 0]
    if not found:
        return start
    cut = buf.rfind(b"\n\n", start, min(found))
    return start if cut < 0 else cut + 2


def text_shape(event: bytes) -> tuple[bytes, bytes]:
    """The bytes before and after the text of a single ``"content"`` delta, or empty ones when it has no plain
    text (an escaped quote or backslash at its end, two content keys): the shape later events are matched against."""
    key = b'"content":"' if b'"content":"' in event else b'"content": "'
    start = event.find(key)
    if start < 0 or event.count(b'"content":') != 1:
        return b"", b""
    start += len(key)
    end = event.find(b'"', start)
    if end < 0 or event[end - 1 : end] == b"\\":
        return b"", b""
    return event[:start], event[end:]


class Kept:
    """The reads that could end no event, kept after the repairer's open bytes as they came and joined once, when a
    read ends an event: the work per read is its own bytes, whatever the event's length and the read size."""

    __slots__ = ("pieces", "size")

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0

    def keep(self, held: bytes, data: bytes, limit: int) -> bool:
        """Whether ``data`` was kept: no blank line in it nor across its start (after ``held`` and the reads kept),
        and the open bytes stay within ``limit`` (past it the repairer joins them and fails)."""
        pieces = self.pieces
        if not data:  # (a read that was a held CR alone): nothing to keep, and the last piece kept stays a real one
            return True
        if data.find(b"\n\n") >= 0 or (data[:1] == b"\n" and (pieces[-1] if pieces else held)[-1:] == b"\n"):
            return False
        if len(held) + self.size + len(data) > limit:
            return False
        pieces.append(data)
        self.size += len(data)
        return True

    def joined(self, held: bytes, data: bytes = b"") -> bytes:
        """``held``, the reads kept and ``data`` as one (the reads kept are forgotten)."""
        if not self.pieces:
            return held + data if held else data
        buf = b"".join([held, *self.pieces, data])
        self.pieces.clear()
        self.size = 0
        return buf
