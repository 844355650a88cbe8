"""What the Messages and Responses repairers share (docs/decisions/0036-repair-messages-and-responses.md): the
upstream body cut into whole events (``SseSplitter``), each passed on as its original bytes unless a format's rule
changes it, in order, through one queue.

- **The preamble is held** (``message_start`` and ``ping``; ``response.created`` / ``.in_progress``) until the first
  event that carries the answer (with ``strict``, until the answer says something: text or a call), so a failure
  found before it (a call never identified, a cut, an in-band error) comes before any byte and the transport can
  answer it as an HTTP error the SDK retries.
- **A call not yet identified is held** (``Held``): its start event is kept as a value, and every later event waits
  behind it until its identity is known; the start is then written with it and the queue flows again. Never
  identified: the queue up to it is passed on, then the format's in-band error, and nothing after.
- **The request's API key** (8 characters or more) is replaced by ``[redacted]`` in every event that carries it.
- **The end**: the format's own end event ends it; so does a failure, which is the format's in-band error event. A
  body that ends without its end event is the format's ``_on_cut``; nothing is read after the end.
"""

from __future__ import annotations

from collections import Counter

import attrs
import msgspec

from operators import DEFAULT_LIMITS, Code, Failure, Finish, FinishReason, Limits

from .._logging import get_logger
from ._repair_values import Held, decode
from ._sse_events import SseSplitter, event_parts

__all__ = ["EventRepair"]

_log = get_logger("sanitize")

_MIN_KEY = 8
_REDACTED = b"[redacted]"


