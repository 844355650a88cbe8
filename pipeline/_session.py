"""The session log: the durable boundary between one turn and the next.

A session is an append-only JSON Lines file, one event per line, written compactly with the keys in this order:

    {"v":1,"seq":<1, 2, 3, ...>,"type":<event type>,"data":{...}}

    user/message        data = the message {"id", "role":"user", "source":{"kind":"user"}, "content":[text blocks]}
    assistant/message   {"turn", "step", "message":{"id", "role":"assistant", "source":{"kind":"model", "provider",
                        "model"}, "content":[text | reasoning | tool-call blocks], "usage", "finish"}}
    assistant/attempt   {"turn", "step", "attempt", "stream":[chunk json], "failure"}   kept, never replayed
    llm/retry           {"turn", "step", "retry", "max_retries", "delay_ms", "failure"}
    tool/call           {"turn", "step", "call_id", "name", "arguments"}   after that step's assistant/message
    tool/result         {"turn", "step", "message":{"id", "role":"user", "source":{"kind":"tool", "call_id"},
                        "content":[{"type":"tool-result", "tool_call_id", "content":[text blocks], "is_error"}]}}
    step/end            {"turn", "step"}
    turn/end            {"turn", "reason":{"kind":"stop"|"error"|"aborted"|"max-steps", ["failure"]}}

One function, ``validate_event``, decides whether an event may join a session. It runs on every append (write
path), on ``seed`` and on every load (read path). An event that could not be loaded back is therefore never
written: a tool call with an empty id is refused at the append, not discovered when the session is reopened.

Errors:

    SessionError
    ├── SessionValidationError ... an event breaks a rule; ``reason`` is the rule's message
    ├── SessionWriteError ........ an append was refused or the write failed; nothing was recorded
    ├── SessionCorruptionError ... a stored event breaks a rule: the log cannot be loaded (``line``, ``seq``,
    │                              ``reason``); ``check()`` lists every fault, ``repair()`` quarantines them
    └── SessionLockedError ....... another writer holds the log

Durability: each append is a single ``os.write`` of one whole line on an ``O_APPEND`` descriptor, followed by
``os.fsync``. A crash can leave only the last line incomplete; ``Session.open`` reports it
(``SessionTornTailWarning``, ``recovered_torn_tail``) and truncates it away, never losing a complete line.
One writer at a time: ``Session.open`` holds ``fcntl.flock`` on a sibling ``<log>.lock`` file (a sibling, not the
log itself, so that ``repair``'s atomic replace of the log cannot sidestep the lock).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import tempfile
import threading
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, NoReturn, Protocol, TypeAlias, TypeGuard, runtime_checkable

import attrs

from operators import Code
from operators._chunks import chunk_from_json

__all__ = [
    "EVENT_TYPES",
    "INTERRUPTED_TOOL_RESULT",
    "NOT_RUN_TOOL_RESULT",
    "RepairReport",
    "Session",
    "SessionCorruptionError",
    "SessionError",
    "SessionEvent",
    "SessionLockedError",
    "SessionState",
    "SessionTornTailWarning",
    "SessionValidationError",
    "SessionWriteError",
    "StepState",
    "SupportsToJson",
    "adopt_event",
    "check",
    "repair",
    "validate_event",
]

USER_MESSAGE: Final = "user/message"
ASSISTANT_MESSAGE: Final = "assistant/message"
ASSISTANT_ATTEMPT: Final = "assistant/attempt"
LLM_RETRY: Final = "llm/retry"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
STEP_END: Final = "step/end"
TURN_END: Final = "turn/end"

EVENT_TYPES: Final = frozenset(
    {USER_MESSAGE, ASSISTANT_MESSAGE, ASSISTANT_ATTEMPT, LLM_RETRY, TOOL_CALL, TOOL_RESULT, STEP_END, TURN_END}
)

INTERRUPTED_TOOL_RESULT: Final = "interrupted: the tool result was not recorded"
"""The text of the error result ``Session.recover`` records for a tool call whose result never reached the log."""

NOT_RUN_TOOL_RESULT: Final = "not run: the tool call was not executed"
"""What ``Session.messages`` answers, in the replay only, for a tool call of a closed step that was never run."""

_FORMAT_VERSION: Final = 1
_FINISH_KINDS: Final = frozenset({"stop", "tool-calls", "max-tokens", "aborted", "error"})
_TURN_END_KINDS: Final = frozenset({"stop", "error", "aborted", "max-steps"})
_KINDS_WITH_FAILURE: Final = frozenset({"error", "aborted"})
_FILE_MODE: Final = 0o600

JsonObject: TypeAlias = dict[str, Any]


@runtime_checkable
class SupportsToJson(Protocol):
    """A protocol value (``TextBlock``, ``ToolCallBlock``, ``Usage``, ``FinishReason``, ``Failure``, a chunk)."""

    def to_json(self) -> dict[str, Any]: ...


JsonLike: TypeAlias = Mapping[str, Any] | SupportsToJson


# -- errors -------------------------------------------------------------------------------------------------------


class SessionError(Exception):
    """Base class of every session log error."""


class SessionValidationError(SessionError):
    """An event breaks a session rule. ``reason`` is the full message, prefixed by the event's subject."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionWriteError(SessionError):
    """An append was refused (the event breaks a rule) or the write failed. Nothing was recorded."""


