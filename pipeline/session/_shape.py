"""From decoded JSON to a typed event: the envelope, then msgspec's tagged-union decoding of ``data``.

The types in ``_events`` are the shape rules. This module only checks the envelope (``v``, ``seq``, ``type``,
``data``) and words msgspec's complaint as the rule it broke, naming the field and the value found: "tool/call must
have a non-empty string call_id, got ''" rather than "Expected `str` of length >= 1 - at `$.call_id`".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, TypeGuard

import msgspec

from ._errors import SessionValidationError
from ._events import EVENT_TYPES, FORMAT_VERSION, AnyEvent, SessionEvent

__all__ = ["decode_event", "fail", "is_int", "seq_of"]

_GENERIC = ("Expected ", "Object missing required field", "Invalid value", "Invalid enum value")
_MISSING = re.compile(r"Object missing required field `([^`]+)`")
_STEP_EVENTS = ("assistant/message", "assistant/attempt", "llm/retry", "tool/call", "tool/result", "step/end")


def fail(subject: str, text: str) -> NoReturn:
    raise SessionValidationError(f"{subject}: {text}")


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def seq_of(value: object) -> int | None:
    seq = value.get("seq") if isinstance(value, Mapping) else None
    return seq if is_int(seq) else None


def decode_event(value: object, *, subject: str) -> SessionEvent:
    """The typed event ``value`` (a decoded log line) holds; ``SessionValidationError`` naming the first fault."""
    if not isinstance(value, Mapping):
        raise SessionValidationError(f"{subject} is not an object")
    version = value.get("v")
    if not is_int(version) or version != FORMAT_VERSION:
        fail(subject, f"unsupported format version {version!r} (expected {FORMAT_VERSION})")
    seq = value.get("seq")
    if not is_int(seq):
        fail(subject, f"seq must be an integer, got {seq!r}")
    event_type = value.get("type")
    if event_type not in EVENT_TYPES:
        fail(subject, f"unknown event type {event_type!r}")
    data = value.get("data")
    if not isinstance(data, Mapping):
        fail(subject, "data is not an object")
    try:
        event: SessionEvent = msgspec.convert({**data, "type": event_type, "seq": seq}, AnyEvent, strict=True)
    except msgspec.ValidationError as exc:
        raise SessionValidationError(_explain(event_type, str(exc), data, subject)) from None
    return event


def _explain(event_type: str, error: str, data: Mapping[str, Any], subject: str) -> str:
    detail, _, where = error.partition(" - at `$")
    path: list[str | int] = [
        int(part[1:-1]) if part.startswith("[") else part.lstrip(".")
        for part in re.findall(r"\.[^.\[`]+|\[\d+\]", where)
    ]
    missing = _MISSING.match(detail)
    if missing:
        path.append(missing.group(1))
    if not detail.startswith(_GENERIC):
        return f"{subject}: {detail}"  # a rule a type states itself (``__post_init__``), already worded
    if event_type == "user/message":
        return _explain_message(event_type, path, data, subject, detail)
    if path and path[0] == "message":
        return _explain_message(event_type, path[1:], data.get("message"), subject, detail)
    field = path[0] if path else ""
    value = _at(data, path[:1])
    if field in ("turn", "step") and (field == "turn" or event_type in _STEP_EVENTS):
        return f"{subject}: {event_type} has invalid {field} {value!r} (expected a non-negative integer)"
    if event_type == "tool/call":
        if field == "arguments":
            return f"{subject}: tool/call arguments must be a string, got {value!r}"
        return f"{subject}: tool/call must have a non-empty string {field}, got {value!r}"
    if field == "failure":
        return f"{subject}: {event_type} has invalid failure{_why(detail, path)}"
    if field in ("attempt", "retry"):
        return f"{subject}: {event_type} has invalid {field} {value!r} (expected an integer from 1)"
    if field == "stream":
        if len(path) == 1:
            return f"{subject}: assistant/attempt has invalid stream (expected a list of chunks)"
        return f"{subject}: assistant/attempt has invalid stream: chunk {path[1]} is not a chunk (not an object)"
    if field == "reason":
        return (
            f"{subject}: turn/end has invalid reason (expected a kind of stop, error, aborted or max-steps, "
            f"with a failure exactly for error and aborted){_why(detail, path)}"
        )
    if field in ("max_retries", "delay_ms"):
        return f"{subject}: {event_type} has invalid {field} {value!r}"
    return f"{subject}: {event_type} has invalid data{_why(detail, path)}"


def _explain_message(event_type: str, path: Sequence[str | int], message: object, subject: str, detail: str) -> str:
    field = path[0] if path else "id"
    if field == "id":
        return f"{subject} lacks an identified message"
    if field == "role":
        return f'{subject}: message must have role "{"assistant" if event_type == "assistant/message" else "user"}"'
    if field == "source":
        source = _at(message, ["source"])
        kind = source.get("kind") if isinstance(source, Mapping) else None
        if event_type == "user/message" or not (isinstance(kind, str) and kind):
            return f"{subject}: message has invalid source"
        return f"{subject}: message must have {'model' if event_type == 'assistant/message' else 'tool'} source"
    if field == "usage":
        return f"{subject}: message has invalid usage{_why(detail, path)}"
    if field == "finish":
        return f"{subject}: message has invalid finish{_why(detail, path)}"
    if field != "content":
        return f"{subject}: message has invalid {field}"
    if event_type == "tool/result":
        return f"{subject}: message must contain one tool-result block"
    if len(path) == 1:
        return f"{subject}: message has invalid content"
    index = path[1]
    if event_type == "user/message":
        return f"{subject}: message has invalid content: content[{index}] is not a text block"
    part = _at(message, path[:2])
    kind = part.get("type") if isinstance(part, Mapping) else None
    inner = path[2] if len(path) > 2 else None
    where = f"{subject}: message has invalid content: "
    if kind == "tool-call" and inner in ("id", "name", "kind"):
        got = _at(message, path[:3])
        return f"{where}the tool call at content[{index}] must have a non-empty string {inner}, got {got!r}"
    if kind == "tool-call" and inner == "signature":
        got = _at(message, path[:3])
        return (f"{where}the tool call at content[{index}] must have a non-empty string signature or none, "
                f"got {got!r:.40}")
    if kind == "tool-call" and inner == "arguments":
        return f"{where}the tool call at content[{index}] has no string arguments"
    if kind == "reasoning" and inner in ("signature", "encrypted", "item_id"):
        got = _at(message, path[:3])
        return (f"{where}the reasoning block at content[{index}] must have a non-empty string {inner} or none, "
                f"got {got!r:.40}")
    if kind in ("text", "reasoning") and inner == "text":
        return f"{where}content[{index}] has no string text"
    return f"{where}content[{index}] is not a text, reasoning or tool-call block"


def _at(value: object, path: Sequence[str | int]) -> Any:
    """What the decoded JSON holds at ``path``; None where it holds nothing."""
    for step in path:
        if isinstance(step, str) and isinstance(value, Mapping):
            value = value.get(step)
        elif isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        else:
            return None
    return value


def _why(detail: str, path: Sequence[str | int]) -> str:
    """msgspec's own words, for the rules whose message does not say what was found."""
    return f" ({detail.rstrip('.')} at {'.'.join(str(step) for step in path)})"
