"""The proxy's upstream key kept from its clients (``--upstream-key-env``): a gateway can echo the key it received
("Incorrect API key provided: sk-..."), in a header, an error or JSON body, or a stream (docs/proxy.md, "The upstream
key never reaches the client").

- ``scrub_headers``: every response header value loses the key.
- ``Scrubber``: the body as the proxy relays it, read by read. The key becomes ``[redacted]`` wherever its bytes are
  whole; a tail of a read that could be the start of the key is held back (never more bytes than the key is long)
  until the next read shows whether it is. In an event stream the unit is the event (the repairers release whole
  events): an event whose streamed text (a delta's ``content``, ``text``, ``arguments``, ...) ends with what could be
  the start of the key is held until the next event with text at the same place shows whether the key goes on; if it
  does, those events are re-encoded with the key's part replaced (``[redacted]`` where it began). The check is one
  regular-expression search per read (a string value ending with a start of the key); only an event it finds is
decoded.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["REDACTED", "Scrubber", "scrub_headers"]

REDACTED = b"[redacted]"
_STREAMED = frozenset({"content", "text", "delta", "arguments", "partial_json", "thinking", "reasoning_content",
                       "reasoning", "refusal"})
"""Fields whose text an API streams in pieces (chat deltas, Messages ``text_delta`` / ``input_json_delta``,
Responses ``*.delta``): where a key can be split across events."""
_PENDING_CAP = 1 << 16
"""An event stream's bytes without an event's end are passed on past this many (the key's start still held)."""
_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\n\r\n)|(?<=\r\r)")

Path = tuple[str | int, ...]