class SessionCorruptionError(SessionError):
    """A stored event breaks a session rule, so the log cannot be loaded."""

    def __init__(self, path: Path, line: int, seq: int | None, reason: str) -> None:
        seq_text = "unknown" if seq is None else str(seq)
        super().__init__(
            f"{path}: line {line}, seq {seq_text}: {reason}. The session cannot be loaded; "
            "check() lists every fault and repair() moves the broken turns to a quarantine file."
        )
        self.path = path
        self.line = line
        self.seq = seq
        self.reason = reason


class SessionLockedError(SessionError):
    """Another writer holds the session log."""


class SessionTornTailWarning(UserWarning):
    """The log's last line is incomplete (a write interrupted by a crash); it was ignored."""


# -- events and validation state ----------------------------------------------------------------------------------


@attrs.frozen
class SessionEvent:
    """One adopted event. ``data`` is exactly what the log holds (decoded JSON)."""

    seq: int
    type: str
    data: Mapping[str, Any]

    def to_json(self) -> JsonObject:
        return {"v": _FORMAT_VERSION, "seq": self.seq, "type": self.type, "data": self.data}


@attrs.frozen
class StepState:
    """What the rules need to know about the open step."""

    number: int
    committed: bool = False
    """Its ``assistant/message`` is recorded."""
    blocks: tuple[tuple[str, str], ...] = ()
    """``(id, name)`` of the tool-call blocks of its ``assistant/message``."""
    calls: tuple[str, ...] = ()
    """Recorded ``tool/call`` ids, in order."""
    results: frozenset[str] = frozenset()
    """Call ids whose ``tool/result`` is recorded."""

    def unresolved(self) -> list[str]:
        return [call_id for call_id in self.calls if call_id not in self.results]


@attrs.frozen
class SessionState:
    """Everything ``validate_event`` needs from the events before: immutable, updated by ``adopt_event``.

    Only one turn is open at a time and only one step of it, so closed turns and steps leave no state behind
    but their numbers.
    """

    last_seq: int = 0
    last_turn: int | None = None
    turn_open: bool = False
    last_step: int | None = None
    """The last step seen in the open turn."""
    step: StepState | None = None
    """The open step of the open turn."""

    @property
    def open_turn(self) -> int | None:
        return self.last_turn if self.turn_open else None


def validate_event(event: Mapping[str, Any], state: SessionState, *, subject: str) -> None:
    """Raises ``SessionValidationError`` unless ``event`` may follow the events that produced ``state``.

    ``subject`` names the event in the message: ``session event at seq N`` on append and load,
    ``seed <type> at index i`` when seeding. Checks run in this order: the envelope (``v``, ``seq``, ``type``,
    ``data``), the payload's shape (the message rules included), then its relations to the earlier events.
    """
    _check_shape(event, subject)
    seq = event["seq"]
    if seq != state.last_seq + 1:
        _fail(subject, f"seq {seq} does not follow seq {state.last_seq} (expected {state.last_seq + 1})")
    _check_relations(event["type"], event["data"], state, subject)


def adopt_event(event: Mapping[str, Any], state: SessionState, *, subject: str) -> SessionState:
    """``validate_event``, then the state after ``event``."""
    validate_event(event, state, subject=subject)
    return _apply(event["type"], event["data"], state)


def _fail(subject: str, text: str) -> NoReturn:
    raise SessionValidationError(f"{subject}: {text}")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""


def _check_shape(event: object, subject: str) -> None:
    if not isinstance(event, Mapping):
        raise SessionValidationError(f"{subject} is not an object")
    version = event.get("v")
    if not _is_int(version) or version != _FORMAT_VERSION:
        _fail(subject, f"unsupported format version {version!r} (expected {_FORMAT_VERSION})")
    if not _is_int(event.get("seq")):
        _fail(subject, f"seq must be an integer, got {event.get('seq')!r}")
    event_type = event.get("type")
    if event_type not in EVENT_TYPES:
        _fail(subject, f"unknown event type {event_type!r}")
    data = event.get("data")
    if not isinstance(data, Mapping):
        _fail(subject, "data is not an object")
    _check_payload(event_type, data, subject)


def _check_payload(event_type: str, data: Mapping[str, Any], subject: str) -> None:
    if event_type == USER_MESSAGE:
        _check_message(data, event_type, subject)
        return
    _check_counter(data, "turn", event_type, subject)
    if event_type == TURN_END:
        if not _is_reason(data.get("reason"), _TURN_END_KINDS):
            _fail(
                subject,
                "turn/end has invalid reason (expected a kind of stop, error, aborted or max-steps, "
                "with a failure exactly for error and aborted)",
            )
        return
    _check_counter(data, "step", event_type, subject)
    if event_type in (ASSISTANT_MESSAGE, TOOL_RESULT):
        _check_message(data.get("message"), event_type, subject)
    elif event_type == TOOL_CALL:
        for field in ("call_id", "name"):
            if not _is_text(data.get(field)):
                _fail(subject, f"tool/call must have a non-empty string {field}, got {data.get(field)!r}")
        if not isinstance(data.get("arguments"), str):
            _fail(subject, f"tool/call arguments must be a string, got {data.get('arguments')!r}")
    elif event_type == ASSISTANT_ATTEMPT:
        _check_attempt(data, subject)
    elif event_type == LLM_RETRY:
        _check_retry(data, subject)


def _check_counter(data: Mapping[str, Any], field: str, event_type: str, subject: str) -> None:
    value = data.get(field)
    if not _is_int(value) or value < 0:
        _fail(subject, f"{event_type} has invalid {field} {value!r} (expected a non-negative integer)")


