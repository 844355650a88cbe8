"""``GeminiRepair``: a Gemini ``streamGenerateContent?alt=sse`` stream (the Gemini API and Vertex AI) made right for
the google-genai SDK, sans I/O. The reading is decision 0071's; the frame the Messages and Responses repairers'
(decision 0036: every event passed on as its original bytes unless a rule changes it).

What the unmodified SDK reads right passes byte for byte: text, thoughts and their signatures, calls with and without
``functionCall.id`` (the id the library makes for a call without one exists only in the library's chunks, never in
these bytes), Vertex's streamed arguments, usage, every candidate, and every ``finishReason`` the SDK reports itself
(``STOP``, ``MAX_TOKENS``, ``SAFETY``, ``MALFORMED_FUNCTION_CALL``, ...) and a blocked prompt: ``finish`` says what the
library reads (an error finish for a filter or a malformed call), ``failure`` stays ``None`` (decision 0032).

What the SDK would take silently and the library reads as a failure becomes an error the SDK raises (before any byte
went out the transport answers it as an HTTP error in Google's shape, ``gemini_error_body``; after, it is an in-band
``{"error": {"code", "message", "status"}}`` event, which the SDK raises as ``ServerError`` / ``ClientError``):

- **a cut**: a body that ends (or reaches a gateway's ``data: [DONE]``) before candidate 0's ``finishReason`` or a
  ``promptFeedback.blockReason`` is ``STREAM_CLOSED`` (retryable), whatever text came;
- **a nameless call**: a ``functionCall`` part of candidate 0 whose ``name`` is absent, ``null``, ``""`` or not a string
  is ``MALFORMED_TOOL_CALL`` (retryable) and is not passed on. While a call is open (its latest part said
  ``"willContinue": true``: Vertex's streamed arguments) a part without a name is that call's continuation, whatever
  its ``name`` holds; any other part, a named call, a part with ``willContinue`` false or absent, or the finish closes
  it. Parts after candidate 0's finish are not judged (events after it are read for their usage only);
- **framing the SDK misreads**: it reads only ``data: `` lines with their space, so an event with a comment, an
  ``event:`` / ``id:`` / ``retry:`` line, ``data:`` without its space or a BOM is written as its ``data: `` lines (an
  event with no data is dropped); a ``data: [DONE]`` is dropped and ends the stream; an upstream ``error`` object not
  first in its event is moved first (the SDK raises only on an event that begins ``{"error":``); a payload that is not
  a JSON object, or of another wire format, is ``MALFORMED_RESPONSE``.

An upstream's own in-band error passes as it came and ends the stream (``classify_gemini_error``). Candidates other
than 0 are not judged. Until an event says something (text, a named call, a finish or block) events are held, so a
failure found before it comes before any byte. Memory: one open event (``max_event_bytes``) and what is held
(``max_text_bytes``), nothing per call. The hot path (nothing held, no call open) passes an event that is one
``data: {`` line without ``"functionCall"``, ``"finishReason"``, ``"promptFeedback"``, ``"error"``, another format's
``"choices"`` or ``"type"``, or a ``\\u`` escape (which could spell one of them) after a few byte searches, a whole
read of such events (LF, or CRLF only) at once.
"""

from __future__ import annotations

import json
import re

import attrs
import msgspec

from operators import DEFAULT_LIMITS, Code, Failure, Finish, FinishReason, Limits
from operators.extend import classify_inband_error, foreign_format, format_mismatch

from .._event_repair import EventRepair
from .._repair_values import decode, encode_event
from .._sse_events import event_parts
from ._errors import gemini_error
from ._reading import NO_BLOCK, UNSET, Calls, Response, decode_response, name_of

__all__ = ["GeminiRepair"]

_MARKS = (b'"functionCall"', b'"finishReason"', b'"promptFeedback"', b'"error"', b'"choices"', b'"type"', b"\\u")
_PLAIN = re.compile(rb"(?:data: \{[^\n]*\n\n)+")
"""A read of one-line ``data: {`` events only (LF): it passes whole when no mark is in it."""
_PLAIN_CRLF = re.compile(rb"(?:data: \{[^\r\n]*\r\n\r\n)+")
"""The same with CRLF line ends, Google's own framing."""
_FILTERED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                       "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"})
_SIMPLE = {"stop": Finish(FinishReason("stop")), "tool-calls": Finish(FinishReason("tool-calls")),
           "max-tokens": Finish(FinishReason("max-tokens"))}


