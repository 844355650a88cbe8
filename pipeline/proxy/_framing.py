"""A response body's framing, undone a read at a time (``_upstream.py``): chunked, by ``Content-Length``, or to the
connection's close, chosen as h11 chooses it (RFC 9112, 6.3) from a head ``_wire.py`` has read and validated.

``Decoder.feed(data)`` returns the body's bytes that ``data`` holds, one piece per chunk (or part of a chunk), as h11
hands them to httpcore: a stream's pieces are the upstream's chunks, whatever the reads, so the proxy's client gets
what the sanitizing transport in its own process would (``tests/pipeline/sanitize/test_proxy_matches_transport.py``).
``done`` once the body ended, ``extra`` holding what came after it (the connection is then not reused);
``ValueError`` for malformed framing (a chunk size that is not hex, a chunk not followed by CRLF, a size line or
trailers past their bounds).
"""

from __future__ import annotations

from ._wire import Head

__all__ = ["MAX_SIZE_LINE", "MAX_TRAILERS", "Decoder", "decoder_for"]

MAX_SIZE_LINE = 4096
"""Bytes a chunk's size line (with its extensions) may take."""
MAX_TRAILERS = 16384
"""Bytes the trailers after the last chunk may take."""
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class Decoder:
    """The body's bytes from what the connection received; see the module's notes."""

    to_close = False
    """The body ends when the connection does (no length, not chunked)."""

    def __init__(self) -> None:
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> list[bytes]:
        raise NotImplementedError


class _ToClose(Decoder):
    to_close = True

    def feed(self, data: bytes) -> list[bytes]:
        return [data]


class _Length(Decoder):
    def __init__(self, length: int) -> None:
        super().__init__()
        self._left = length
        self.done = length == 0

    def feed(self, data: bytes) -> list[bytes]:
        if self.done:
            self.extra += data
            return []
        if len(data) < self._left:
            self._left -= len(data)
            return [data]
        body, self.extra = data[:self._left], data[self._left:]
        self._left, self.done = 0, True
        return [body] if body else []


_SIZE, _DATA, _CRLF, _TRAILERS = range(4)


class _Chunked(Decoder):
    def __init__(self) -> None:
        super().__init__()
        self._state = _SIZE
        self._left = 0  # bytes of the current chunk still to come
        self._pending = b""  # an incomplete size line, CRLF or trailer line
        self._trailers = 0

    def feed(self, data: bytes) -> list[bytes]:
        if self.done:
            self.extra += data
            return []
        if self._pending:
            data, self._pending = self._pending + data, b""
        out: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end:
            state = self._state
            if state == _DATA:
                take = min(self._left, end - pos)
                out.append(data[pos:pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _CRLF
            elif state == _CRLF:
                if end - pos < 2:
                    self._pending = data[pos:]
                    break
                if data[pos:pos + 2] != b"\r\n":
                    raise ValueError("a chunk of the upstream's body is not followed by CRLF")
                pos += 2
                self._state = _SIZE
            else:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    self._pending = data[pos:]
                    self._bound(len(self._pending), complete=False)
                    break
                line, pos = data[pos:eol], eol + 2
                self._bound(len(line) + 2, complete=True)
                if state == _SIZE:
                    self._left = _chunk_size(line)
                    self._state = _DATA if self._left else _TRAILERS
                elif not line:  # the empty line after the last chunk (and its trailers, dropped)
                    self.done, self.extra = True, data[pos:]
                    break
        return out

    def _bound(self, size: int, *, complete: bool) -> None:
        """A size line past ``MAX_SIZE_LINE``, or trailers past ``MAX_TRAILERS``, is malformed (``size``: the line so
        far; counted into the trailers once ``complete``)."""
        if self._state == _SIZE and size > MAX_SIZE_LINE:
            raise ValueError("a chunk size line of the upstream's body is too long")
        if self._state == _TRAILERS:
            if self._trailers + size > MAX_TRAILERS:
                raise ValueError("the trailers of the upstream's body are too long")
            if complete:
                self._trailers += size


def _chunk_size(line: bytes) -> int:
    digits = line.split(b";", 1)[0].rstrip(b" \t") if b";" in line or line.endswith((b" ", b"\t")) else line
    if not digits or len(digits) > 16 or digits.strip(_HEX_DIGITS):  # int() would also take a sign, "_", "0x"
        raise ValueError(f"a chunk size of the upstream's body is not hex: {line[:40]!r}")
    return int(digits, 16)


def decoder_for(method: bytes, response: Head) -> Decoder:
    """The framing of ``response``'s body, as h11 would read it."""
    status = response.status_code
    if status in (204, 304) or method == b"HEAD" or (method == b"CONNECT" and 200 <= status < 300):
        return _Length(0)
    length: int | None = None
    for name, value in response.lowered:  # h11 allows only "chunked", one Content-Length
        if name == b"transfer-encoding":
            return _Chunked()
        if name == b"content-length":
            length = int(value)
    return _ToClose() if length is None else _Length(length)