def _check_message(message: object, event_type: str, subject: str) -> None:
    """The anchor's message rules (P1), in its order."""
    if not isinstance(message, Mapping) or not _is_text(message.get("id")):
        raise SessionValidationError(f"{subject} lacks an identified message")
    role = "assistant" if event_type == ASSISTANT_MESSAGE else "user"
    if message.get("role") != role:
        _fail(subject, f'message must have role "{role}"')
    source = message.get("source")
    if not isinstance(source, Mapping) or not _is_text(source.get("kind")):
        _fail(subject, "message has invalid source")
    content = message.get("content")
    if not isinstance(content, list):
        _fail(subject, "message has invalid content")
    if event_type == ASSISTANT_MESSAGE:
        if source["kind"] != "model" or not _is_text(source.get("provider")) or not _is_text(source.get("model")):
            _fail(subject, "message must have model source")
        _check_assistant_content(content, subject)
        usage = message.get("usage")
        if usage is not None and not _is_usage(usage):
            _fail(subject, "message has invalid usage")
        if not _is_reason(message.get("finish"), _FINISH_KINDS):
            _fail(subject, "message has invalid finish")
    elif event_type == TOOL_RESULT:
        call_id = source.get("call_id")
        if source["kind"] != "tool" or not _is_text(call_id):
            _fail(subject, "message must have tool source")
        block = content[0] if len(content) == 1 else None
        if (
            not isinstance(block, Mapping)
            or block.get("type") != "tool-result"
            or not isinstance(block.get("content"), list)
            or not isinstance(block.get("is_error"), bool)
        ):
            _fail(subject, "message must contain one tool-result block")
        if block.get("tool_call_id") != call_id:
            _fail(subject, "message has mismatched tool call ids")
    else:
        for index, block in enumerate(content):
            if not isinstance(block, Mapping) or block.get("type") != "text" or not isinstance(block.get("text"), str):
                _fail(subject, f"message has invalid content: content[{index}] is not a text block")


def _check_assistant_content(content: list[Any], subject: str) -> None:
    seen: set[str] = set()
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in ("text", "reasoning"):
            if not isinstance(block.get("text"), str):
                _fail(subject, f"message has invalid content: content[{index}] has no string text")
        elif kind == "tool-call":
            for field in ("id", "name"):
                if not _is_text(block.get(field)):
                    _fail(
                        subject,
                        f"message has invalid content: the tool call at content[{index}] must have a non-empty "
                        f"string {field}, got {block.get(field)!r}",
                    )
            if not isinstance(block.get("arguments"), str):
                _fail(
                    subject, f"message has invalid content: the tool call at content[{index}] has no string arguments"
                )
            if block["id"] in seen:
                _fail(subject, f"message has invalid content: duplicate tool call id {block['id']}")
            seen.add(block["id"])
        else:
            _fail(subject, f"message has invalid content: content[{index}] is not a text, reasoning or tool-call block")