class EventRepair:
    """The sans-I/O frame of a format's repairer: ``feed`` / ``close`` / ``fail`` return the bytes to forward now.
    A subclass gives ``_event(raw)``, ``_error_event(failure)`` and ``_on_cut()``."""

    def __init__(self, limits: Limits | None = None, api_key: str | None = None, strict: bool = False) -> None:
        self._key = api_key.encode() if api_key and len(api_key) >= _MIN_KEY else None
        self._split = SseSplitter()
        self._limit = (limits or DEFAULT_LIMITS).max_event_bytes
        self._held_limit = (limits or DEFAULT_LIMITS).max_text_bytes
        self._held_bytes = 0  # bytes in the queue
        self._out: list[bytes] = []
        self._queue: list[bytes | Held] = []  # the held preamble, and every event behind a held call
        self._preamble = True
        self._holding = 0  # held calls not yet identified
        self._failure: Failure | None = None
        self._finish: Finish | None = None
        self._ended = False
        self._closed = False  # ended by a failure, or disposed of: nothing more is passed on
        self._unterminated = False  # the last event passed on had no blank line (read at the end of the body)
        self._strict = strict
        self._said = not strict  # strict: the opening stays held until the answer says something (text or a call)
        self._refused = False
        self.forwarded = False
        """Whether any byte has been handed to the client (set by the transport)."""
        self.held_events = 0  # answer events read and held (not a ping, a comment): the read deadline's progress
        self.repairs: Counter[str] = Counter()
        """What was repaired, by kind (the proxy's access log and metrics): ``key-redacted`` here, the rest by the
        format (``tool-call-identity``, ``block-restarted``, ``item-identity``, ``response-identity``, ``framing``,
        ``done-dropped``)."""

    @property
    def failure(self) -> Failure | None:
        """The stream-level failure found so far (a call never identified, a cut, an in-band error)."""
        return self._failure

    @property
    def finish(self) -> Finish | None:
        """The finish, once the stream has ended (an error finish carries ``failure``)."""
        return self._finish

    # -- the body -------------------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> bytes:
        if (not (self._preamble or self._queue or self._ended) and not self._split.pending and type(data) is bytes
                and data.endswith(b"\n\n") and (self._key is None or self._key not in data)):
            # a read of whole events with nothing held: one event by the format's _passes, several by _hot_block
            if data.find(b"\n\n") == len(data) - 2:
                passed = self._passes(data)
            else:
                passed = data if b"\r" not in data and self._hot_block(data) else None
            if passed is not None:
                return passed
        if self._closed:
            return b""
        if self._ended:
            for raw in self._split.feed(data):
                self._after_end(raw)
            if self._split.pending > self._limit:
                self._split.tail()  # not read after the end: not kept either
            return self._take()
        block = self._split.feed_block(data)
        if block:
            if self._flowing() and self._split.lf_only and self._hot_block(block) and (
                self._key is None or self._key not in block
            ):
                self._out.append(block)  # every event of this read passes as it came: no per-event work
            else:
                self._run(self._split.events(block))
        if not self._ended and self._split.pending > self._limit:
            self._split.tail()
            self._end_with(Failure(Code.LIMIT_EXCEEDED, f"one SSE event is over max_event_bytes ({self._limit})"))
        return self._take()

    def close(self) -> bytes:
        """The body ended: its last event without a blank line is read when whole (as the library reads it); a
        stream that did not reach its end event ends as the format's ``_on_cut`` says."""
        tail = self._split.tail()
        if self._closed:
            return b""
        if self._key is not None and self._key in tail:
            tail = tail.replace(self._key, _REDACTED)
            self.repairs["key-redacted"] += 1
        if tail and not tail.strip():
            self._out.append(tail)  # blank lines after the last event: as they came
        elif tail:
            data = event_parts(tail)[1]
            if data is not None and (data == b"[DONE]" or _whole_json(data)):
                self._unterminated = True
                self._one(tail)
        if not self._ended:
            self._on_cut()
        return self._take()

    def fail(self, failure: Failure) -> bytes:
        """The body broke off (a reset, a timeout): the in-band error, after what may still be passed on."""
        if self._ended:
            return b""
        self._split.tail()
        self._end_with(failure)
        return self._take()

    def dispose(self) -> None:
        self._queue.clear()
        self._out.clear()
        self._split.tail()
        self._ended = True
        self._closed = True

    # -- for the formats ------------------------------------------------------------------------------------------

    def _hot_block(self, block: bytes) -> bool:
        """Whether every event of ``block`` (whole events, LF line ends) is one that passes unread when nothing is
        held: a format's proof over the whole read, checked before any per-event work (decision 0036)."""
        return False

    def _run(self, events: list[bytes]) -> None:
        """Every whole event of one read: while nothing is held, what the format's ``_passes`` recognises goes
        straight out; anything else is read (``_event``)."""
        out = self._out
        key = self._key
        passes = self._passes
        flowing = self._flowing()
        for raw in events:
            if flowing and (key is None or key not in raw):
                hot = passes(raw)
                if hot is not None:
                    out.append(hot)
                    continue
            if self._closed:
                break
            self._one(raw)
            flowing = self._flowing()

    def _passes(self, raw: bytes) -> bytes | None:
        """The bytes an event passes as when nothing is held and the rules need not read it (a delta), else ``None``:
        a few byte comparisons, no decoding."""
        return None

    def _flowing(self) -> bool:
        """Whether an event passes straight on: nothing held, not ended."""
        return not (self._preamble or self._queue or self._ended)

    def _one(self, raw: bytes) -> None:
        key = self._key
        if key is not None and key in raw:  # the request's own API key never reaches the client
            raw = raw.replace(key, _REDACTED)
            self.repairs["key-redacted"] += 1
        if self._ended:
            self._after_end(raw)
            return
        try:
            self._event(raw)
        except (TypeError, ValueError, RecursionError) as exc:  # a rule tripped on an odd JSON value: no exception
            self._end_with(Failure(Code.MALFORMED_RESPONSE, f"malformed SSE payload: {type(exc).__name__}: {exc}"))

    def _event(self, raw: bytes) -> None:
        raise NotImplementedError

    def _error_event(self, failure: Failure) -> bytes:
        raise NotImplementedError

    def _after_end(self, raw: bytes) -> None:
        """An event after the stream's own end event: not read, not passed on (a format may pass some on)."""

    def _on_cut(self) -> None:
        raise NotImplementedError

    def _emit(self, raw: bytes, content: bool = True) -> None:
        """Passes ``raw`` on in order (after the queue); ``content=False`` keeps the preamble held, and so does a
        held call (its resolution ends the preamble)."""
        if content and not self._holding and self._said:
            self._preamble = False
        if self._preamble or self._queue:
            self._queue.append(raw)
            self._held_bytes += len(raw)
            self.held_events += content
            if not self._preamble:
                self._flush()
            if self._held_bytes > self._held_limit:
                message = f"over max_text_bytes ({self._held_limit}) held for the first answer or a call's identity"
                self._end_with(Failure(Code.LIMIT_EXCEEDED, message))
        else:
            self._out.append(raw)

    def _hold(self, held: Held) -> None:
        self.held_events += 1
        self._holding += 1
        self._queue.append(held)

    def _resolve(self, held: Held, raw: bytes) -> None:
        held.raw = raw
        self._holding -= 1
        self._said = True
        self._preamble = False
        self._flush()

    def _flush(self) -> None:
        """Passes on the queue up to the first held call still unidentified."""
        queue = self._queue
        taken = 0
        for item in queue:
            if type(item) is bytes:
                self._out.append(item)
                self._held_bytes -= len(item)
            elif item.raw is not None:  # type: ignore[union-attr]
                self._out.append(item.raw)  # type: ignore[union-attr]
            else:
                break
            taken += 1
        del queue[:taken]

    def _strict_failure(self) -> Failure | None:
        """With ``strict``, the library's outcome policy at the end: a refusal is ``REFUSAL``, an answer with no text
        and no call ``EMPTY_RESPONSE`` (both retried by the default ``RetryPolicy``)."""
        if not self._strict:
            return None
        if self._refused:
            return Failure(Code.REFUSAL, "the model refused")
        if not self._said:
            return Failure(Code.EMPTY_RESPONSE, "the response has no text and no tool call")
        return None

    def _end(self, finish: Finish) -> None:
        self._finish = finish
        self._ended = True
        self._preamble = False  # a finish releases what it held (a message_start whose content is the answer, 0070)
        self._flush()

    def _end_with(self, failure: Failure, event: bytes | None = None) -> None:
        """Ends in ``failure``: the queue up to a call never identified, then ``event`` (the upstream's own error
        event) or the format's in-band error; what was held behind the call is dropped."""
        if self._key is not None and self._key.decode() in failure.message:
            failure = attrs.evolve(failure, message=failure.message.replace(self._key.decode(), _REDACTED.decode()))
        if self.forwarded:
            _log.warning("failed after bytes were forwarded, ending with the in-band error event: %s: %s",
                         failure.code, failure.message)
        self._preamble = False
        self._flush()
        self._queue.clear()
        if event is None:
            event = self._error_event(failure)
            if self._unterminated:
                event = b"\n\n" + event
        self._out.append(event)
        self._failure = failure
        self._closed = True
        self._end(Finish(FinishReason("error", failure)))

    def _take(self) -> bytes:
        if not self._out:
            return b""
        out = b"".join(self._out)
        self._out.clear()
        return out


def _whole_json(data: bytes) -> bool:
    try:
        decode(data)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True
