"""``ResponsesRepair``: an OpenAI Responses API stream made right for the openai SDK's ``responses.stream()``, sans
I/O; and ``responses_error_body``, a failure as OpenAI's HTTP error body.

Rules (docs/decisions/0036-repair-messages-and-responses.md); what the SDK already reads right passes as it came:

- **One item per ``output_index``**: the first ``response.output_item.added`` at an index is the item; its identity
  (``id``, ``call_id``, a function's or custom tool's ``name``) is written into every later event that gives another
  (deltas, parts, the ``.done`` item, ``response.completed``'s output), so the SDK's "identity changed" checks hold.
  A second ``added`` of that item is dropped (the SDK raises on a duplicate index), of another item
  ``MALFORMED_RESPONSE`` (0070). A lifecycle event with another response id, or none, gets the first. In
  ``response.completed``, an unseen item id is the upstream's own and stays (OpenRouter), unless it rotated.
- **A call the client runs without its identity is held** (any kind of decision 0072: ``_items.py``), with everything
  after it, until an event fills it in (a late ``call_id`` on ``output_item.done``); its ``added`` is then written
  with it. Still unidentified at its ``.done`` or the terminal event, or a built-in call never finished (its action
  or operation unknown): ``MALFORMED_TOOL_CALL``, as the library reads it.
- **The end**: ``response.completed`` / ``.incomplete`` finish; ``response.failed`` and ``error`` are the upstream's
  own failure, passed on as they came. A body ending before its terminal event is ``STREAM_CLOSED``. Our failure is
  an ``error`` event that also carries a top-level ``error`` object, which the SDK raises as ``APIError``. A trailing
  ``data: [DONE]`` is passed on (the SDK stops at it); nothing else after the end.
- Another format's payload is ``MALFORMED_RESPONSE`` naming it (0045); reasoning and server-tool items, annotations,
  unknown events: passed through unread.

Hot path: a delta or part event of the latest item (or of none) is two substring searches; only item, lifecycle
and terminal events are decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from operators import Code, Failure, Limits
from operators.extend import OWN_ERROR_TYPE, classify_inband_error, foreign_format, format_mismatch

from .._event_repair import EventRepair
from .._repair_values import Held, decode, encode_event, named
from .._sse_events import event_parts
from ._items import OutputItem, finish_of, never_identified, unread_call

__all__ = ["ResponsesRepair", "responses_error_body"]

_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_PARSED = _LIFECYCLE | {
    "response.output_item.added",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
}
_ITEM_ID = b'"item_id"'
_SAYING = frozenset({"response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta",
                     "response.reasoning_text.delta"})
_DELTAS = re.compile(rb'(?:event: (response\.[a-z_.]+\.delta)\ndata: \{"type":"\1"[^\n]*\n\n)+')
"""A read of delta events only, each typed as it is named: it passes whole when every ``item_id`` is the latest
item's."""


def _error(failure: Failure) -> dict[str, Any]:
    return {"message": f"{failure.code}: {failure.message}", "type": OWN_ERROR_TYPE, "code": failure.code,
            "param": None}


def responses_error_body(failure: Failure) -> bytes:
    """``failure`` as OpenAI's HTTP error body: ``{"error": {"message", "type", "code", "param"}}``, our code."""
    return json.dumps({"error": _error(failure)}, ensure_ascii=False).encode()