def _is_usage(value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    if not _is_number(value.get("input_tokens")) or not _is_number(value.get("output_tokens")):
        return False
    optional = ("total_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    return all(value.get(key) is None or _is_number(value.get(key)) for key in optional)


def _is_failure(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and _is_text(value.get("code"))
        and isinstance(value.get("message"), str)
        and (value.get("status") is None or _is_int(value.get("status")))
        and (value.get("retry_after_ms") is None or _is_number(value.get("retry_after_ms")))
        and (value.get("request_id") is None or isinstance(value.get("request_id"), str))
    )


def _is_reason(value: object, kinds: frozenset[str]) -> bool:
    if not isinstance(value, Mapping) or value.get("kind") not in kinds:
        return False
    if value["kind"] in _KINDS_WITH_FAILURE:
        return _is_failure(value.get("failure"))
    return value.get("failure") is None


def _check_attempt(data: Mapping[str, Any], subject: str) -> None:
    attempt = data.get("attempt")
    if not _is_int(attempt) or attempt < 1:
        _fail(subject, f"assistant/attempt has invalid attempt {attempt!r} (expected an integer from 1)")
    stream = data.get("stream")
    if not isinstance(stream, list):
        _fail(subject, "assistant/attempt has invalid stream (expected a list of chunks)")
    for index, chunk in enumerate(stream):
        try:
            if not isinstance(chunk, Mapping):
                raise ValueError("not an object")
            chunk_from_json(chunk)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            _fail(subject, f"assistant/attempt has invalid stream: chunk {index} is not a chunk ({exc})")
    if not _is_failure(data.get("failure")):
        _fail(subject, "assistant/attempt has invalid failure")


def _check_retry(data: Mapping[str, Any], subject: str) -> None:
    retry = data.get("retry")
    if not _is_int(retry) or retry < 1:
        _fail(subject, f"llm/retry has invalid retry {retry!r} (expected an integer from 1)")
    max_retries = data.get("max_retries")
    if max_retries is not None and (not _is_int(max_retries) or max_retries < 0):
        _fail(subject, f"llm/retry has invalid max_retries {max_retries!r}")
    delay_ms = data.get("delay_ms")
    if not _is_number(delay_ms) or delay_ms < 0:
        _fail(subject, f"llm/retry has invalid delay_ms {delay_ms!r}")
    if not _is_failure(data.get("failure")):
        _fail(subject, "llm/retry has invalid failure")


def _check_relations(event_type: str, data: Mapping[str, Any], state: SessionState, subject: str) -> None:
    if event_type == USER_MESSAGE:
        if state.step is not None:
            _fail(subject, f"user/message arrives while step {state.step.number} of turn {state.last_turn} is open")
        return
    turn: int = data["turn"]
    _check_turn(turn, state, subject)
    same_turn = state.turn_open and state.last_turn == turn
    if event_type == TURN_END:
        open_calls = state.step.unresolved() if same_turn and state.step is not None else []
        if open_calls:
            _fail(subject, f"turn/end leaves unresolved tool call {open_calls[0]}")
        return
    step = _check_step(turn, data["step"], state if same_turn else None, subject)
    where = f"turn {turn} step {step.number}"
    if event_type == ASSISTANT_MESSAGE:
        if step.committed:
            _fail(subject, f"assistant/message of {where} is already recorded")
    elif event_type == TOOL_CALL:
        call_id: str = data["call_id"]
        if not step.committed:
            _fail(subject, f"tool/call {call_id} has no assistant/message in {where}: a failed attempt calls no tools")
        names = dict(step.blocks)
        if call_id not in names:
            _fail(subject, f"tool/call {call_id} is not a tool call of the assistant/message of {where}")
        if data["name"] != names[call_id]:
            _fail(
                subject, f"tool/call {call_id} names {data['name']!r}; the assistant/message calls {names[call_id]!r}"
            )
        if call_id in step.calls:
            _fail(subject, f"tool/call {call_id} is already recorded in {where}")
    elif event_type == TOOL_RESULT:
        result_id: str = data["message"]["source"]["call_id"]
        if result_id not in step.calls:
            _fail(subject, f"tool result for unknown tool call {result_id}")
        if result_id in step.results:
            _fail(subject, f"tool result for tool call {result_id} is already recorded")
    elif event_type == STEP_END:
        open_calls = step.unresolved()
        if open_calls:
            _fail(subject, f"step/end leaves unresolved tool call {open_calls[0]}")


def _check_turn(turn: int, state: SessionState, subject: str) -> None:
    last = state.last_turn
    if last is None or (turn == last and state.turn_open):
        return
    if turn < last:
        _fail(subject, f"turn {turn} does not follow turn {last}")
    if turn == last:
        _fail(subject, f"turn {turn} has already ended")
    if state.turn_open:
        _fail(subject, f"turn {turn} begins while turn {last} is still open")


def _check_step(turn: int, number: int, state: SessionState | None, subject: str) -> StepState:
    """The step the event belongs to; ``state`` is None when the event opens a new turn."""
    if state is None:
        return StepState(number)
    if state.step is not None:
        if number == state.step.number:
            return state.step
        if number < state.step.number:
            _fail(subject, f"step {number} of turn {turn} does not follow step {state.step.number}")
        _fail(subject, f"step {number} of turn {turn} begins while step {state.step.number} is still open")
    if state.last_step is not None:
        if number == state.last_step:
            _fail(subject, f"step {number} of turn {turn} has already ended")
        if number < state.last_step:
            _fail(subject, f"step {number} of turn {turn} does not follow step {state.last_step}")
    return StepState(number)


def _apply(event_type: str, data: Mapping[str, Any], state: SessionState) -> SessionState:
    seq = state.last_seq + 1
    if event_type == USER_MESSAGE:
        return attrs.evolve(state, last_seq=seq)
    turn: int = data["turn"]
    if event_type == TURN_END:
        return SessionState(last_seq=seq, last_turn=turn, turn_open=False)
    same_turn = state.turn_open and state.last_turn == turn
    number: int = data["step"]
    step = state.step if same_turn and state.step is not None else StepState(number)
    if event_type == ASSISTANT_MESSAGE:
        blocks = tuple(
            (block["id"], block["name"]) for block in data["message"]["content"] if block["type"] == "tool-call"
        )
        step = attrs.evolve(step, committed=True, blocks=blocks)
    elif event_type == TOOL_CALL:
        step = attrs.evolve(step, calls=(*step.calls, data["call_id"]))
    elif event_type == TOOL_RESULT:
        step = attrs.evolve(step, results=step.results | {data["message"]["source"]["call_id"]})
    elif event_type == STEP_END:
        return SessionState(last_seq=seq, last_turn=turn, turn_open=True, last_step=number, step=None)
    return SessionState(last_seq=seq, last_turn=turn, turn_open=True, last_step=number, step=step)


# -- encoding and reading lines ------------------------------------------------------------------------------------


def _json_default(value: object) -> Any:
    if isinstance(value, SupportsToJson):
        return value.to_json()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _encode(seq: int, event_type: object, data: object) -> tuple[bytes, JsonObject]:
    """The line to write and the event exactly as it will be read back. Raises ``ValueError`` / ``TypeError``."""
    envelope = {"v": _FORMAT_VERSION, "seq": seq, "type": event_type, "data": data}
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default)
    line = text.encode("utf-8") + b"\n"
    decoded: JsonObject = json.loads(text)
    return line, decoded


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _parse(raw: bytes) -> Any:
    """One line's JSON value. Raises ``ValueError`` (bad UTF-8, bad JSON, NaN or Infinity)."""
    return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)


@attrs.frozen
class _Line:
    number: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's first byte."""
    raw: bytes
    """The line without its newline."""


