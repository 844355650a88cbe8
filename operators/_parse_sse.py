"""``parse_sse``: bytes, split anywhere, to typed wire values.

Rule (docs/decisions/0001-parse-sse.md):

- SSE framing per the WHATWG rules: LF, CR and CRLF line ends (a CRLF split across two reads is one line end); a
  leading UTF-8 BOM is dropped; ``:`` comment lines are ignored (reported as ``comment`` anomalies when
  ``comments=True``; counted by ``limits.max_ignored_lines`` either way,
  docs/decisions/0039-ignored-lines.md); ``data:`` with or
  without one space; several ``data:`` lines joined by ``\\n``; ``event:``, ``id:``, ``retry:`` understood; an event
  with no data dispatches nothing. The framing works on bytes and only splits at line-end bytes, so a UTF-8
  character split across reads is never cut.
- Each payload is decoded into a typed ``WireChunk``; ``[DONE]`` gives ``Done`` and ends the stream (payloads after it
  are not read; any already received in the same read are reported as ``payload-after-done``: the one output that
  depends on the split, since the reading stops at ``[DONE]``).
- A payload that is not JSON or has the wrong shape gives ``Halt(MALFORMED_RESPONSE)`` quoting its first 120
  characters. A top-level ``error`` object (or an SSE event named ``error``) gives ``Halt`` with the provider's error
  classified like an in-band error.
- A payload of another wire format (no ``choices``, a ``type`` of the Messages or Responses vocabulary:
  ``message_start``, ``response.created``...) is ``MALFORMED_RESPONSE`` naming the format seen, never a retried
  ``STREAM_CLOSED`` (decision 0045).
- A ``usage`` in which no OpenAI key holds a value is read from Anthropic's (or Responses') keys where they are
  unambiguous (``{"input_tokens": 12, "output_tokens": 34}`` is 12 in, 34 out); keys it cannot read give no usage
  and an ``unknown-usage`` anomaly, never 0/0 (decision 0046; ``_usage_keys.py``).
- The end of the bytes before ``[DONE]`` gives ``Halt(STREAM_CLOSED)``, unless a ``finish_reason`` was already seen:
  then it counts as ``[DONE]`` (with a ``missing-done`` anomaly). An unterminated last event is discarded.
- Limits (docs/decisions/0014-limits.md): one line is counted while it is open, one event's joined data as each data
  line arrives; past ``limits.max_event_bytes`` a ``Halt(LIMIT_EXCEEDED)`` ends the stage and nothing more is stored.
  The failure is the same whatever the split: a line is reported as reaching ``max_event_bytes + 1`` bytes.
  A payload nested too deep is ``MALFORMED_RESPONSE``. Framing is linear: an open line is kept as a list of pieces,
  joined once when it ends.

The marble diagram is on the factory: ``help(operators.parse_sse)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

import json

import msgspec

from ._chunk_values import Failure
from ._chunks import Anomaly
from ._codes import Code
from ._format_mismatch import foreign_format, format_mismatch, gemini_shaped, payload_kind
from ._limits import DEFAULT_LIMITS, Limits
from ._provider_errors import classify_inband_error
from ._signals import Done, Halt, Signal
from ._sse_framing import SseFraming, quote
from ._stage import Batch, Operator, stage_operator
from ._usage_keys import other_usage, reads_nothing
from ._wire import UNSET, DecodeError, WireChunk, decode_chunk

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
        if chunk.choices is None and self._foreign(payload, out):
            return
        usage = chunk.usage
        if usage is not None and reads_nothing(usage):  # no OpenAI key holds a count: read the others, or name them
            chunk = self._other_usage(payload, chunk, out)
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

    def _foreign(self, payload: bytes, out: list[Signal]) -> bool:
        """A chunk without ``choices`` whose ``type`` names another format's event: the stream is not chat."""
        kind = payload_kind(payload)
        seen = foreign_format(kind, False, gemini=kind is None and gemini_shaped(payload))
        if seen is None:
            return False
        out.append(Halt(format_mismatch(seen, "chat", payload)))
        self.finished = True
        return True

    def _other_usage(self, payload: bytes, chunk: WireChunk, out: list[Signal]) -> WireChunk:
        try:  # decoded once already, as a WireChunk: a JSON object, unless nested too deep for a generic decode
            raw = msgspec.json.decode(payload).get("usage")
        except (msgspec.DecodeError, RecursionError):
            raw = {"?": "nested deeper than the decoder allows"}
        usage, unknown = other_usage(raw)
        if unknown is not None:
            out.append(Anomaly("unknown-usage", None, unknown))
        return msgspec.structs.replace(chunk, usage=usage)

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


