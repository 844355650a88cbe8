"""The SSE framing shared by every wire format's parse operator (``parse_sse`` for chat completions).

Per the WHATWG rules: LF, CR and CRLF line ends (a CRLF split across two reads is one line end); a leading UTF-8 BOM
is dropped; ``:`` comment lines are ignored (reported as ``comment`` anomalies only when ``comments=True``: otherwise
a comment line costs no object); ``data:`` with or without one space; several ``data:`` lines joined by ``\\n``;
``event:`` kept for the dispatch; ``id:``, ``retry:`` ignored; an event with no data dispatches nothing. It works on
bytes and splits only at line-end bytes, so a UTF-8 character split across reads is never cut. Limits
(docs/decisions/0014-limits.md): one line is counted while it is open, one event's joined data as each data line
arrives; past ``limits.max_event_bytes`` a ``Halt(LIMIT_EXCEEDED)`` ends the stage, the same whatever the split.
Lines that carry nothing (comments, blank lines that end no event, ``retry:`` and unknown fields) are counted:
past ``limits.max_ignored_lines`` of them, ``Halt(LIMIT_EXCEEDED)`` (docs/decisions/0039-ignored-lines.md). Framing
is linear: an open line is kept as a list of pieces, joined once; a read longer than ``SLICE`` bytes is framed as
consecutive slices of ``SLICE`` bytes (exactly as if they had arrived as separate reads; their output is one batch),
so no read makes more than one slice's lines at once.
"""

from __future__ import annotations

import msgspec

from ._chunks import Anomaly
from ._limits import DEFAULT_LIMITS, Limits, limit_exceeded
from ._signals import Done, Halt, Signal
from ._stage import BaseStage

__all__ = ["SLICE", "SseFraming", "quote"]

_BOM = b"\xef\xbb\xbf"
_DONE = b"[DONE]"
_NO_DATA = (b"", _DONE)  # after the end: an empty data line or a terminator is nothing unread

SLICE = 64 * 1024
"""A longer read is framed in slices of this many bytes, so the lines split at once stay bounded."""


def quote(payload: bytes, limit: int = 120) -> str:
    return payload.decode("utf-8", errors="replace")[:limit]