def _split_lines(raw: bytes) -> tuple[list[_Line], _Line | None]:
    """The complete lines, and the torn last line if there is one.

    Only ``b"\\n"`` ends a line (JSON text may hold U+2028 and friends unescaped). The last line is torn when it
    has no newline, or when it has one but is not JSON: a crash can leave either, and only at the end.
    """
    lines: list[_Line] = []
    offset = 0
    while offset < len(raw):
        end = raw.find(b"\n", offset)
        if end < 0:
            return lines, _Line(len(lines) + 1, offset, raw[offset:])
        lines.append(_Line(len(lines) + 1, offset, raw[offset:end]))
        offset = end + 1
    if lines:
        try:
            _parse(lines[-1].raw)
        except ValueError:
            return lines[:-1], lines[-1]
    return lines, None


def _seq_of(value: object) -> int | None:
    seq = value.get("seq") if isinstance(value, Mapping) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def _subject(seq: int | None, line: int) -> str:
    return f"session event at seq {seq}" if seq is not None else f"session event on line {line}"


def _event(value: Mapping[str, Any]) -> SessionEvent:
    return SessionEvent(seq=value["seq"], type=value["type"], data=value["data"])


@attrs.frozen
class _Loaded:
    events: list[SessionEvent]
    state: SessionState
    size: int
    """Length of the complete lines, in bytes."""
    torn: _Line | None


def _load_bytes(raw: bytes, path: Path) -> _Loaded:
    lines, torn = _split_lines(raw)
    state = SessionState()
    events: list[SessionEvent] = []
    for line in lines:
        try:
            value = _parse(line.raw)
        except ValueError as exc:
            raise SessionCorruptionError(path, line.number, None, f"line {line.number} is not JSON ({exc})") from exc
        seq = _seq_of(value)
        try:
            state = adopt_event(value, state, subject=_subject(seq, line.number))
        except SessionValidationError as exc:
            raise SessionCorruptionError(path, line.number, seq, exc.reason) from exc
        events.append(_event(value))
    return _Loaded(events, state, torn.offset if torn is not None else len(raw), torn)


