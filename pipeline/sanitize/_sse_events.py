"""Server-sent events as their original bytes: ``SseSplitter`` cuts a body, split anywhere, into whole events (each
with its own line ends and terminating blank line, so forwarding them all gives the body back byte for byte), and
``event_parts`` reads one event's name and joined ``data``.

The framing is the WHATWG one the SDKs' decoders follow: LF, CR and CRLF line ends, an event ends at a blank line, a
leading UTF-8 BOM, ``:`` comments, ``data:`` with or without one space, several ``data:`` lines joined by ``\\n``. A
CRLF split across two reads is one line end (a boundary ending in CR is cut only once the next byte is known). The
common case, a body with no CR at all, is one ``bytes.split`` per read.
"""

from __future__ import annotations

import re

__all__ = ["SseSplitter", "event_parts"]

_BOM = b"\xef\xbb\xbf"
_LINE_END = rb"(?:\r\n|\r(?!\n)|\n)"
_BOUNDARY = re.compile(_LINE_END + _LINE_END)


class SseSplitter:
    """Body bytes in (any split), whole events out as their original bytes; ``tail()`` is what is left at the end
    (an event without its blank line, or a cut line). ``pending`` counts the bytes of the open event."""

    __slots__ = ("_cr", "_pieces", "pending")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._cr = False  # a CR was seen: the general boundary search from now on
        self.pending = 0

    def feed(self, data: bytes) -> list[bytes]:
        if not data:
            return []
        if b"\r" in data:
            self._cr = True
        elif b"\n" not in data:  # no boundary can end in this piece
            self._pieces.append(data)
            self.pending += len(data)
            return []
        if self._pieces:
            self._pieces.append(data)
            buf = b"".join(self._pieces)
            self._pieces.clear()
        else:
            buf = bytes(data)
        if not self._cr:
            parts = buf.split(b"\n\n")
            rest = parts.pop()
            events = [part + b"\n\n" for part in parts]
        else:
            events = []
            start = 0
            ends_cr = buf.endswith(b"\r")
            for match in _BOUNDARY.finditer(buf):
                end = match.end()
                if ends_cr and end == len(buf):
                    break  # a CR last: wait for the next byte, which may make it a CRLF of this boundary
                events.append(buf[start:end])
                start = end
            rest = buf[start:]
        if rest:
            self._pieces.append(rest)
        self.pending = len(rest)
        return events

    def tail(self) -> bytes:
        """The bytes after the last whole event (and forgets them)."""
        tail = b"".join(self._pieces)
        self._pieces.clear()
        self.pending = 0
        return tail


def event_parts(raw: bytes) -> tuple[bytes, bytes | None]:
    """One event's name (``b""`` when it has none) and its joined ``data`` (``None`` when it has no data line)."""
    if raw[:3] == _BOM:
        raw = raw[3:]
    name = b""
    data: list[bytes] = []
    for line in raw.splitlines():
        if line[:5] == b"data:":
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif line[:6] == b"event:":
            name = line[7:] if line[6:7] == b" " else line[6:]
        elif line == b"data":
            data.append(b"")
        elif line == b"event":
            name = b""
    if not data:
        return name, None
    return name, data[0] if len(data) == 1 else b"\n".join(data)
