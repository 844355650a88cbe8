"""An independent, naive reading of an SSE input for the fuzz oracle (``scripts/fuzz.py``): what the input itself
says about tool-call ids and usage, to hold the pipeline's output against.

It reimplements only the WHATWG framing (LF / CR / CRLF, a leading BOM, ``data:`` lines joined by ``\\n``, a blank
line dispatching) and ``json.loads`` of each payload (read as UTF-8, keeping a byte that is not: the parsers skip a
field they do not read without checking its bytes), up to the point where the format says the response ends
(``[DONE]`` for chat, ``message_stop`` for Messages, the terminal ``response.*`` event for Responses). The checks are
applied only to a response that finished successfully, where the parser read that far:

- ``claimed_twice``: ids claimed by two different calls (two wire indexes of choice 0 in chat, two ``tool_use``
  blocks in Messages, two ``function_call`` items in Responses). Two calls claiming one id are refused
  (``MALFORMED_TOOL_CALL``), never merged: a successful finish with such an id is a failure of the oracle.
- ``last_prompt_count`` (chat): the prompt count the merged usage must keep: the last valid count, a later
  placeholder ``0`` or an invalid count never replacing a valid one (docs/decisions/0012-usage-merge.md).
- ``last_counts`` (Messages): each count the merged usage must keep (input, output, cache reads and writes): the
  last valid one sent, whatever comes after it (``null``, a string, a negative or fractional count); (Responses)
  the terminal event's valid output count.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

__all__ = ["OracleFailure", "check_reference", "claimed_twice", "count", "ensure", "last_counts", "last_prompt_count",
           "payloads"]

_MAX_COUNT = 2**63 - 1
_MAX_SAFE = 2**53 - 1
_TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


def payloads(data: bytes, unterminated: bool = False) -> Iterator[Any]:
    """The JSON value of each dispatched event (``"[DONE]"`` as the string), in order; a payload that is not JSON
    ends the reading (the parsers halt there). ``unterminated``: the last event without its blank line (its open
    ``data:`` line included) is read too when it is whole JSON, as a parser reading it at the end of the bytes does
    (``SseFraming.read_unterminated``)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = text.split(b"\n")
    open_line = lines.pop()  # the last, unterminated line never dispatches
    collected: list[bytes] = []
    for line in lines:
        if not line:
            if collected:
                payload = b"\n".join(collected)
                collected = []
                if payload == b"[DONE]":
                    yield "[DONE]"
                    continue
                try:  # a byte that is not UTF-8 kept (as a surrogate): msgspec skips a field no parser reads unchecked
                    value = json.loads(payload.decode("utf-8", "surrogateescape"))
                except (ValueError, RecursionError):
                    return
                yield value
            continue
        field, _, value = line.partition(b":")
        if field == b"data":
            collected.append(value[1:] if value[:1] == b" " else value)
    if open_line[:5] == b"data:":
        collected.append(open_line[6:] if open_line[5:6] == b" " else open_line[5:])
    if unterminated and collected:
        try:  # checked whole, as msgspec checks it: UTF-8 throughout, no NaN or Infinity
            value = json.loads(b"\n".join(collected).decode("utf-8"), parse_constant=_no_constant)
        except (ValueError, RecursionError):
            return
        yield value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _valid_id(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _chat_claims(data: bytes) -> Iterator[tuple[str, object]]:
    for payload in payloads(data):
        if payload == "[DONE]":
            return
        choices = payload.get("choices") if isinstance(payload, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index") not in (0, None):
                continue
            delta = choice.get("delta")
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict) and type(call.get("index")) is int and _valid_id(call.get("id")):
                    yield call["id"], call["index"]


def _messages_claims(data: bytes) -> Iterator[tuple[str, object]]:
    for payload in payloads(data):
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind == "message_stop":
            return
        block = payload.get("content_block") if kind == "content_block_start" else None
        index = payload.get("index") if isinstance(payload, dict) else None
        if isinstance(block, dict) and block.get("type") == "tool_use" and _valid_id(block.get("id")) and (
            type(index) is int
        ):
            yield block["id"], index


def _responses_claims(data: bytes) -> Iterator[tuple[str, object]]:
    """A function_call item's place is its ``output_index``, else the place its item ``id`` was first seen at, else
    the next place after the highest one (as the parser correlates)."""
    by_item_id: dict[object, object] = {}
    places: set[int] = set()
    for payload in payloads(data):
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind in _TERMINAL:
            return
        index = payload.get("output_index") if isinstance(payload, dict) else None
        opens = kind == "response.function_call_arguments.done" or (
            kind == "response.function_call_arguments.delta" and bool(payload.get("delta"))
        )
        if opens and type(index) is int:  # arguments before their item open the call there
            places.add(index)
        item = payload.get("item") if kind in ("response.output_item.added", "response.output_item.done") else None
        if not isinstance(item, dict) or item.get("type") != "function_call":
            continue
        place = index
        item_id = item.get("id") if _valid_id(item.get("id")) else None
        if place is None:
            place = by_item_id[item_id] if item_id in by_item_id else max(places, default=-1) + 1
        if type(place) is int:
            places.add(place)
        if item_id is not None:
            by_item_id.setdefault(item_id, place)
        if _valid_id(item.get("call_id")):
            yield item["call_id"], place


_CLAIMS = {"chat": _chat_claims, "messages": _messages_claims, "responses": _responses_claims}


def claimed_twice(data: bytes, format: str) -> set[str]:
    """The ids two different calls of the input claim (by wire index, block index or output index)."""
    owners: dict[str, set[str]] = {}
    for call_id, where in _CLAIMS[format](data):
        owners.setdefault(call_id, set()).add(json.dumps(where))
    return {call_id for call_id, places in owners.items() if len(places) > 1}


def count(value: object) -> int | None:
    """A valid token count as the library reads one (``operators/_usage.py``), else None."""
    if type(value) is int and 0 <= value <= _MAX_COUNT:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer() and 0 <= value <= _MAX_SAFE:
        return int(value)
    return None


def last_prompt_count(data: bytes) -> int | None:
    """The prompt count a chat response's merged usage keeps (None: no valid one was sent)."""
    kept: int | None = None
    for payload in payloads(data):
        if payload == "[DONE]":
            break
        if not isinstance(payload, dict):
            continue
        usage = payload.get("usage")
        if usage is None and isinstance(payload.get("x_groq"), dict):
            usage = payload["x_groq"].get("usage")
        if not isinstance(usage, dict):
            continue
        valid = count(usage.get("prompt_tokens"))
        if valid is not None and not (valid == 0 and kept):
            kept = valid
    return kept


def _messages_usages(data: bytes) -> Iterator[dict[str, Any]]:
    """The usage objects of a Messages response, in order: ``message_start``'s message, then each
    ``message_delta``, up to ``message_stop`` (a start with another message id ends the reading, the parser halts
    there; one with the same id is ignored)."""
    started: list[object] = []
    for payload in payloads(data):
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "message_stop":
            return
        if kind == "message_start":
            message = payload.get("message")
            given = message.get("id") if isinstance(message, dict) else None
            if started and started[0] != given:
                return  # another message: the parser halts (decision 0044)
            if started:
                continue  # the same message started again: ignored, its usage too
            started.append(given)
            usage = message.get("usage") if isinstance(message, dict) else None
        elif kind == "message_delta":
            usage = payload.get("usage")
        else:
            continue
        if isinstance(usage, dict):
            yield usage


def last_counts(data: bytes, format: str) -> dict[str, int]:
    """The counts the output's usage must keep, by ``Usage`` field, for the formats whose usage is merged across
    events (Messages: ``message_start`` then each ``message_delta``): each field's last valid count sent, a later
    ``null``, string, negative or fractional value never replacing it (issue 21). Responses sends one usage object,
    in its terminal event: its valid output count is kept. Chat: ``last_prompt_count``."""
    if format == "responses":
        return _terminal_counts(data)
    if format != "messages":
        return {}
    kept: dict[str, int] = {}
    fields = {"output_tokens": "output_tokens", "input_tokens": "input_tokens",
              "cache_read_input_tokens": "cache_read_tokens", "cache_creation_input_tokens": "cache_write_tokens"}
    for usage in _messages_usages(data):
        for wire, field in fields.items():
            valid = count(usage.get(wire))
            if valid is not None:
                kept[field] = valid
    return kept


def _terminal_counts(data: bytes) -> dict[str, int]:
    """The valid ``output_tokens`` of the first terminal Responses event (the parser stops there)."""
    for payload in payloads(data):
        if isinstance(payload, dict) and payload.get("type") in _TERMINAL:
            response = payload.get("response")
            usage = response.get("usage") if isinstance(response, dict) else None
            valid = count(usage.get("output_tokens")) if isinstance(usage, dict) else None
            return {} if valid is None else {"output_tokens": valid}
    return {}


class OracleFailure(AssertionError):
    """What the oracle found wrong with one input."""


def ensure(condition: bool, what: str) -> None:
    if not condition:
        raise OracleFailure(what)


def check_reference(data: bytes, out: list[Any], format: str) -> None:
    """The output against what the input says, for a response that finished successfully: no id two calls claim is
    assembled (they are refused, never merged), and (chat) the usage keeps the last valid prompt count."""
    finish = out[-1] if out else None
    reason = getattr(finish, "reason", None)
    if reason is None or reason.failure is not None:
        return
    shared = claimed_twice(data, format)
    ensure(not shared, f"two calls claimed the id(s) {sorted(shared)[:3]} and the response still succeeded")
    if format != "chat":
        _check_counts(data, out, format)
        return
    prompt = last_prompt_count(data)
    if prompt is None:
        return
    usages = [chunk.usage for chunk in out if type(chunk).__name__ == "UsageChunk"]
    ensure(bool(usages), f"a valid prompt count {prompt} was sent and no usage came out")
    usage = usages[-1]
    kept = (usage.input_tokens or 0) + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    ensure(kept == prompt, f"the usage keeps a prompt count of {kept}, not the last valid one sent ({prompt})")


def _check_counts(data: bytes, out: list[Any], format: str) -> None:
    kept = last_counts(data, format)
    if not kept:
        return
    usages = [chunk.usage for chunk in out if type(chunk).__name__ == "UsageChunk"]
    ensure(bool(usages), f"valid counts {kept} were sent and no usage came out")
    for field, count in kept.items():
        got = getattr(usages[-1], field)
        ensure(got == count, f"the usage keeps {field}={got!r}, not the last valid count sent ({count})")