def _warn_torn(path: Path, torn: _Line, action: str) -> None:
    warnings.warn(
        SessionTornTailWarning(
            f"{path}: line {torn.number} is torn ({len(torn.raw)} bytes of an interrupted write); {action}. "
            "No complete line was lost."
        ),
        stacklevel=3,
    )


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Lock:
    """An exclusive ``flock`` on ``<log>.lock``; the file holds the owner's pid for the error message."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def acquire(cls, log_path: Path) -> _Lock:
        lock_path = log_path.with_name(log_path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise SessionLockedError(
                f"{log_path} is already open by another writer (pid {holder}); a session log has one writer at "
                "a time: close the other Session first (Session.load reads it without a lock)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:
            pass  # the pid is only a courtesy for the error message
        return cls(fd)

    def release(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _as_json(value: JsonLike) -> Any:
    return value.to_json() if isinstance(value, SupportsToJson) else value


def _text_of(blocks: Iterable[Mapping[str, Any]]) -> str:
    return "".join(block["text"] for block in blocks if block.get("type") == "text")


# -- the session ---------------------------------------------------------------------------------------------------


class Session:
    """An open session log: the events so far, and the only writer of the file.

    Build it with ``Session.open``; use it as a context manager or call ``close()``. Every ``append_*`` validates
    the event with ``validate_event`` first (nothing is written on refusal), writes it as one line with one
    ``os.write``, fsyncs, and only then adds it to ``events``.
    """

    def __init__(
        self,
        path: Path,
        *,
        fd: int,
        lock: _Lock,
        fsync: bool,
        loaded: _Loaded,
    ) -> None:
        self._path = path
        self._fd = fd
        self._lock = lock
        self._fsync = fsync
        self._events = loaded.events
        self._state = loaded.state
        self._size = loaded.size
        self._broken: str | None = None
        self._mutex = threading.RLock()
        self.recovered_torn_tail = loaded.torn is not None
        """True when ``open`` found an incomplete last line and truncated it away."""

    # -- opening and loading

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, fsync: bool = True, create: bool = True) -> Session:
        """Loads and validates the log, truncates a torn last line, and becomes its only writer.

        Raises ``SessionLockedError`` if another ``Session`` (in any process) has it open,
        ``SessionCorruptionError`` if a stored event breaks a rule, ``FileNotFoundError`` if it does not
        exist and ``create`` is false. A new log is created with mode 0600.
        """
        log_path = Path(path)
        if not create and not log_path.exists():
            raise FileNotFoundError(errno.ENOENT, "session log does not exist (create=False)", str(log_path))
        lock = _Lock.acquire(log_path)
        try:
            created = not log_path.exists()
            flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if create else 0)
            fd = os.open(log_path, flags, _FILE_MODE)
            try:
                loaded = _load_bytes(_read_bytes(log_path), log_path)
                if loaded.torn is not None:
                    _warn_torn(log_path, loaded.torn, "it was truncated away")
                    os.ftruncate(fd, loaded.size)
                    if fsync:
                        os.fsync(fd)
                if created and fsync:
                    os.fsync(fd)
                    _fsync_directory(log_path.parent)
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            lock.release()
            raise
        return cls(log_path, fd=fd, lock=lock, fsync=fsync, loaded=loaded)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> list[SessionEvent]:
        """Reads and validates the whole log without taking the lock or changing the file.

        Raises ``SessionCorruptionError`` naming the line and seq of the first violation. A torn last line is
        reported with ``SessionTornTailWarning`` and ignored.
        """
        log_path = Path(path)
        loaded = _load_bytes(_read_bytes(log_path), log_path)
        if loaded.torn is not None:
            _warn_torn(log_path, loaded.torn, "it was ignored")
        return loaded.events

    @property
    def path(self) -> Path:
        return self._path

    @property
    def events(self) -> list[SessionEvent]:
        """The adopted events, in order (a copy)."""
        with self._mutex:
            return list(self._events)

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        """Releases the file and the lock. Calling it again does nothing."""
        with self._mutex:
            if self._fd >= 0:
                fd, self._fd = self._fd, -1
                try:
                    os.close(fd)
                finally:
                    self._lock.release()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- appending

    def append(self, event_type: str, data: Mapping[str, Any]) -> SessionEvent:
        """Validates, writes and adopts one event. ``append_*`` are the typed ways to call it.

        Raises ``SessionWriteError`` when the event breaks a rule or cannot be written; the file and ``events``
        are then unchanged.
        """
        with self._mutex:
            self._check_writable()
            seq = self._state.last_seq + 1
            line, event = self._encode(seq, event_type, data)
            try:
                state = adopt_event(event, self._state, subject=f"session event at seq {seq}")
            except SessionValidationError as exc:
                raise SessionWriteError(f"refused to append {event_type}: {exc.reason}. Nothing was written.") from exc
            self._write(line, event_type)
            self._state = state
            adopted = _event(event)
            self._events.append(adopted)
            return adopted

    def seed(self, events: Iterable[Mapping[str, Any]]) -> list[SessionEvent]:
        """Appends ``{"type", "data"}`` events all together or not at all (one write).

        Each is validated after the ones before it, with the subject ``seed <type> at index i``.
        """
        with self._mutex:
            self._check_writable()
            state = self._state
            lines: list[bytes] = []
            adopted: list[SessionEvent] = []
            for index, item in enumerate(events):
                event_type = item.get("type")
                seq = state.last_seq + 1
                line, event = self._encode(seq, event_type, item.get("data"))
                try:
                    state = adopt_event(event, state, subject=f"seed {event_type} at index {index}")
                except SessionValidationError as exc:
                    raise SessionWriteError(f"refused to seed: {exc.reason}. Nothing was written.") from exc
                lines.append(line)
                adopted.append(_event(event))
            if lines:
                self._write(b"".join(lines), "seed")
                self._state = state
                self._events.extend(adopted)
            return adopted

    def append_user_message(self, text: str, *, id: str | None = None) -> SessionEvent:
        message = {
            "id": _new_id("msg") if id is None else id,
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": text}],
        }
        return self.append(USER_MESSAGE, message)

    def append_assistant_message(
        self,
        turn: int,
        step: int,
        *,
        content: Sequence[JsonLike],
        provider: str,
        model: str,
        usage: JsonLike | None,
        finish: JsonLike,
        id: str | None = None,
    ) -> SessionEvent:
        """The committed response of a step. ``content`` holds block JSON or ``TextBlock`` / ``ReasoningBlock``
        / ``ToolCallBlock`` values; ``usage`` a ``Usage``; ``finish`` a ``FinishReason``."""
        message = {
            "id": _new_id("msg") if id is None else id,
            "role": "assistant",
            "source": {"kind": "model", "provider": provider, "model": model},
            "content": [_as_json(block) for block in content],
            "usage": None if usage is None else _as_json(usage),
            "finish": _as_json(finish),
        }
        return self.append(ASSISTANT_MESSAGE, {"turn": turn, "step": step, "message": message})

    def append_attempt(
        self, turn: int, step: int, attempt: int, stream: Sequence[JsonLike], failure: JsonLike
    ) -> SessionEvent:
        """A failed attempt's chunks, kept for the record. Never replayed, and its tool calls never run."""
        data = {
            "turn": turn,
            "step": step,
            "attempt": attempt,
            "stream": [_as_json(chunk) for chunk in stream],
            "failure": _as_json(failure),
        }
        return self.append(ASSISTANT_ATTEMPT, data)

    def append_retry(
        self, turn: int, step: int, retry: int, max_retries: int | None, delay_ms: float, failure: JsonLike
    ) -> SessionEvent:
        data = {
            "turn": turn,
            "step": step,
            "retry": retry,
            "max_retries": max_retries,
            "delay_ms": delay_ms,
            "failure": _as_json(failure),
        }
        return self.append(LLM_RETRY, data)

    def append_tool_call(self, turn: int, step: int, call_id: str, name: str, arguments: str) -> SessionEvent:
        """Records that a tool call of this step's ``assistant/message`` is being run.

        Refuses an empty, non-string or unknown ``call_id`` with ``SessionWriteError``.
        """
        data = {"turn": turn, "step": step, "call_id": call_id, "name": name, "arguments": arguments}
        return self.append(TOOL_CALL, data)

    def append_tool_result(
        self, turn: int, step: int, call_id: str, text: str, *, is_error: bool = False, id: str | None = None
    ) -> SessionEvent:
        """Records a recorded tool call's result. Refuses an empty, non-string or unpaired ``call_id``."""
        message = {
            "id": _new_id("msg") if id is None else id,
            "role": "user",
            "source": {"kind": "tool", "call_id": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "tool_call_id": call_id,
                    "content": [{"type": "text", "text": text}],
                    "is_error": is_error,
                }
            ],
        }
        return self.append(TOOL_RESULT, {"turn": turn, "step": step, "message": message})

    def append_step_end(self, turn: int, step: int) -> SessionEvent:
        return self.append(STEP_END, {"turn": turn, "step": step})

    def append_turn_end(self, turn: int, reason: JsonLike) -> SessionEvent:
        return self.append(TURN_END, {"turn": turn, "reason": _as_json(reason)})

    # -- reading

    def next_turn(self) -> int:
        """The number of the next turn: one more than the last turn seen, 1 for an empty session.

        A turn still open (interrupted) must be closed first: see ``recover``.
        """
        last = self._state.last_turn
        return 1 if last is None else last + 1

    def messages(self) -> list[dict[str, Any]]:
        """The chat history for the next request, in OpenAI chat format.

        ``assistant/attempt`` and ``llm/retry`` are never included, nor is reasoning. An assistant message has
        ``tool_calls`` only when it called tools (the API refuses an empty list) and ``content`` None only then.
        A tool call of a closed step that was never run gets, in this replay only, the tool answer
        ``NOT_RUN_TOOL_RESULT``: the API refuses a history where a tool call has no answer.
        """
        out: list[dict[str, Any]] = []
        unanswered: dict[tuple[int, int], list[str]] = {}
        for event in self.events:
            data = event.data
            if event.type == USER_MESSAGE:
                out.append({"role": "user", "content": _text_of(data["content"])})
            elif event.type == ASSISTANT_MESSAGE:
                content = data["message"]["content"]
                calls = [block for block in content if block["type"] == "tool-call"]
                text = _text_of(content)
                message: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = [
                        {
                            "id": block["id"],
                            "type": "function",
                            "function": {"name": block["name"], "arguments": block["arguments"]},
                        }
                        for block in calls
                    ]
                elif not text:
                    message["content"] = ""
                out.append(message)
                unanswered[(data["turn"], data["step"])] = [block["id"] for block in calls]
            elif event.type == TOOL_RESULT:
                block = data["message"]["content"][0]
                call_id = block["tool_call_id"]
                out.append({"role": "tool", "tool_call_id": call_id, "content": _text_of(block["content"])})
                pending = unanswered.get((data["turn"], data["step"]), [])
                if call_id in pending:
                    pending.remove(call_id)
            elif event.type in (STEP_END, TURN_END):
                closing = [
                    key
                    for key in unanswered
                    if key[0] == data["turn"] and (event.type == TURN_END or key[1] == data["step"])
                ]
                for key in closing:
                    for missing in unanswered.pop(key):
                        out.append({"role": "tool", "tool_call_id": missing, "content": NOT_RUN_TOOL_RESULT})
        return out

    # -- recovery

    def recover(self) -> list[SessionEvent]:
        """Closes an interrupted last turn (one without ``turn/end``) and returns the events it appended.

        Only the missing closers are synthesised, each through ``validate_event``: an error ``tool/result``
        (``INTERRUPTED_TOOL_RESULT``) for each recorded ``tool/call`` without a result, then ``step/end``, then
        ``turn/end`` aborted. A tool call with a real result gets no second one; nothing is re-run. A session
        with no open turn is left as it is.
        """
        with self._mutex:
            state = self._state
            turn = state.open_turn
            if turn is None:
                return []
            added: list[SessionEvent] = []
            if state.step is not None:
                number = state.step.number
                for call_id in state.step.unresolved():
                    added.append(self.append_tool_result(turn, number, call_id, INTERRUPTED_TOOL_RESULT, is_error=True))
                added.append(self.append_step_end(turn, number))
            reason = {"kind": "aborted", "failure": {"code": Code.ABORTED, "message": "session interrupted"}}
            added.append(self.append_turn_end(turn, reason))
            return added

    # -- internals

    def _check_writable(self) -> None:
        if self._fd < 0:
            raise SessionWriteError(f"{self._path}: the session is closed; open it again to append")
        if self._broken is not None:
            raise SessionWriteError(f"{self._path}: {self._broken}; close the session and open it again")

    def _encode(self, seq: int, event_type: object, data: object) -> tuple[bytes, JsonObject]:
        try:
            return _encode(seq, event_type, data)
        except (TypeError, ValueError) as exc:
            raise SessionWriteError(
                f"refused to append {event_type}: the event is not JSON-serialisable as UTF-8 ({exc}). "
                "Nothing was written."
            ) from exc

    def _write(self, line: bytes, what: object) -> None:
        """One ``os.write`` of whole lines, then fsync. On any failure the file is cut back to its old size."""
        try:
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(errno.EIO, f"short write: {written} of {len(line)} bytes")
            if self._fsync:
                os.fsync(self._fd)
        except BaseException as exc:
            self._roll_back()
            if isinstance(exc, OSError):
                message = f"could not write {what} to {self._path}: {exc}. Nothing was recorded."
                raise SessionWriteError(message) from exc
            raise
        self._size += len(line)

    def _roll_back(self) -> None:
        try:
            os.ftruncate(self._fd, self._size)
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            self._broken = f"a failed write could not be rolled back ({exc}), so the file's end is unknown"


