"""``MessagesRepair``: an Anthropic Messages API stream made right for the anthropic SDK, sans I/O; and
``messages_error_body``, a failure as the Messages API's HTTP error body.

Rules (docs/decisions/0036-repair-messages-and-responses.md); every event the SDK already reads right passes as its
original bytes:

- A ``content_block_start`` for an index already started is dropped (the SDK appends a block per start, so a repeated,
  blanked start gave three ``tool_use`` blocks with ids ``toolu_...``, ``''`` and ``None``): the first identity stays.
- A ``tool_use`` start without a non-empty ``id`` and ``name`` is held, with everything after it, until a repeated
  start for its index fills them in; the first start is then written with them. Still unidentified at
  ``message_stop``: ``MALFORMED_TOOL_CALL``.
- A ``message_start`` without a message object is ``MALFORMED_RESPONSE``; a second one with another ``id`` is
  ``STREAM_CLOSED`` (the first message was cut, decision 0044); one with the first's ``id`` (a duplicate) passes. A
  payload of another wire format (a chat chunk, a Responses event) is ``MALFORMED_RESPONSE`` naming it (0045).
- A ``data: [DONE]`` is dropped, and ends the stream as the body's end would (0070); nothing after the end is passed
  on. An event without an ``event:`` line (a data-only stream, which the SDK skips) gets one named after its ``type``.
- The body ending without ``message_stop``: after a ``stop_reason`` the message is whole (the library reads it so, and
  so does the SDK): a finish; before one, ``STREAM_CLOSED``. A failure is ``event: error`` in Anthropic's shape
  (``{"type": "error", "error": {"type", "message"}}``), which the SDK raises as ``APIStatusError``.
- Thinking signatures, redacted thinking, server-tool blocks, citations: passed through unread.

The hot path (a ``content_block_delta``, nearly every event) is two byte comparisons; only the events that carry
identity or the end are decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from operators import Code, Failure, Limits
from operators.extend import classify_inband_error, foreign_format, format_mismatch

from ..._logging import get_logger
from .._event_repair import EventRepair
from .._repair_values import Held, decode, encode_event, finish_from, named
from .._sse_events import event_parts

__all__ = ["MessagesRepair", "messages_error_body"]

_log = get_logger("sanitize")

_DELTA_NAMED = b"event: content_block_delta\n"
_DELTA_TYPE = b'"content_block_delta"'
_DELTA_DATA = b'data: {"type":"content_block_delta"'
_BOM = b"\xef\xbb\xbf"
_DELTAS = re.compile(rb'(?:event: content_block_delta\ndata: \{"type":"content_block_delta"[^\n]*\n\n)+')
"""A read of deltas only, each as the Messages API writes it: the whole read passes as it came."""
_FINISHES = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls", "max_tokens": "max-tokens"}
_ERROR_TYPES: dict[str, str] = {
    Code.RATE_LIMIT: "rate_limit_error",
    Code.AUTH: "authentication_error",
    Code.QUOTA: "billing_error",
    Code.INVALID_REQUEST: "invalid_request_error",
    Code.CONTEXT_WINDOW_EXCEEDED: "invalid_request_error",
    Code.TIMEOUT: "timeout_error",
}


def _error(failure: Failure) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(failure.code)
    if kind is None:
        kind = "overloaded_error" if failure.status == 529 else "api_error"
    message = f"{failure.code}: {failure.message}"
    return {"type": "error", "error": {"type": kind, "message": message, "code": failure.code}}


def messages_error_body(failure: Failure) -> bytes:
    """``failure`` as the Messages API's HTTP error body: ``{"type": "error", "error": {"type", "message"}}`` (the
    message names our code, also given as ``code``)."""
    return json.dumps(_error(failure), ensure_ascii=False).encode()


def _says(delta: bytes) -> bool:
    """Whether a delta event says something: text or thinking that is not empty, or a call's arguments."""
    try:
        body = decode(event_parts(delta)[1] or b"")
    except (msgspec.DecodeError, RecursionError):
        return False
    inner = body.get("delta") if type(body) is dict else None
    if type(inner) is not dict:
        return False
    return any(named(inner.get(field)) for field in ("text", "thinking", "partial_json"))


def _named_event(name: bytes, raw: bytes) -> bytes:
    """``raw`` with an ``event: name`` line before its first field line (after a BOM and blank lines)."""
    start = 3 if raw.startswith(_BOM) else 0
    start = len(raw) - len(raw[start:].lstrip(b"\r\n"))
    return raw[:start] + b"event: " + name + b"\n" + raw[start:]