def _quote(payload: bytes, limit: int = 120) -> str:
    return payload.decode("utf-8", errors="replace")[:limit]


def _plain(data: bytes) -> bool:
    """Whether no mark of ``_MARKS`` is in ``data`` (written out: a third of the time of a loop over them)."""
    return not (b'"functionCall"' in data or b'"finishReason"' in data or b'"promptFeedback"' in data
                or b'"error"' in data or b'"choices"' in data or b'"type"' in data or b"\\u" in data)


def _data_only(raw: bytes) -> bytes | None:
    """``raw`` as its ``data: `` lines only, when it has another line (a comment, ``event:``, ``id:``, ``data:``
    without its space, a BOM); ``None`` when it is data lines already."""
    lines = raw.splitlines()
    if all(not line or line.startswith(b"data: ") for line in lines):
        return None
    data = event_parts(raw)[1]
    if data is None:
        return b""
    end = b"\r\n" if raw.endswith(b"\r\n") else b"\r" if raw.endswith(b"\r") else b"\n"
    return b"".join(b"data: " + line + end for line in data.split(b"\n")) + end


def _mismatch(seen: str, data: bytes) -> Failure:
    try:
        return format_mismatch(seen, "gemini", data)
    except KeyError:  # the library does not name the Gemini format yet
        return Failure(Code.MALFORMED_RESPONSE, f"a Gemini stream carried a {seen} payload (read it with "
                       f"format={seen!r}): {data[:80].decode('utf-8', 'replace')}")


