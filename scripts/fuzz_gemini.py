"""The ``gemini`` fuzz target's own parts (``scripts/fuzz.py``): the tokens its built-in loop inserts, and its naive
reading of the input (the other formats' is ``fuzz_reference.py``, whose WHATWG framing and ``json.loads`` this
shares): what the input itself says about call ids and usage, held against the pipeline's output for a response that
finished successfully.

- ``wire_ids``: the non-empty string ``id`` of every ``functionCall`` part of candidate 0 (``index`` absent, null or
  0) read before the first event with candidate 0's ``finishReason`` (that event's parts included; later events are
  read for their usage only). Decision 0071: a part with the open call's id continues it, a part with an ended call's
  id is ignored, a named part with a new id is a new call, a part without a name that continues nothing fails the
  response. So in a successful response every such id is one call's, and every other call's id is one the library made
  (``gemini-made-<n>``).
- ``last_counts``: each ``usageMetadata`` count's last valid value (a later ``null``, string, negative or fractional
  value never replacing it), over every event up to ``[DONE]`` or the end, mapped as decision 0071 maps them: input =
  prompt - cached (the cached count dropped when it exceeds the prompt), output = candidates + thoughts, reasoning =
  thoughts, cache reads = cached.

Both read a last event without its blank line when it is whole JSON, as the Gemini parser does.
"""

from __future__ import annotations

from typing import Any

from operators import BlockEnd, Code, ToolCallBlock, UsageChunk
from scripts.fuzz_reference import count, ensure, payloads
from scripts.fuzz_runner import TOKENS

__all__ = ["GEMINI_TOKENS", "MADE_ID_PREFIX", "check_gemini_reference", "last_counts", "wire_ids"]

MADE_ID_PREFIX = "gemini-made-"
GEMINI_TOKENS = [
    *TOKENS,
    b"\r\n\r\n",
    b'"candidates":[{"content":{"parts":[',
    b'{"text":"x"}',
    b'{"text":"t","thought":true}',
    b'"thoughtSignature":"s"',
    b'{"functionCall":{"name":"f","args":{}}}',
    b'"functionCall":{"id":"c","name":"f"}',
    b'"name":null',
    b'"willContinue":true',
    b'"partialArgs":[{"jsonPath":"$.a","stringValue":"x","willContinue":true}]',
    b'"finishReason":"STOP"',
    b'"finishReason":"MAX_TOKENS"',
    b'"finishReason":"SAFETY"',
    b'"promptFeedback":{"blockReason":"SAFETY"}',
    b'"index":1',
    b'"inlineData":{"data":"AA=="}',
    b'"usageMetadata":{"promptTokenCount":5,"cachedContentTokenCount":9}',
    b'"candidatesTokenCount":-1',
    b'"thoughtsTokenCount":"7"',
    b'"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}',
    b'"gemini-made-0"',
]
"""What the built-in loop inserts for the ``gemini`` target: the SSE tokens and Gemini's own keys and values."""
_COUNTS = ("promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount")


def _candidates(payload: object) -> list[dict[str, Any]]:
    found = payload.get("candidates") if isinstance(payload, dict) else None
    return [c for c in found if isinstance(c, dict) and c.get("index") in (0, None)] if isinstance(found, list) else []


def wire_ids(data: bytes) -> set[str]:
    """The ids candidate 0's ``functionCall`` parts give, up to (and in) the event of its ``finishReason``."""
    ids: set[str] = set()
    for payload in payloads(data, unterminated=True):
        if payload == "[DONE]":
            break
        finished = False
        for candidate in _candidates(payload):
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else []:
                call = part.get("functionCall") if isinstance(part, dict) else None
                given = call.get("id") if isinstance(call, dict) else None
                if isinstance(given, str) and given:
                    ids.add(given)
            finished = finished or candidate.get("finishReason") is not None
        if finished:
            break
    return ids


def last_counts(data: bytes) -> dict[str, int]:
    """The counts the output's usage must keep, by ``Usage`` field."""
    kept: dict[str, int] = {}
    for payload in payloads(data, unterminated=True):
        if payload == "[DONE]":
            break
        usage = payload.get("usageMetadata") if isinstance(payload, dict) else None
        if not isinstance(usage, dict):
            continue
        for key in _COUNTS:
            value = count(usage.get(key))
            if value is not None:
                kept[key] = value
    prompt, cached = kept.get("promptTokenCount"), kept.get("cachedContentTokenCount")
    candidates, thoughts = kept.get("candidatesTokenCount"), kept.get("thoughtsTokenCount")
    if prompt is not None and cached is not None and cached > prompt:
        cached = None  # the uncached input would be negative: the cache count is dropped
    output = None if candidates is None and thoughts is None else count((candidates or 0) + (thoughts or 0))
    fields = {
        "input_tokens": None if prompt is None else prompt - (cached or 0),
        "cache_read_tokens": cached,
        "reasoning_tokens": thoughts,
        "output_tokens": output,
    }
    return {field: value for field, value in fields.items() if value is not None}


def check_gemini_reference(data: bytes, out: list[Any], format: str = "gemini") -> None:
    """The output of a successful Gemini response against the input: every call id the wire gave is one call's, every
    other call's id is a made one, and each usage count is the last valid one sent. A response cut before its finish
    (``STREAM_CLOSED``: the parser read every event) keeps the counts too: usage precedes every finish."""
    finish = out[-1] if out else None
    reason = getattr(finish, "reason", None)
    if reason is None or (reason.failure is not None and reason.failure.code != Code.STREAM_CLOSED):
        return
    if reason.failure is None:
        _check_ids(data, out)
    kept = last_counts(data)
    if not kept:
        return
    usages = [chunk.usage for chunk in out if isinstance(chunk, UsageChunk)]
    ensure(bool(usages), f"valid counts {kept} were sent and no usage came out")
    for field, value in kept.items():
        got = getattr(usages[-1], field)
        ensure(got == value, f"the usage keeps {field}={got!r}, not the last valid count sent ({value})")


def _check_ids(data: bytes, out: list[Any]) -> None:
    ids = [chunk.block.id for chunk in out if isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock)]
    given = wire_ids(data)
    lost = given - set(ids)
    ensure(not lost, f"the wire gave the call id(s) {sorted(lost)[:3]} and no call has them")
    made = [call_id for call_id in ids if call_id not in given]
    ensure(all(call_id.startswith(MADE_ID_PREFIX) for call_id in made), f"a call id no one sent: {made[:3]}")