def chat_stage(limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> SseFraming:
    """A fresh chat-completions parsing stage (what ``parse_sse`` runs per subscription)."""
    return _ParseSse(limits, comments=comments)


def parse_sse(limits: Limits | None = None, *, comments: bool = False) -> Operator[bytes, Batch[Signal]]:
    r"""Bytes split anywhere to typed wire values; ``[DONE]`` to ``Done``; malformed payloads, in-band errors and a cut
    stream to ``Halt``::

        bytes: --"data: {c}\n\nda"--"ta: [DONE]\n\n"--|
        out:   --[c]-------------------[Done]|

    Marble (``m`` a Messages ``message_start``; ``u`` a chunk with usage ``{"input_tokens":12,"output_tokens":34}``,
    ``k`` one with ``{"tokens":5}``; ``a`` an anomaly)::

        bytes:  --m--|
        out:    --[Halt(MALFORMED_RESPONSE "a Messages (Anthropic-style) stream read as ...")]|
        bytes:  --u------------------------k-----------------------------|
        out:    --[c(usage prompt 12, completion 34)]--[a(unknown-usage), c(no usage)]|

    Guarantees: any split of the bytes gives the same values (inside a UTF-8 character, between ``\r`` and ``\n``),
    failures included, except the diagnostic ``payload-after-done`` anomaly, which reports only what arrived in the read
    carrying ``[DONE]`` (the reading stops there); WHATWG framing (LF/CR/CRLF, BOM, comments reported as ``comment``
    anomalies when ``comments=True``, ``data:`` with or without a space, multi-line data); each payload decoded once
    into a typed ``WireChunk``; a payload that is not JSON or has the wrong shape is ``Halt(MALFORMED_RESPONSE)``
    quoting its first 120 characters; a top-level ``error`` (even with ``choices``) or an ``event: error`` is a ``Halt``
    classified like an in-band error; the end of the bytes before ``[DONE]`` is ``Halt(STREAM_CLOSED)``, unless a
    ``finish_reason`` was seen (then a synthetic ``Done`` and a ``missing-done`` anomaly); nothing after ``[DONE]`` is
    read, and the upstream is disposed at once. A payload of another format (a Messages or Responses event) is
    ``Halt(MALFORMED_RESPONSE)`` naming it (decision 0045); a ``usage`` in Anthropic's keys is read, one the library
    cannot read is no usage with an ``unknown-usage`` anomaly (decision 0046).

    Limits (``parse_sse(limits)``): one SSE line (field name included, line end excluded) is counted while it is still
    open, and one event's joined ``data`` (values plus the ``\n`` between them) as each data line arrives; past
    ``limits.max_event_bytes`` (1 MiB) it emits ``Halt(LIMIT_EXCEEDED)`` naming ``max_event_bytes``, the count and "one
    SSE line" / "one SSE event", drops what it buffered and finishes (the upstream is disposed; later reads are ignored
    without being stored). A payload nested deeper than the decoder allows is ``Halt(MALFORMED_RESPONSE)``; the events
    before it in the same read are emitted. Framing is linear in the length of a line: the pieces of an open line are
    kept in a list and joined once when the line ends. Lines that carry nothing (comments, unknown fields, blank
    lines between events) are counted against ``limits.max_ignored_lines`` (``LIMIT_EXCEEDED``).

    Type: ``Observable[bytes] -> Observable[list[WireChunk | Done | Halt | Anomaly]]``.

    Decision notes: docs/decisions/0001-parse-sse.md, docs/decisions/0007-typed-wire-decoding.md,
    docs/decisions/0009-in-band-errors.md, docs/decisions/0014-limits.md,
    docs/decisions/0045-items-and-streams-not-retried.md, docs/decisions/0046-usage-in-other-keys.md.
    """
    chosen = DEFAULT_LIMITS if limits is None else limits
    return stage_operator(lambda: _ParseSse(chosen, comments=comments), accepts=(bytes, bytearray, memoryview))