class GeminiRepair(EventRepair):
    """One Gemini response body: ``feed(bytes) -> bytes`` (any split), ``close()``, ``fail(failure)``; the ``failure``
    and ``finish`` found; ``forwarded`` is set by the transport."""

    def __init__(self, *, limits: Limits | None = None, api_key: str | None = None, strict: bool = False) -> None:
        super().__init__(limits, api_key, strict)
        self._calls = Calls((limits or DEFAULT_LIMITS).max_tool_calls)
        self._seen: Finish | None = None  # candidate 0's finish or the prompt's block, read; emitted at the end
        self._crlf = False  # a read of CRLF events passed whole: our error event ends its lines so too

    def feed(self, data: bytes) -> bytes:
        if (type(data) is bytes and data.endswith(b"\r\n\r\n") and not self._split.pending
                and not (self._preamble or self._queue or self._ended or self._calls.open)
                and data.count(b"\r") == data.count(b"\r\n") == data.count(b"\n")  # every line end a CRLF
                and (self._key is None or self._key not in data)):
            self._crlf = True
            if data.find(b"\r\n\r\n") == len(data) - 4:  # one event
                if self._passes(data) is not None:
                    return data
            elif _PLAIN_CRLF.fullmatch(data) is not None and _plain(data):
                return data  # whole events of Google's framing, none a rule reads: no per-event work
        return super().feed(data)

    def _hot_block(self, block: bytes) -> bool:
        return not self._calls.open and _PLAIN.fullmatch(block) is not None and _plain(block)

    def _passes(self, raw: bytes) -> bytes | None:
        if self._calls.open or not raw.startswith(b"data: {"):
            return None
        if raw.endswith(b"\r\n\r\n"):
            line = raw[:-4]
        elif raw.endswith(b"\n\n"):
            line = raw[:-2]
        else:
            return None
        if b"\n" in line or b"\r" in line or not _plain(line):
            return None
        return raw

    def _event(self, raw: bytes) -> None:
        written = _data_only(raw)
        if written is not None:
            self.repairs["framing"] += 1
            if not written:
                return  # a comment, an id: alone: no data, nothing the SDK could read
            raw = written
        data = event_parts(raw)[1]
        if data is None:
            self._emit(raw, content=False)  # blank lines
            return
        if data == b"[DONE]":  # a gateway's terminator: not Gemini's, and the SDK cannot read it (decision 0071)
            self.repairs["done-dropped"] += 1
            self._on_cut()
            return
        try:
            body = decode_response(data)
        except msgspec.DecodeError:
            self._end_with(Failure(Code.MALFORMED_RESPONSE, f"malformed Gemini payload: {_quote(data)}"))
            return
        if body.error is not UNSET:
            self._error(raw, data, body.error)
            return
        seen = foreign_format(body.type if body.type is not UNSET else None, body.choices is not UNSET)
        if seen is not None:  # a stream of another format (decision 0045)
            self._end_with(_mismatch(seen, data))
            return
        if body.type is not UNSET:
            self._end_with(Failure(Code.MALFORMED_RESPONSE, f"not a Gemini payload: {_quote(data)}"))
            return
        says = self._seen is None and self._read(body, data)
        if self._failure is None and not self._ended:
            self._emit(raw, content=says)

    def _error(self, raw: bytes, data: bytes, error: object) -> None:
        """The upstream's own in-band error: passed on as sent (its ``error`` moved first when it is not, since the
        SDK raises only on an event that begins with it), classified as the library classifies it."""
        body = decode(data)
        if next(iter(body), None) != "error":
            raw = encode_event(b"", {"error": body["error"], **body})
            self.repairs["framing"] += 1
        self._end_with(classify_inband_error(error if error is not None else {"message": _quote(data, 500)}), raw)

    def _read(self, body: Response, data: bytes) -> bool:
        """Reads candidate 0 (its calls, its finish) and the prompt's block, as the library does: whether the event
        says something (text, a call, a finish, a block). A call without a name ends the stream here."""
        says = False
        feedback = body.prompt_feedback
        block = feedback.block_reason if feedback is not None else None
        if block is not None and block not in NO_BLOCK:  # this event's parts still count
            self._seen = Finish(FinishReason.error(Code.CONTENT_FILTER, f"prompt blocked: {block[:60]}"))
            says = True
        calls = self._calls
        for candidate in body.candidates or ():
            if candidate.index:
                continue  # another candidate: passed, not judged
            content = candidate.content
            for part in (content.parts or ()) if content is not None else ():
                if part.function_call is None:
                    calls.end_open()  # a part of another kind ends a streamed call
                    if part.text:
                        says = self._said = True
                    continue
                failure = calls.part(part.function_call)
                if failure is not None:
                    if failure.code == Code.MALFORMED_RESPONSE:
                        failure = attrs.evolve(failure, message=f"{failure.message}: {_quote(data)}")
                    self._end_with(failure)
                    return False
                says = self._said = True
            if candidate.finish_reason is not None:
                calls.end_open()
                if self._seen is None:
                    self._seen = self._finish_of(candidate.finish_reason, candidate.finish_message)
                says = True
        return says

    def _finish_of(self, reason: str, message: object) -> Finish:
        if reason == "STOP":
            return _SIMPLE["tool-calls" if self._calls.count else "stop"]
        if reason == "MAX_TOKENS":
            return _SIMPLE["max-tokens"]
        told = name_of(message)
        detail = f"model stopped: {reason[:60]}" + (f": {told[:500]}" if told else "")
        if reason in _FILTERED:
            return Finish(FinishReason.error(Code.CONTENT_FILTER, detail))
        if reason == "MALFORMED_FUNCTION_CALL":
            return Finish(FinishReason.error(Code.MALFORMED_TOOL_CALL, detail))
        return Finish(FinishReason.error(Code.UNKNOWN, detail))

    # -- the end --------------------------------------------------------------------------------------------------

    def close(self) -> bytes:
        """The body ended: an event whose blank line is a CR last in the body (held back in case an LF followed) is
        whole, and read as any whole event (the library's framing ends the line there too)."""
        if not (self._closed or self._ended) and self._split.pending:
            tail = self._split.tail()
            if tail.endswith((b"\r\n\r", b"\n\r", b"\r\r")):
                self._run(self._split.events(tail))
                return self._take() + super().close()
            self._split.feed_block(tail)  # kept: the frame reads it as the body's unterminated end
        return super().close()

    def _on_cut(self) -> None:
        seen = self._seen
        if seen is None:
            self._end_with(Failure(Code.STREAM_CLOSED, "Gemini stream ended before any finishReason or prompt block"))
        elif seen.reason.kind in ("stop", "tool-calls") and (failure := self._strict_failure()) is not None:
            self._end_with(failure)
        else:
            self._end(seen)

    def _error_event(self, failure: Failure) -> bytes:
        end = b"\n\n" if self._split.lf_only and not self._crlf else b"\r\n\r\n"
        return b"data: " + json.dumps(gemini_error(failure), ensure_ascii=False).encode() + end
