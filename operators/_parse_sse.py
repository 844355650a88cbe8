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
from ._limits import DEFAULT_LIMITS, Limits
from ._provider_errors import classify_inband_error
from ._signals import Done, Halt, Signal
from ._sse_framing import SseFraming, quote
from ._stage import Batch, Operator, stage_operator
from ._wire import UNSET, DecodeError, decode_chunk

__all__ = ["chat_stage", "parse_sse"]

_DONE = b"[DONE]"


class _ParseSse(SseFraming):
    """Chat completions: each payload a ``WireChunk``, ``[DONE]`` the end."""

    __slots__ = ()

    # -- payloads -------------------------------------------------------------------------------------------------

    def dispatch(self, payload: bytes, out: list[Signal]) -> None:
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
            message = f"malformed SSE payload: {quote(payload)}"
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
            for choice in chunk.choices:  # a loop, not any(<genexpr>): this runs on every payload
                if choice.finish_reason is not None and not choice.index:
                    self.saw_finish = True
                    break

    def _halt_on_error_event(self, payload: bytes, out: list[Signal]) -> None:
        try:
            body = json.loads(payload)
        except (ValueError, RecursionError):
            body = {"message": quote(payload, 500)}
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


def chat_stage(limits: Limits = DEFAULT_LIMITS) -> SseFraming:
    """A fresh chat-completions parsing stage (what ``parse_sse`` runs per subscription)."""
    return _ParseSse(limits)


def parse_sse(limits: Limits | None = None) -> Operator[bytes, Batch[Signal]]:
    """Bytes to wire values: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt | Anomaly]]``.
    ``limits.max_event_bytes`` bounds one line and one event (``LIMIT_EXCEEDED``)."""
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseSse(chosen), accepts=(bytes, bytearray, memoryview))

