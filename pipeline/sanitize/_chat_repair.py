"""``ChatRepair``: a streamed chat completion repaired in place, event by event (a ``StreamRepair``).

Each upstream event goes to the client as the upstream sent it (its own bytes) unless a rule must change it
(docs/decisions/0032-repair-dont-rewrite.md):

- a tool call's identity: held until its ``id`` and ``name`` are known, then sent once with every argument fragment
  held so far; continuations lose the repeated or blanked ``id`` / ``type`` / ``name`` (the seed's bug); calls are
  correlated as the library does (a reused wire index with a new id is a new call, Ollama; no index joins the latest
  call); client indices are dense per choice, in the order the calls are identified; in choice 0 (the one the library
  reads, decision 0070) a call never identified by ``[DONE]``, or an id two calls claim, is ``MALFORMED_TOOL_CALL``;
- framing: an event with no ``data:`` (an SSE ``id:`` alone, a comment, a keep-alive) is dropped; a BOM is dropped;
  CR line ends become LF; a missing ``[DONE]`` after choice 0's finish is added; nothing after ``[DONE]`` is read; a
  last event without its blank line is dropped (WHATWG); a chunk the library refuses (``decode_chunk``) is refused;
- an in-band error, a malformed event, a cut: the stream's failure (``failure``), written as OpenAI's in-band
  ``data: {"error": ...}`` event naming our code when a byte was already released;
- the request's API key, should the upstream echo it, is replaced in whatever is forwarded.
Everything else (logprobs, choices of ``n > 1``, refusal, reasoning, content filter, ids, usage, unknown fields) passes
untouched; most events take the fast path (byte searches prove no rule reads them). Events are held until the first
that carries something, so a failure found before it is still an HTTP error the client's retry loop can retry.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import msgspec

from operators import DEFAULT_LIMITS, Code, Failure, Finish, FinishReason, Limits
from operators.extend import classify_inband_error
from operators.wire import decode_chunk

from ._chat_bounds import Opening, choices_bound, decoded, guarded
from ._chat_calls import Choice
from ._chat_fast import Kept, plain_events, plain_prefix, text_shape
from ._encode import error_event

__all__ = ["ChatRepair"]

_DONE = b"data: [DONE]\n\n"
_BOM = b"\xef\xbb\xbf"
_KINDS: dict[str, Any] = {"stop": "stop", "tool_calls": "tool-calls", "function_call": "tool-calls",
                          "length": "max-tokens"}
_TEXT_KEYS = ("content", "reasoning_content", "reasoning", "reasoning_details", "refusal", "audio", "function_call")


class ChatRepair:
    """One attempt of a streamed chat completion. ``strict=True`` applies the library's outcome policy on top:
    a refusal is ``REFUSAL`` and an answer with no text and no call ``EMPTY_RESPONSE`` (both retried by the default
    ``RetryPolicy``); by default those outcomes reach the client as the upstream sent them."""

    def __init__(self, *, limits: Limits | None = None, api_key: str | None = None, strict: bool = False) -> None:
        self.forwarded = False
        self._limits = limits or DEFAULT_LIMITS
        self._key = api_key.encode() if api_key and len(api_key) >= 8 else None
        self._strict = strict
        self._buf = b""
        self._kept = Kept()  # reads after ``_buf`` that end no event, joined once when one does (linear)
        self._started = False
        self._cr = False
        self._held = Opening(self._limits.max_text_bytes)
        self._released = False
        self._choices: dict[int, Choice] = {}
        self._said = False
        self._refused = False
        self._failure: Failure | None = None
        self._finish: Finish | None = None
        self.repairs: Counter[str] = Counter()
        """What was repaired, by kind (the proxy's access log and metrics): ``tool-call-identity``, ``framing``,
        ``line-ends``, ``bom``, ``done-added``, ``key-redacted``."""
        self._shape: tuple[bytes, bytes] = (b"", b"")
        """The bytes around the text of the last single-event read that passed: a text delta shaped the same is
        proven rule-free by its text alone."""

    held_events = property(lambda self: self._held.events, doc="Events read and held: the read deadline's progress.")

    @property
    def failure(self) -> Failure | None:
        return self._failure

    @property
    def finish(self) -> Finish | None:
        return self._finish

    def dispose(self) -> None:
        self._held.clear()
        self._buf, self._kept = b"", Kept()

    # -- bytes in ---------------------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> bytes:
        if self._released and self._finish is None and not self._buf and not self._strict:
            prefix, suffix = self._shape
            if prefix and data.startswith(prefix) and data.endswith(suffix) and self._key is None:
                text = data[len(prefix) : len(data) - len(suffix)]  # one more text delta shaped like the last one
                if (len(data) > len(prefix) + len(suffix) and b'"' not in text and b"\n" not in text
                        and b"\r" not in text and not text.endswith(b"\\")):
                    return data  # its text cannot end the string, the event, or escape the quote that ends it
            if b"\r" not in data and (events := plain_events(data, self._key)):
                if events == 1:
                    self._shape = text_shape(data)
                return data  # the common read: whole events no rule reads, nothing buffered
        if self._finish is not None or not data:
            return b""
        if not self._started:
            self._started = True
            if data.startswith(_BOM):
                data = data[3:]
                self.repairs["bom"] += 1
        if self._cr or b"\r" in data:
            if not self._cr:
                self.repairs["line-ends"] += 1
            data = self._lf(data)
        if self._buf and self._kept.keep(self._buf, data, self._limits.max_event_bytes):
            return b""  # no event ends in this read: kept as it came, never joined or rescanned until one does
        buf = self._kept.joined(self._buf, data)
        out: list[bytes] = []
        start = 0
        whole = self._strict  # one try per read at passing every whole event at once (the fast path)
        while self._finish is None:
            if self._released and not whole:
                whole = True
                last = buf.rfind(b"\n\n") + 2
                block = buf[start:last] if start or last != len(buf) else buf
                if last > start + 1 and plain_events(block, self._key):
                    out.append(block)
                    start = last
                    break
                cut = plain_prefix(buf, start, last, self._key)  # the read's last events need a rule: the ones before
                if cut > start and plain_events(prefix := buf[start:cut], self._key):
                    out.append(prefix)  # still pass at once (a finish after thousands of deltas, in one read)
                    start = cut
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            piece = self._event(buf[start : end + 2])
            start = end + 2
            if piece:
                out.append(piece)
        self._buf = buf[start:] if self._finish is None else b""
        if len(self._buf) > self._limits.max_event_bytes:
            out.append(self._fail(Failure(Code.LIMIT_EXCEEDED, f"an event exceeds max_event_bytes "
                                          f"({self._limits.max_event_bytes} bytes)")))
        return b"".join(out)

    def _lf(self, data: bytes) -> bytes:
        """CR and CRLF line ends as LF; a CR at the end of a read is held back (its LF may come next)."""
        if self._cr:
            data = b"\r" + data
        self._cr = data.endswith(b"\r")
        if self._cr:
            data = data[:-1]
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def close(self) -> bytes:
        """The body ended: a last event without its blank line is dropped, as WHATWG and the library do (a held CR ends
        its line first; decision 0070); a finished message gets its ``[DONE]``; any other ending: ``STREAM_CLOSED``."""
        if self._finish is not None:
            return b""
        out = self.feed(b"\n") if self._cr else b""  # the held CR was a line end: "\r" + "\n" is one
        self._kept.joined(b"")  # an unterminated last event, kept or not, is dropped (decision 0070)
        self._buf = b""
        if self._finish is not None:
            return out
        if (message := self._choices.get(0)) is not None and message.finish_reason is not None:  # the library's message
            self.repairs["done-added"] += 1
            return out + self._done(_DONE)
        return out + self._fail(Failure(Code.STREAM_CLOSED, "the upstream body ended before the stream finished"))

    def fail(self, failure: Failure) -> bytes:
        return b"" if self._finish is not None else self._fail(failure)

    def _fail(self, failure: Failure) -> bytes:
        self._failure = failure
        self._finish = Finish(FinishReason("error", failure))
        if not self._released:
            self._held.clear()
            return b""
        return error_event(attrs.evolve(failure, message=f"{failure.code}: {failure.message}"))

    def _release(self, out: bytes, carries: bool) -> bytes:
        if (failure := choices_bound(len(self._choices))) is not None:  # a new choice an event: state, held
            return self._fail(failure)
        if self._released:
            return out
        if not carries:
            return b"" if (failure := self._held.hold(out)) is None else self._fail(failure)
        self._released = True
        return self._held.take(out)

    # -- one event ----------------------------------------------------------------------------------------------------

    def _event(self, event: bytes) -> bytes:
        if self._released and not self._strict and plain_events(event, self._key) == 1:
            return event  # the fast path: nothing here any rule reads
        return guarded(self._slow, event, self._fail)  # an exception on an odd JSON value: MALFORMED_RESPONSE

    def _slow(self, event: bytes) -> bytes:
        data: list[bytes] = []
        named: bytes | None = None
        for line in event.strip(b"\n").split(b"\n"):
            if line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b"event:"):
                named = line[6:].strip()
        if not data:
            return b""  # a comment, a keep-alive, an SSE id alone: nothing for the client
        payload = b"\n".join(data)
        if payload == b"[DONE]" and named != b"error":  # as the library reads it: exactly, and not an error event
            return self._done(event)
        obj = decoded(payload, named)  # None when malformed (or nested deeper than msgspec reads)
        if not isinstance(obj, dict):
            shown = payload[:120].decode("utf-8", "replace")
            return self._fail(Failure(Code.MALFORMED_RESPONSE, f"an event is not a JSON object: {shown}"))
        if named == b"error" or obj.get("error") is not None:  # beside choices (OpenRouter), or falsy: an error
            failure = classify_inband_error(obj.get("error", obj))
            if self._key is not None:
                failure = attrs.evolve(failure, message=failure.message.replace(self._key.decode(), "[redacted]"))
            return self._fail(failure)
        try:
            decode_chunk(payload)  # the library's own reading of a chunk: what it refuses is refused here too
        except msgspec.DecodeError as exc:  # (a string index, a number where a string goes; decision 0070)
            return self._fail(Failure(Code.MALFORMED_RESPONSE, f"malformed SSE payload: {exc}"))
        changed = framing = named is not None or event.find(b"\n") != len(event) - 2 or not event.startswith(b"data:")
        carries = False
        choices = obj.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict):
                step = self._choice(choice)
                if self._failure is not None:
                    return self._fail(self._failure)
                changed |= step[0]
                carries |= step[1]
        if obj.get("usage"):
            carries = True
        if changed:
            self.repairs["framing" if framing else "tool-call-identity"] += 1
            event = b"data: " + msgspec.json.encode(obj) + b"\n\n"
        if self._key is not None and self._key in event:
            self.repairs["key-redacted"] += 1
            event = event.replace(self._key, b"[redacted]")
        held = (m := self._choices.get(0)) is not None and m.finish_reason is not None and m.unidentified()
        return self._release(event, carries and not held)  # a call unidentified at the finish fails at [DONE] (0070)

    def _choice(self, choice: dict[str, Any]) -> tuple[bool, bool]:
        """Repairs one choice of one event in place: (whether it changed, whether it carries anything)."""
        position = found if isinstance(found := choice.get("index", 0), int) else 0
        state = self._choices.setdefault(position, Choice())
        changed = carries = False
        delta = choice.get("delta")
        if isinstance(delta, dict):
            calls = delta.get("tool_calls")
            if calls is not None:
                repaired = state.repair(calls if isinstance(calls, list) else [], state.ids, self._limits)
                if state.failure is not None:
                    self._failure = state.failure if position == 0 else None  # the library reads choice 0 (0070)
                    return changed, carries
                if repaired != calls:
                    changed = True
                    if repaired:
                        delta["tool_calls"] = repaired
                    else:
                        del delta["tool_calls"]
                carries |= bool(repaired)
            for key in _TEXT_KEYS:
                if delta.get(key):
                    if key == "refusal":
                        self._refused = True
                    if key != "refusal" or not self._strict:
                        carries = True
                    self._said = True
        if choice.get("logprobs"):
            carries = True
        reason = choice.get("finish_reason")
        if reason is not None:
            state.finish_reason = str(reason)
            carries = True
            if self._strict:
                self._failure = self._strict_failure()
        return changed, carries

    def _strict_failure(self) -> Failure | None:
        if self._refused:
            return Failure(Code.REFUSAL, "the model refused")
        if not self._said and not any(c.calls for c in self._choices.values()):
            return Failure(Code.EMPTY_RESPONSE, "the response has no text and no tool call")
        return None

    def _done(self, event: bytes) -> bytes:
        if (message := self._choices.get(0)) is not None and message.unidentified():
            return self._fail(Failure(Code.MALFORMED_TOOL_CALL, "a tool call was never identified (no id or name)"))
        if self._strict and (failure := self._strict_failure()) is not None:
            return self._fail(failure)
        first = self._choices.get(0) or next(iter(self._choices.values()), None)
        reason = first.finish_reason if first is not None else None
        self._finish = Finish(FinishReason(_KINDS.get(reason or "stop", "stop")))
        return self._release(event if event.startswith(b"data:") else _DONE, True)

