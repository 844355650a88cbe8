"""The byte tests of ``ChatRepair``'s fast path: an event proven to need no rule is forwarded without being decoded.

``plain_events``: a block of whole events, each one ``data: {...}`` line that no rule reads, found by a few byte
searches whatever the number of events. ``text_shape``: the bytes around the text of one ``"content"`` delta, so a
later read shaped the same is proven rule-free by its text alone. ``Kept``: the reads of an open event, joined once.
The repair itself is ``_chat_repair.py``.
"""

from __future__ import annotations

__all__ = ["Kept", "plain_events", "text_shape"]


def plain_events(block: bytes, events: int, key: bytes | None) -> bool:
    """Whether ``events`` whole events in ``block`` are each one ``data: {...}`` line that no rule reads (no
    tool call, no error, no finish, no ``[DONE]``, not the API ``key``): a few byte searches, whatever the number
    of events."""
    return (
        block.startswith(b"data: {")
        and block.count(b"\n") == 2 * events
        and block.count(b"\n\ndata: {") == events - 1
        and b'"tool_calls"' not in block
        and b'"error"' not in block
        and b"[DONE]" not in block
        and block.count(b'"finish_reason"')
        == block.count(b'"finish_reason":null') + block.count(b'"finish_reason": null')
        and (key is None or key not in block)
    )


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
