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

    __slots__ = ("_cr", "_deferred", "_pieces", "pending")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._cr = False  # a CR was seen: the general boundary search from now on
        self._deferred = False  # the open bytes end in a boundary whose last CR waits for the next byte
        self.pending = 0

    @property
    def lf_only(self) -> bool:
        """No CR has been seen: every line ends in LF alone."""
        return not self._cr

    def feed(self, data: bytes) -> list[bytes]:
        """The whole events completed by ``data``, each as its own bytes."""
        return self.events(self.feed_block(data))

    def feed_block(self, data: bytes) -> bytes:
        """The whole events completed by ``data``, as one block of bytes (``b""`` when none); the rest is kept."""
        if not data:
            return b""
        if type(data) is not bytes:
            data = bytes(data)  # a bytearray or memoryview: searched as bytes, and not kept as a view of its buffer
        if b"\r" in data:
            self._cr = True
        elif b"\n" not in data and not self._deferred:  # no boundary can end in this piece (nor a held CR's)
            self._pieces.append(data)
            self.pending += len(data)
            return b""
        pieces = self._pieces
        if pieces:
            if not (self._deferred or self._ends_in(data)):  # kept as it came: the open bytes are never rescanned
                pieces.append(data)
                self.pending += len(data)
                return b""
            pieces.append(data)
            buf = b"".join(pieces)
            pieces.clear()
        else:
            buf = data
        self._deferred = False
        if not self._cr:
            end = buf.rfind(b"\n\n") + 2
        else:
            end = 0
            ends_cr = buf.endswith(b"\r")
            for match in _BOUNDARY.finditer(buf):
                if ends_cr and match.end() == len(buf):
                    self._deferred = True
                    break  # a CR last: wait for the next byte, which may make it a CRLF of this boundary
                end = match.end()
        if end <= 1:
            end = 0
        if end < len(buf):
            self._pieces.append(buf[end:])
        self.pending = len(buf) - end
        return buf[:end]

    def _ends_in(self, data: bytes) -> bool:
        """Whether a boundary may end in ``data`` (the open bytes hold none but a deferred one): one is at most four
        bytes, so the open bytes' last three and ``data`` hold it. Only when one may is the open event joined and
        scanned, so an event in small reads costs its bytes once, whatever the read size (issue 31)."""
        pieces = self._pieces
        if not self._cr:
            return data.find(b"\n\n") >= 0 or (data[:1] == b"\n" and pieces[-1][-1:] == b"\n")
        last = b""
        for piece in reversed(pieces):
            last = piece[-3:] + last
            if len(last) >= 3:
                break
        return _BOUNDARY.search(last[-3:] + data) is not None

    def events(self, block: bytes) -> list[bytes]:
        """A block of whole events (``feed_block``'s) cut into its events."""
        if not block:
            return []
        if not self._cr:
            parts = block.split(b"\n\n")
            last = parts.pop()  # b"", or the LF of a third line end after the last boundary
            events = [part + b"\n\n" for part in parts]
            if last:
                events[-1] += last
            return events
        events = []
        start = 0
        for match in _BOUNDARY.finditer(block):
            events.append(block[start : match.end()])
            start = match.end()
        if start < len(block):
            events[-1] += block[start:]
        return events

    def tail(self) -> bytes:
        """The bytes after the last whole event (and forgets them)."""
        tail = b"".join(self._pieces)
        self._pieces.clear()
        self._deferred = False
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