def scrub_headers(headers: list[tuple[bytes, bytes]], key: bytes) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``key`` replaced in every value."""
    return [(name, value.replace(key, REDACTED) if key in value else value) for name, value in headers]


def _last_end(data: bytes) -> int:
    """Where the last whole event in ``data`` ends (-1: none does)."""
    end = -1
    for mark in (b"\n\n", b"\r\n\r\n", b"\r\r"):
        at = data.rfind(mark)
        if at != -1:
            end = max(end, at + len(mark))
    return end


def _prefix_tail(data: bytes, key: bytes) -> int:
    """The length of the longest end of ``data`` that is a proper start of ``key`` (0 if none)."""
    first = key[:1]
    at = data.find(first, max(0, len(data) - len(key) + 1))
    while at != -1:
        if key.startswith(data[at:]):
            return len(data) - at
        at = data.find(first, at + 1)
    return 0


def _strings(value: Any, path: Path = ()) -> list[tuple[Path, str]]:
    """Every streamed-text string of a decoded event with its place, in order (iterative: no depth limit)."""
    out: list[tuple[Path, str]] = []
    stack: list[tuple[Path, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(((*where, name), item[name]) for name in reversed(list(item)))
        elif isinstance(item, list):
            stack.extend(((*where, index), item[index]) for index in reversed(range(len(item))))
        elif isinstance(item, str) and where and where[-1] in _STREAMED:
            out.append((where, item))
    return out


def _set(value: Any, path: Path, text: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


class _Event:
    """One event of a stream, its JSON payload decoded (``None`` when it has none: then it is passed on as is)."""

    __slots__ = ("lines", "payload", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.payload: Any = None
        self.lines: list[bytes] = []
        datas = [line for line in raw.split(b"\n") if line.startswith(b"data:")]
        if len(datas) != 1:
            return
        self.lines = raw.split(b"\n")
        try:
            self.payload = msgspec.json.decode(datas[0][5:])
        except (msgspec.DecodeError, RecursionError):
            self.payload = None

    def text(self, path: Path) -> str | None:
        return next((text for where, text in self.strings() if where == path), None)

    def strings(self) -> list[tuple[Path, str]]:
        return _strings(self.payload) if isinstance(self.payload, dict | list) else []

    def rewrite(self, path: Path, text: str) -> None:
        _set(self.payload, path, text)
        encoded = b"data: " + msgspec.json.encode(self.payload)
        self.raw = b"\n".join(encoded + line[len(line.rstrip(b"\r")):] if line.startswith(b"data:") else line
                              for line in self.lines)


class Scrubber:
    """The key kept out of a relayed body: ``feed(data)`` returns what may go to the client now, ``close()`` the
    rest. ``events=True`` for an event stream (``text/event-stream``)."""

    def __init__(self, key: str, *, events: bool) -> None:
        self._key = self.key = key.encode()
        self._text = key
        self._events = events
        self._rest = b""  # bytes not yet passed on: a possible start of the key, or an event without its end
        self._held: list[_Event] = []  # events held while their streamed text could go on into the key
        self._path: Path = ()
        self._partial = ""  # the key's start the held events' text ends with
        self._first = 0  # how much of it the first held event holds
        self._pair, self._head = self._key[:1] + b'"', self._key[:2]
        self._candidate = re.compile(
            re.escape(self._key[:1]) + b"".join(b"(?:" + re.escape(self._key[i:i + 1]) for i in range(1, len(key) - 1))
            + b")?" * (len(key) - 2) + rb'"(?!\s*:)'  # a string value (not a name) that ends with the key's start
        )
        self.redacted = 0

    def feed(self, data: bytes) -> bytes:
        buf = self._rest + data if self._rest else data
        self._rest = b""
        end = (len(buf) if buf.endswith(b"\n\n") else _last_end(buf)) if self._events else -1
        if end == -1:  # no event's end here: an event stream's is awaited (up to a bound); other bytes flow
            if self._events and len(buf) <= _PENDING_CAP:
                self._rest = buf
                return b""
            return self._release() + self._bytes(buf, final=False)
        whole, self._rest = buf[:end], buf[end:]
        if self._key in whole:
            self.redacted += whole.count(self._key)
            whole = whole.replace(self._key, REDACTED)
        if not self._held and not self._maybe(whole):
            return whole  # the common case: nothing here could begin the key
        return b"".join(self._event(raw) for raw in _EVENT_END.split(whole) if raw)

    def _maybe(self, data: bytes) -> bool:
        """``data`` may hold a string value ending with a start of the key. Cheap tests first: the key's first two
        characters somewhere (a start of two or more), or more of its first character before a quote than there are
        names ending so (``s"`` against ``s":``, for a key beginning with ``s``); then the search itself."""
        if self._head not in data:
            count = data.count(self._pair)
            if not count or count == data.count(self._pair + b":"):
                return False
        return self._candidate.search(data) is not None

    def close(self) -> bytes:
        rest, self._rest = self._rest, b""
        return self._release() + self._bytes(rest, final=True)

    def _bytes(self, buf: bytes, *, final: bool) -> bytes:
        if self._key in buf:
            self.redacted += buf.count(self._key)
            buf = buf.replace(self._key, REDACTED)
        keep = 0 if final else _prefix_tail(buf, self._key)
        self._rest = buf[len(buf) - keep:] if keep else b""
        return buf[:len(buf) - keep] if keep else buf

    def _release(self) -> bytes:
        held, self._held, self._partial = self._held, [], ""
        return b"".join(event.raw for event in held)

    def _event(self, raw: bytes) -> bytes:
        if not self._held and not self._maybe(raw):
            return raw
        event = _Event(raw)
        out = b""
        if self._held:
            text = event.text(self._path)
            if text is None:
                out = self._release()
            else:
                joined = self._partial + text
                if joined.startswith(self._text):  # the key, split across the held events and this one
                    self._redact_held()
                    event.rewrite(self._path, text[len(self._text) - len(self._partial):])
                    out = self._release()
                elif self._text.startswith(joined):  # still only the key's start: hold this one too
                    self._partial = joined
                    self._held.append(event)
                    return b""
                else:
                    out = self._release()
        return out + self._consider(event)

    def _consider(self, event: _Event) -> bytes:
        """Holds ``event`` when its last streamed text ends with what could be the start of the key."""
        for path, text in reversed(event.strings()):
            keep = _prefix_tail(text.encode(), self._key)
            if keep:
                self._path, self._partial, self._first = path, text[len(text) - keep:], keep
                self._held.append(event)
                return b""
        return event.raw

    def _redact_held(self) -> None:
        """The held events lose the key's start: ``[redacted]`` in the first, nothing left in the others."""
        self.redacted += 1
        first, *others = self._held
        text = first.text(self._path) or ""
        first.rewrite(self._path, text[: len(text) - self._first] + REDACTED.decode())
        for event in others:
            event.rewrite(self._path, "")