# -- offline tools -------------------------------------------------------------------------------------------------


def check(path: str | os.PathLike[str]) -> list[str]:
    """Every rule violation in the log, not just the first, each naming its line and seq.

    A bad event is skipped and checking goes on with the next one (its seq is taken as the new reference, so a
    single gap is reported once). A torn last line is not a fault: ``load`` ignores it.
    """
    lines, _ = _split_lines(_read_bytes(Path(path)))
    return _faults(lines)


def _faults(lines: Sequence[_Line]) -> list[str]:
    problems: list[str] = []
    state = SessionState()
    resync = False
    for line in lines:
        try:
            value = _parse(line.raw)
        except ValueError as exc:
            problems.append(f"line {line.number}, seq unknown: line is not JSON ({exc})")
            resync = True
            continue
        seq = _seq_of(value)
        if resync and seq is not None:
            state = attrs.evolve(state, last_seq=seq - 1)
        resync = False
        try:
            state = adopt_event(value, state, subject=_subject(seq, line.number))
        except SessionValidationError as exc:
            problems.append(f"line {line.number}, seq {'unknown' if seq is None else seq}: {exc.reason}")
            if seq is None:
                resync = True
            else:
                state = attrs.evolve(state, last_seq=seq)
    return problems


@attrs.frozen
class RepairReport:
    kept: int
    """Events left in the log."""
    quarantined: int
    """Lines moved to the quarantine file (the torn last line included)."""
    quarantine_path: Path | None
    """Where they went; None when nothing was quarantined."""
    turns_quarantined: list[int]
    problems: list[str]
    """What ``check`` found before the repair, and the torn last line if any."""