class SseFraming(BaseStage[bytes, Signal]):
    """The SSE framing of every wire format: bytes in, one ``dispatch(payload, out)`` per complete event (its name
    in ``self.event``), ``self.finished`` set by a subclass to stop reading. A format subclasses it with its own
    ``dispatch`` and ``on_end`` (``parse_sse``: chat completions)."""

    __slots__ = ("at_start", "comments", "data", "event", "event_limit", "finished", "head", "ignored", "joined",
                 "limits", "open_bytes", "pending", "pending_cr", "saw_finish")

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        self.limits = limits
        self.event_limit = limits.max_event_bytes  # one line / one event; a format may widen it (Responses' terminal)
        self.comments = comments  # report each comment line as a ``comment`` anomaly (else it costs no object)
        self.ignored = 0  # lines that carried nothing so far (max_ignored_lines)
        self.head = b""  # the first bytes while they may still be a split BOM
        self.pending: list[bytes] = []  # the open line's pieces, joined once when it ends (linear framing)
        self.open_bytes = 0  # bytes of the open line counted so far
        self.at_start = True
        self.pending_cr = False
        self.data: list[bytes] = []
        self.joined = 0  # bytes of the event's joined data, counted from its second data line on
        self.event = b""
        self.saw_finish = False
        self.finished = False

    # -- framing --------------------------------------------------------------------------------------------------

    def on_batch(self, piece: bytes, out: list[Signal]) -> None:
        if not piece or self.finished:  # after the finish nothing more is stored or parsed
            return
        if type(piece) is not bytes:
            piece = bytes(piece)
        if len(piece) <= SLICE:
            self._frame(piece, out)
            return
        for start in range(0, len(piece), SLICE):  # as if the read had come as separate reads of SLICE bytes
            self._frame(piece[start : start + SLICE], out)
            if self.finished:
                return

    def _frame(self, piece: bytes, out: list[Signal]) -> None:
        if self.at_start:
            if self.head:
                piece = self.head + piece
            if len(piece) < len(_BOM) and _BOM.startswith(piece):
                self.head = piece
                return
            self.head = b""
            if piece.startswith(_BOM):
                piece = piece[len(_BOM) :]
            self.at_start = False
        if self.pending_cr:
            self.pending_cr = False
            if piece[:1] == b"\n":
                piece = piece[1:]
        if piece.find(b"\r") >= 0:  # (find, not `in`: `in` tries the needle as an int first, raising inside)
            self.pending_cr = piece.endswith(b"\r")
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        limit = self.event_limit
        pending = self.pending
        if piece.find(b"\n") < 0:  # the line stays open: count it while it is open, keep the piece
            if piece:
                self.open_bytes += len(piece)
                if self.open_bytes > limit:
                    self._line_exceeded(out)
                else:
                    pending.append(piece)
            return
        if pending:
            pending.append(piece)
            buf = b"".join(pending)
            pending.clear()
        else:
            buf = piece
        lines = buf.split(b"\n")
        rest = lines.pop()
        # only then can one of these lines cross the limit (which only grows: an event of this read may widen it)
        long_lines = len(buf) > limit
        data = self.data
        for position, line in enumerate(lines):
            if long_lines and len(line) > self.event_limit:  # the limit as the events before this line left it
                self._line_exceeded(out)
                return
            if line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                if data and self._joins_over(value, out):
                    return
                data.append(value)
            elif not line:
                if data:
                    payload = data[0] if len(data) == 1 else b"\n".join(data)
                    data.clear()
                    self.dispatch(payload, out)
                    if self.finished:
                        if type(out[-1]) is Done:
                            self._report_after_done(lines[position + 1 :], rest, out)
                        return
                elif self._ignore(out):  # a blank line that ends no event
                    return
                self.event = b""
            elif line[:6] == b"event:":  # before the general field path: every Messages / Responses event has one
                self.event = line[7:] if line[6:7] == b" " else line[6:]
            elif line[:1] == b":":
                if self._ignore(out):
                    return
                if self.comments:
                    out.append(Anomaly("comment", None, f"comment line ignored: {quote(line, 80)}"))
            else:
                field, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if field == b"event":
                    self.event = value
                elif field == b"data":  # a bare "data" line carries an empty value
                    if data and self._joins_over(value, out):
                        return
                    data.append(value)
                elif field != b"id" and self._ignore(out):  # retry: and unknown fields carry nothing we read
                    return
        self.open_bytes = len(rest)
        if rest:
            if len(rest) > self.event_limit:
                self._line_exceeded(out)
            else:
                pending.append(rest)

    def _joins_over(self, value: bytes, out: list[Signal]) -> bool:
        """Counts a second or later data line of the event (a first one is bounded by the line limit); True when
        the joined data crosses ``max_event_bytes`` (the stage has then finished)."""
        data = self.data
        self.joined = (len(data[0]) if len(data) == 1 else self.joined) + 1 + len(value)
        if self.joined > self.event_limit:
            self._exceeded(self.joined, "one SSE event", out)
            return True
        return False

    def _ignore(self, out: list[Signal]) -> bool:
        """Counts a line that carries nothing; True when the count crosses ``max_ignored_lines`` (the stage has
        then finished)."""
        self.ignored += 1
        if self.ignored <= self.limits.max_ignored_lines:
            return False
        what = "lines carrying nothing (comments, blank lines that end no event, retry: and unknown fields)"
        out.append(Halt(limit_exceeded("max_ignored_lines", self.ignored, self.limits.max_ignored_lines, what)))
        self._end_framing()
        return True

    def _line_exceeded(self, out: list[Signal]) -> None:
        # how far past the limit a read reaches depends on the split: name the first byte over it
        self._exceeded(self.event_limit + 1, "one SSE line", out)

    def _exceeded(self, counted: int, what: str, out: list[Signal]) -> None:
        out.append(Halt(limit_exceeded("max_event_bytes", counted, self.limits.max_event_bytes, what)))
        self._end_framing()

    def _end_framing(self) -> None:
        self.finished = True
        self.pending.clear()
        self.data.clear()
        self.open_bytes = 0

    END_NAME = "[DONE]"
    """What ends the format's stream, as ``payload-after-done`` names it."""

    def dispatch(self, payload: bytes, out: list[Signal]) -> None:
        raise NotImplementedError

    def read_unterminated(self, out: list[Signal]) -> None:
        """For a format whose payloads are JSON, at the end of the bytes: the last event without its final blank line
        (the anthropic-sdk fixtures end so, and many recorded files) is dispatched when its data is a whole JSON
        value; a ``data:`` line cut mid-way is discarded; an ``unterminated-event`` anomaly either way."""
        data = list(self.data)
        open_line = b"".join(self.pending)
        if open_line[:5] == b"data:":
            data.append(open_line[6:] if open_line[5:6] == b" " else open_line[5:])
        elif open_line.strip() or self.head:
            out.append(Anomaly("unterminated-event", None, "the bytes ended inside a line; discarded"))
        self.data.clear()
        self.pending.clear()
        if not data:
            return
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        try:
            msgspec.json.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            out.append(Anomaly("unterminated-event", None, "the last event was cut; discarded"))
            return
        out.append(Anomaly("unterminated-event", None, "the last event had no terminating blank line; read"))
        self.dispatch(payload, out)

    def _report_after_done(self, remaining: list[bytes], rest: bytes, out: list[Signal]) -> None:
        """Data already received after the end is reported (``payload-after-done``), except an empty ``data:`` line
        and a ``data: [DONE]``, whole or cut by the read: a terminator after a format's own end event (Messages'
        ``message_stop``, Responses' terminal event) is not data, so the output never depends on how it was split
        (decision 0043)."""
        if any(line[:5] == b"data:" and line[5:].strip() not in _NO_DATA for line in remaining) or (
            rest[:5] == b"data:" and not _DONE.startswith(rest[5:].strip())  # a [DONE] cut by the read is no data
        ):
            out.insert(
                len(out) - 1,
                Anomaly("payload-after-done", None, f"data arrived after {self.END_NAME}; it was not read"),
            )

