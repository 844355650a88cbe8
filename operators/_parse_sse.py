"""``parse_sse``: bytes, split anywhere, to typed wire values.

Rule (docs/decisions/0001-parse-sse.md):

- SSE framing per the WHATWG rules: LF, CR and CRLF line ends (a CRLF split across two reads is one line end); a
  leading UTF-8 BOM is dropped; ``:`` comment lines are ignored (reported as ``comment`` anomalies); ``data:`` with or
  without one space; several ``data:`` lines joined by ``\\n``; ``event:``, ``id:``, ``retry:`` understood; an event
  with no data dispatches nothing. The framing works on bytes and only splits at line-end bytes, so a UTF-8
  character split across reads is never cut.
- Each payload is decoded into a typed ``WireChunk``; ``[DONE]`` gives ``Done`` and ends the stream (payloads after it
  are not read; any already received in the same read are reported as ``payload-after-done``: the one output that
  depends on the split, since the reading stops at ``[DONE]``).
- A payload that is not JSON or has the wrong shape gives ``Halt(MALFORMED_RESPONSE)`` quoting its first 120
  characters. A top-level ``error`` object (or an SSE event named ``error``) gives ``Halt`` with the provider's error
  classified like an in-band error.
- The end of the bytes before ``[DONE]`` gives ``Halt(STREAM_CLOSED)``, unless a ``finish_reason`` was already seen:
  then it counts as ``[DONE]`` (with a ``missing-done`` anomaly). An unterminated last event is discarded.
- Limits (docs/decisions/0014-limits.md): one line is counted while it is open, one event's joined data as each data
  line arrives; past ``limits.max_event_bytes`` a ``Halt(LIMIT_EXCEEDED)`` ends the stage and nothing more is stored.
  The failure is the same whatever the split: a line is reported as reaching ``max_event_bytes + 1`` bytes.
  A payload nested too deep is ``MALFORMED_RESPONSE``. Framing is linear: an open line is kept as a list of pieces,
  joined once when it ends.

Marble (one batch per read; ``c`` a WireChunk, ``D`` Done)::

    bytes:  --"data: {..}\\n\\nda"--"ta: [DONE]\\n\\n"--|
    out:    --[c]-------------------[D]|
"""

from __future__ import annotations

import json

from ._chunks import Anomaly, Failure
from ._codes import Code
from ._errors import classify_inband_error
from ._limits import DEFAULT_LIMITS, Limits, limit_exceeded
from ._signals import Done, Halt, Signal
from ._stage import BaseStage, Batch, Operator, stage_operator
from ._wire import UNSET, DecodeError, decode_chunk

__all__ = ["parse_sse"]

_BOM = b"\xef\xbb\xbf"
_DONE = b"[DONE]"


def _quote(payload: bytes, limit: int = 120) -> str:
    return payload.decode("utf-8", errors="replace")[:limit]


class _ParseSse(BaseStage[bytes, Signal]):
    __slots__ = ("at_start", "data", "event", "finished", "head", "joined", "limits", "open_bytes", "pending",
                 "pending_cr", "saw_finish")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
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
        if b"\r" in piece:  # a line end never spans pieces once a trailing CR is remembered
            self.pending_cr = piece.endswith(b"\r")
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        limit = self.limits.max_event_bytes
        pending = self.pending
        if b"\n" not in piece:  # the line stays open: count it while it is open, keep the piece
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
        long_lines = len(buf) > limit  # only then can one of these lines cross the limit
        data = self.data
        for position, line in enumerate(lines):
            if long_lines and len(line) > limit:
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
                    self._dispatch(payload, out)
                    if self.finished:
                        if type(out[-1]) is Done:
                            self._report_after_done(lines[position + 1 :], rest, out)
                        return
                self.event = b""
            elif line[:1] == b":":
                out.append(Anomaly("comment", None, f"comment line ignored: {_quote(line, 80)}"))
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
                # id:, retry: and unknown fields change nothing a chat completion needs.
        self.open_bytes = len(rest)
        if rest:
            if len(rest) > limit:
                self._line_exceeded(out)
            else:
                pending.append(rest)

    def _joins_over(self, value: bytes, out: list[Signal]) -> bool:
        """Counts a second or later data line of the event (a first one is bounded by the line limit); True when
        the joined data crosses ``max_event_bytes`` (the stage has then finished)."""
        data = self.data
        self.joined = (len(data[0]) if len(data) == 1 else self.joined) + 1 + len(value)
        if self.joined > self.limits.max_event_bytes:
            self._exceeded(self.joined, "one SSE event", out)
            return True
        return False

    def _line_exceeded(self, out: list[Signal]) -> None:
        # how far past the limit a read reaches depends on the split: name the first byte over it
        self._exceeded(self.limits.max_event_bytes + 1, "one SSE line", out)

    def _exceeded(self, counted: int, what: str, out: list[Signal]) -> None:
        out.append(Halt(limit_exceeded("max_event_bytes", counted, self.limits.max_event_bytes, what)))
        self.finished = True
        self.pending.clear()
        self.data.clear()
        self.open_bytes = 0

    def _report_after_done(self, remaining: list[bytes], rest: bytes, out: list[Signal]) -> None:
        remaining.append(rest)
        if any(line[:5] == b"data:" for line in remaining):
            out.insert(
                len(out) - 1,
                Anomaly("payload-after-done", None, "data arrived after [DONE]; it was not read"),
            )

    # -- payloads -------------------------------------------------------------------------------------------------

    def _dispatch(self, payload: bytes, out: list[Signal]) -> None:
        if self.event == b"error":
            self._halt_on_error_event(payload, out)
            return
        if payload == _DONE:
            out.append(Done())
            self.finished = True
            return
        try:
            chunk = decode_chunk(payload)
        except DecodeError as exc:
            reason = str(exc)
            message = f"malformed SSE payload: {_quote(payload)}"
            if "JSON" not in reason and "malformed" not in reason.lower():
                message += f" ({reason})"
            out.append(Halt(Failure(Code.MALFORMED_RESPONSE, message)))
            self.finished = True
            return
        out.append(chunk)
        if chunk.error is not UNSET and chunk.error is not None:
            out.append(Halt(classify_inband_error(chunk.error)))
            self.finished = True
            return
        if not self.saw_finish and chunk.choices:
            self.saw_finish = any(c.finish_reason is not None and not c.index for c in chunk.choices)

    def _halt_on_error_event(self, payload: bytes, out: list[Signal]) -> None:
        try:
            body = json.loads(payload)
        except (ValueError, RecursionError):
            body = {"message": _quote(payload, 500)}
        error = body.get("error", body) if isinstance(body, dict) else body
        out.append(Halt(classify_inband_error(error)))
        self.finished = True

    # -- the end of the bytes -------------------------------------------------------------------------------------

    def on_end(self, out: list[Signal]) -> None:
        if self.data or self.head or any(piece.strip() for piece in self.pending):
            out.append(Anomaly("unterminated-event", None, "the last event had no terminating blank line; discarded"))
        if self.saw_finish:
            out.append(Anomaly("missing-done", None, "the stream ended after a finish_reason without [DONE]"))
            out.append(Done(synthetic=True))
        else:
            out.append(Halt(Failure(Code.STREAM_CLOSED, "SSE stream ended without [DONE]")))


def parse_sse(limits: Limits | None = None) -> Operator[bytes, Batch[Signal]]:
    """Bytes to wire values: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt | Anomaly]]``.
    ``limits.max_event_bytes`` bounds one line and one event (``LIMIT_EXCEEDED``)."""
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseSse(chosen), accepts=(bytes, bytearray, memoryview))