class ResponsesRepair(EventRepair):
    """One Responses API response body: ``feed(bytes) -> bytes`` (any split), ``close()``, ``fail(failure)``; the
    ``failure`` and ``finish`` found; ``forwarded`` is set by the transport."""

    def __init__(self, *, limits: Limits | None = None, api_key: str | None = None, strict: bool = False) -> None:
        super().__init__(limits, api_key, strict)
        self._items: dict[int, OutputItem] = {}
        self._by_id: dict[str, int] = {}  # every item id seen (rotated ones too) -> its output_index
        self._latest = b"\x00"  # the latest item's quoted id: deltas that name it pass unread
        self._response_id: object = None
        self._done_first: dict[int, dict[str, Any]] = {}  # an item's .done before its added, by output_index

    def _hot_block(self, block: bytes) -> bool:
        if _DELTAS.fullmatch(block) is None:
            return False
        return block.count(_ITEM_ID) == block.count(_ITEM_ID + b":" + self._latest)

    def _passes(self, raw: bytes) -> bytes | None:
        if raw.startswith(b"event: response."):  # a delta naming the latest item, or no item, typed as it is named
            end = raw.find(b"\n", 16)
            if (raw[end - 6 : end] == b".delta" and (self._latest in raw or _ITEM_ID not in raw)
                    and raw.startswith(b'data: {"type":"' + raw[7:end] + b'"', end + 1)):
                return raw
        return None

    def _event(self, raw: bytes) -> None:
        name = b""
        kind = ""  # the event's type when its name line says it (else its payload is read)
        if raw.startswith(b"event: "):
            end = raw.find(b"\n")
            cr = raw.find(b"\r", 7, end if end >= 0 else len(raw))  # its line ends at a CR (CR or CRLF line ends)
            stop = cr if cr >= 0 else end
            name = raw[7:stop]
            after = stop + (2 if raw[stop : stop + 2] == b"\r\n" else 1)
            if raw[after : after + 1] in (b"", b"\n", b"\r") or raw.startswith(b'data: {"type":"' + name + b'"', after):
                kind = name.decode("utf-8", "replace")  # a payload typed otherwise, or a second name line: read
        elif raw.startswith(b'data: {"type":"'):
            kind = raw[15 : raw.find(b'"', 15)].decode("utf-8", "replace")
        if kind and kind not in _PARSED and (_ITEM_ID not in raw or self._latest in raw):
            if not self._said and kind in _SAYING:
                self._hear(kind, raw)
            self._emit(raw, content=kind not in _LIFECYCLE)
            return
        name, data = event_parts(raw)
        if data is None or data == b"[DONE]":
            self._emit(raw, content=False)
            return
        try:
            body = decode(data)
        except (msgspec.DecodeError, RecursionError):
            body = None
        if type(body) is not dict:
            self._emit(raw)
            return
        given = body.get("type")
        kind = given if type(given) is str else name.decode("utf-8", "replace")
        if not self._said and kind in _SAYING:
            self._hear(kind, raw)
        seen = foreign_format(given, "choices" in body)
        if seen is not None and seen != "responses":  # a stream of another format (decision 0045)
            self._end_with(format_mismatch(seen, "responses", data))
        elif kind in _LIFECYCLE:
            self._emit(self._same_response(raw, name, body), content=False)
        elif kind == "response.output_item.added":
            self._added(raw, name, body)
        elif kind == "response.output_item.done":
            self._done(raw, name, body)
        elif kind in ("response.completed", "response.incomplete"):
            self._terminal(raw, name, body, kind)
        elif kind == "response.failed":
            response = body.get("response")
            error = response.get("error") if type(response) is dict else None
            self._end_with(classify_inband_error(error if error is not None else body), raw)
        elif kind == "error":
            error = body.get("error")
            flat = {k: v for k, v in body.items() if k != "type"}
            self._end_with(classify_inband_error(error if type(error) is dict else flat), raw)
        else:
            self._emit(self._same_item(raw, name, body))

    def _hear(self, kind: str, raw: bytes) -> None:
        """With ``strict``, before the answer has said anything: whether this delta says something (a refusal is
        not an answer)."""
        try:
            body = decode(event_parts(raw)[1] or b"")
        except (msgspec.DecodeError, RecursionError):
            return
        if type(body) is dict and named(body.get("delta")):
            if kind == "response.refusal.delta":
                self._refused = True
            else:
                self._said = True

    # -- identity -------------------------------------------------------------------------------------------------

    def _same_response(self, raw: bytes, name: bytes, body: dict[str, Any]) -> bytes:
        response = body.get("response")
        if type(response) is not dict:
            return raw
        if self._response_id is None:
            if named(response.get("id")):
                self._response_id = response["id"]
        elif response.get("id") != self._response_id:  # another id, or none: the SDK raises on either
            response["id"] = self._response_id
            self.repairs["response-identity"] += 1
            return encode_event(name, body)
        return raw

    def _same_item(self, raw: bytes, name: bytes, body: dict[str, Any]) -> bytes:
        """An item's delta or part event: its ``item_id`` made the item's."""
        index = body.get("output_index")
        item = self._items.get(index) if type(index) is int else None
        item_id = body.get("item_id")
        if item is None or item.id is None or item_id == item.id or "item_id" not in body:
            return raw
        if named(item_id):
            self._by_id.setdefault(item_id, index)  # type: ignore[arg-type]
        item.rotated = True
        body["item_id"] = item.id
        self.repairs["item-identity"] += 1
        return encode_event(name, body)

    def _added(self, raw: bytes, name: bytes, body: dict[str, Any]) -> None:
        index = body.get("output_index")
        given = body.get("item")
        if type(index) is not int or type(given) is not dict:
            self._emit(raw)
            return
        known = self._items.get(index)
        if known is not None and known.other(given):  # two items at one index: the library refuses it (0070)
            self._end_with(Failure(Code.MALFORMED_RESPONSE, f"two output items at output_index {index}"))
            return
        if known is not None:  # the SDK raises on a second added for an index: the first item stays
            if known.held is not None and known.held.raw is None:
                self._fill_in(known, given)
            self.repairs["item-restarted"] += 1
            return
        item = self._items[index] = OutputItem(given)
        first = self._done_first.pop(index, None)
        if first is not None and not item.other(first):  # its .done came first: read as the library reads it
            item.finish_with(first)
            if not item.identified:
                item.fill_in(first)
                if item.identified and item.conform(given):
                    self.repairs["tool-call-identity"] += 1
                    raw = encode_event(name, body)
        if item.id is not None:
            self._by_id[item.id] = index
            self._latest = b'"' + item.id.encode() + b'"'
        if not item.identified:
            item.held = Held(index, name, body)
            self._hold(item.held)
            return
        if item.call is not None:
            self._said = True
        self._emit(raw)

    def _fill_in(self, item: OutputItem, given: dict[str, Any]) -> None:
        item.fill_in(given)
        held = item.held
        if held is not None and held.raw is None and item.identified:
            item.conform(held.body["item"])
            self.repairs["tool-call-identity"] += 1
            self._resolve(held, encode_event(held.name, held.body))

    def _done(self, raw: bytes, name: bytes, body: dict[str, Any]) -> None:
        index = body.get("output_index")
        given = body.get("item")
        if type(given) is dict and type(index) is not int and named(given.get("id")):
            index = self._by_id.get(given["id"])
        item = self._items.get(index) if type(index) is int else None
        if item is None or type(given) is not dict:
            if type(given) is dict and type(index) is int:
                self._done_first[index] = given
            self._emit(raw)
            return
        if named(given.get("id")):
            self._by_id.setdefault(given["id"], index)  # type: ignore[arg-type]
            item.rotated = item.rotated or (item.id is not None and given["id"] != item.id)
        if item.held is not None and item.held.raw is None:
            self._fill_in(item, given)
            if item.held.raw is None:
                self._end_with(never_identified(item))
                return
        item.finish_with(given)
        if item.conform(given):
            self.repairs["item-identity"] += 1
            raw = encode_event(name, body)
        self._emit(raw)

    def _terminal(self, raw: bytes, name: bytes, body: dict[str, Any], kind: str) -> None:
        failure = unread_call(self._items) or self._strict_failure()
        if failure is not None:
            self._end_with(failure)
            return
        changed = self._same_response(raw, name, body) is not raw
        response = body.get("response")
        output = response.get("output") if type(response) is dict else None
        for position, given in enumerate(output if type(output) is list else ()):
            if type(given) is not dict:
                continue
            index = self._by_id.get(given["id"]) if named(given.get("id")) else None  # an object id is no key
            if index is None:
                index = next((i for i, item in self._items.items() if item.call_id is not None
                              and item.call_id == given.get("call_id") and item.kind == given.get("type")), None)
            if index is None and position in self._items and self._items[position].rotated:
                index = position  # an upstream that rotates ids: the item at its place
            item = self._items.get(index) if index is not None else None
            if item is not None and item.conform(given):
                self.repairs["item-identity"] += 1
                changed = True
        self._emit(encode_event(name, body) if changed else raw)
        self._end(finish_of(kind, response, self._items))

    # -- the end --------------------------------------------------------------------------------------------------

    def _after_end(self, raw: bytes) -> None:
        if event_parts(raw)[1] == b"[DONE]":
            self._out.append(raw)

    def _on_cut(self) -> None:
        self._end_with(Failure(Code.STREAM_CLOSED, "Responses stream ended before its terminal event"))

    def _error_event(self, failure: Failure) -> bytes:
        error = _error(failure)
        body = {"type": "error", "code": failure.code, "message": error["message"], "param": None, "error": error}
        return b"event: error\ndata: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"