class MessagesRepair(EventRepair):
    """One Messages API response body: ``feed(bytes) -> bytes`` (any split), ``close()``, ``fail(failure)``; the
    ``failure`` and ``finish`` found; ``forwarded`` is set by the transport."""

    def __init__(self, *, limits: Limits | None = None, api_key: str | None = None, strict: bool = False) -> None:
        super().__init__(limits, api_key, strict)
        self._blocks: dict[int, Held | None] = {}  # started blocks by index; a held tool_use keeps its Held
        self._started = False
        self._message_id: object = None
        self._stop_reason: str | None = None

    def _hot_block(self, block: bytes) -> bool:
        return _DELTAS.fullmatch(block) is not None

    def _passes(self, raw: bytes) -> bytes | None:
        if raw.startswith(_DELTA_NAMED) and _DELTA_TYPE in raw:
            return raw  # text, thinking, arguments, signature, citations: as they came
        if raw.startswith(_DELTA_DATA):
            self.repairs["framing"] += 1
            return _DELTA_NAMED + raw  # a data-only stream: named, as the SDK needs
        return None

    def _event(self, raw: bytes) -> None:
        delta = self._passes(raw)
        if delta is not None:
            if not self._said:
                self._said = _says(delta)
            self._emit(delta)
            return
        name, data = event_parts(raw)
        if data is None:
            self._emit(raw, content=False)  # a comment or a blank line
            return
        if data == b"[DONE]":  # the end, as the library reads it: a finish after a stop_reason, else a cut (0070)
            self.repairs["done-dropped"] += 1
            self._on_cut()
            return
        try:
            body = decode(data)
        except (msgspec.DecodeError, RecursionError):
            body = None
        kind = body.get("type") if type(body) is dict else None
        if not name and type(kind) is str and kind:  # a data-only stream: the SDK reads only named events
            name = kind.encode()
            raw = _named_event(name, raw)
            self.repairs["framing"] += 1
        if name == b"error" or kind == "error":
            error = body.get("error", body) if type(body) is dict else data.decode("utf-8", "replace")
            self._end_with(classify_inband_error(error), raw)
            return
        seen = foreign_format(kind, type(body) is dict and "choices" in body)
        if seen is not None and seen != "messages":  # a stream of another format (decision 0045)
            self._end_with(format_mismatch(seen, "messages", data))
            return
        if kind == "content_block_start":
            self._block_start(raw, name, body)
        elif kind == "message_start":
            self._message_start(raw, body)
        elif kind == "message_delta":
            delta = body.get("delta")
            reason = delta.get("stop_reason") if type(delta) is dict else None
            if named(reason):
                self._stop_reason = reason
            self._emit(raw)
        elif kind == "message_stop":
            self._message_stop(raw)
        else:
            self._emit(raw, content=kind != "ping")

    def _message_start(self, raw: bytes, body: dict[str, Any]) -> None:
        message = body.get("message")
        if type(message) is not dict:  # the library's reading: a field of the wrong type
            self._end_with(Failure(Code.MALFORMED_RESPONSE, "message_start without a message object"))
            return
        if self._started and message.get("id") != self._message_id:  # decision 0044: the first message was cut
            self._end_with(Failure(Code.STREAM_CLOSED, f"message {str(message.get('id'))[:60]} started before "
                                   f"message {str(self._message_id)[:60]} ended: the stream of it was cut"))
            return
        if not self._started:
            self._started = True
            self._message_id = message.get("id")
            if named(reason := message.get("stop_reason")):  # the library reads a finish given here too (0070)
                self._stop_reason = reason
            content = message.get("content")
            if type(content) is list:  # a continuation's blocks are started already
                for index in range(len(content)):
                    self._blocks.setdefault(index, None)  # a block started before it (held or not) stays
        self._emit(raw, content=False)

    def _block_start(self, raw: bytes, name: bytes, body: dict[str, Any]) -> None:
        index = body.get("index")
        block = body.get("content_block")
        if type(index) is not int or type(block) is not dict:
            self._emit(raw)  # not a start this rule can read: as it came
            return
        if index in self._blocks:
            held = self._blocks[index]
            if held is not None and held.raw is None:
                self._fill_in(held, block)
            self.repairs["block-restarted"] += 1
            _log.debug("content block %d started again; the first start is kept", index)
            return
        if block.get("type") == "tool_use" and not (named(block.get("id")) and named(block.get("name"))):
            held = self._blocks[index] = Held(index, name, body)
            self._hold(held)
            return
        self._blocks[index] = None
        if block.get("type") == "tool_use" or (block.get("type") == "text" and named(block.get("text"))):
            self._said = True
        self._emit(raw)

    def _fill_in(self, held: Held, block: dict[str, Any]) -> None:
        first = held.body["content_block"]
        for field in ("id", "name"):
            if not named(first.get(field)) and named(block.get(field)):
                first[field] = block[field]
        if named(first.get("id")) and named(first.get("name")):
            self.repairs["tool-call-identity"] += 1
            self._resolve(held, encode_event(held.name, held.body))

    def _message_stop(self, raw: bytes) -> None:
        if self._holding:
            self._end_with(self._never_identified())
            return
        self._refused = self._stop_reason == "refusal"
        failure = self._strict_failure()
        if failure is not None:
            self._end_with(failure)
            return
        self._emit(raw)
        self._end(finish_from(_FINISHES.get(self._stop_reason or "end_turn", ""), self._stop_reason or "end_turn"))

    def _never_identified(self) -> Failure:
        held = next(h for h in self._blocks.values() if h is not None and h.raw is None)
        block = held.body["content_block"]
        return Failure(
            Code.MALFORMED_TOOL_CALL,
            f"tool_use block {held.index} was never identified (id {block.get('id')!r}, name {block.get('name')!r})",
        )

    def _after_end(self, raw: bytes) -> None:
        if event_parts(raw)[1] == b"[DONE]":  # dropped, as everything after message_stop: the SDK would read it
            self.repairs["done-dropped"] += 1

    def _on_cut(self) -> None:
        self._refused = self._stop_reason == "refusal"
        if self._stop_reason is not None and not self._holding and (failure := self._strict_failure()) is not None:
            self._end_with(failure)
        elif self._stop_reason is not None and not self._holding:
            self._end(finish_from(_FINISHES.get(self._stop_reason, ""), self._stop_reason))
        elif self._stop_reason is not None:
            self._end_with(self._never_identified())
        else:
            self._end_with(Failure(Code.STREAM_CLOSED, "Messages stream ended before message_stop"))

    def _error_event(self, failure: Failure) -> bytes:
        return b"event: error\ndata: " + json.dumps(_error(failure), ensure_ascii=False).encode() + b"\n\n"