@attrs.frozen
class _Record:
    line: _Line
    value: Any
    parsed: bool
    turn: int | None


def repair(path: str | os.PathLike[str]) -> RepairReport:
    """Makes a log that breaks the rules (for example one an older writer left with empty call ids) loadable.

    Every valid event is kept. Every event of a turn with any violation is moved, verbatim, to
    ``<stem>.quarantine.jsonl`` beside the log (appended, mode 0600); so is a line that belongs to no turn
    and breaks a rule, and a torn last line. A ``user/message`` belongs to no turn and is kept when valid.
    The kept events are renumbered from seq 1 and the log is replaced atomically (temporary file, fsync,
    ``os.replace``, mode 0600). Nothing is deleted: every line ends in the log or in the quarantine file.
    A log that is already valid is left untouched. Takes the writer lock: ``SessionLockedError`` if open.
    """
    log_path = Path(path)
    lock = _Lock.acquire(log_path)
    try:
        return _repair_locked(log_path)
    finally:
        lock.release()


def _repair_locked(log_path: Path) -> RepairReport:
    raw = _read_bytes(log_path)
    lines, torn = _split_lines(raw)
    problems = _faults(lines)
    if torn is not None:
        problems.append(f"line {torn.number}, seq unknown: torn last line ({len(torn.raw)} bytes)")
    records = [_record(line) for line in lines]
    bad_lines = {record.line.number for record in records if not record.parsed}
    bad_turns: set[int] = set()
    while True:
        kept, blamed = _replay(records, bad_turns, bad_lines)
        if blamed is None:
            break
        turn, number = blamed
        if turn is None:
            bad_lines.add(number)
        else:
            bad_turns.add(turn)
    quarantined = [record.line for record in records if record.line.number in bad_lines or record.turn in bad_turns]
    if torn is not None:
        quarantined.append(torn)
    quarantine_path: Path | None = None
    if quarantined:
        quarantine_path = log_path.with_name(log_path.stem + ".quarantine.jsonl")
        _append_file(quarantine_path, b"".join(line.raw + b"\n" for line in quarantined))
    content = b"".join(_encode(event["seq"], event["type"], event["data"])[0] for event in kept)
    if content != raw:
        _replace_file(log_path, content)
    return RepairReport(
        kept=len(kept),
        quarantined=len(quarantined),
        quarantine_path=quarantine_path,
        turns_quarantined=sorted(bad_turns),
        problems=problems,
    )


def _record(line: _Line) -> _Record:
    try:
        value = _parse(line.raw)
    except ValueError:
        return _Record(line, None, parsed=False, turn=None)
    data = value.get("data") if isinstance(value, Mapping) else None
    turn = data.get("turn") if isinstance(data, Mapping) else None
    return _Record(line, value, parsed=True, turn=turn if _is_int(turn) else None)


def _replay(
    records: Sequence[_Record], bad_turns: set[int], bad_lines: set[int]
) -> tuple[list[JsonObject], tuple[int | None, int] | None]:
    """Adopts the records not yet quarantined, renumbered; stops at the first one that fails and says whom to
    blame: its turn (or its line when it has none), or the open turn it collided with."""
    state = SessionState()
    kept: list[JsonObject] = []
    for record in records:
        if record.line.number in bad_lines or record.turn in bad_turns:
            continue
        value = record.value
        if not isinstance(value, Mapping):
            return kept, (None, record.line.number)
        event = {"v": value.get("v"), "seq": state.last_seq + 1, "type": value.get("type"), "data": value.get("data")}
        subject = _subject(None, record.line.number)
        try:
            _check_shape(event, subject)
        except SessionValidationError:
            return kept, (record.turn, record.line.number)
        try:
            state = adopt_event(event, state, subject=subject)
        except SessionValidationError:
            if state.turn_open and state.last_turn != record.turn:
                return kept, (state.last_turn, record.line.number)
            return kept, (record.turn, record.line.number)
        kept.append(event)
    return kept, None


def _append_file(path: Path, data: bytes) -> None:
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_directory(path.parent)


def _replace_file(path: Path, data: bytes) -> None:
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, _FILE_MODE)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)
