"""The session rules, pure: one function, ``validate_event``, decides whether an event may join a session.

It runs on every append (write path), on ``seed`` and on every stored line (read path), so an event that could not be
loaded back is never written: a tool call with an empty id is refused at the append, not discovered when the session
is reopened (docs/decisions/0011-session-durability.md). Checks run in this order: the event's shape (its type,
``_shape.decode_event``), ``seq`` following the last one, then its relations to the earlier events:

- turns and steps only move forward; one turn is open at a time and one step of it; a ``user/message`` never
  arrives inside an open step;
- a ``tool/call`` names a tool call of the same step's ``assistant/message`` (so a failed attempt calls no tools),
  under the same name and kind, once;
- a ``tool/result`` answers a recorded ``tool/call`` of its step, once;
- ``step/end`` and ``turn/end`` leave no recorded call unanswered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._events import (
    AssistantMessageEvent,
    InStep,
    InTurn,
    SessionEvent,
    StepEndEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)
from ._shape import decode_event, fail

__all__ = ["SessionState", "StepState", "adopt_event", "validate_event"]


@attrs.frozen
class StepState:
    """What the rules need to know about the open step."""

    number: int
    committed: bool = False
    """Its ``assistant/message`` is recorded."""
    blocks: tuple[tuple[str, str, str], ...] = ()
    """``(id, name, kind)`` of the tool calls of its ``assistant/message``."""
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


def validate_event(event: SessionEvent | Mapping[str, Any], state: SessionState, *, subject: str) -> SessionEvent:
    """The typed event, or ``SessionValidationError`` unless ``event`` may follow the events that produced ``state``.

    ``event`` is a typed event or a decoded log line (``{"v", "seq", "type", "data"}``). ``subject`` names it in
    the message: ``session event at seq N`` on append and load, ``seed <type> at index i`` when seeding.
    """
    typed = event if isinstance(event, SessionEvent) else decode_event(event, subject=subject)
    if typed.seq != state.last_seq + 1:
        fail(subject, f"seq {typed.seq} does not follow seq {state.last_seq} (expected {state.last_seq + 1})")
    _check_relations(typed, state, subject)
    return typed


def adopt_event(
    event: SessionEvent | Mapping[str, Any], state: SessionState, *, subject: str
) -> tuple[SessionEvent, SessionState]:
    """``validate_event``, then the typed event and the state after it."""
    typed = validate_event(event, state, subject=subject)
    return typed, _apply(typed, state)


def _check_relations(event: SessionEvent, state: SessionState, subject: str) -> None:
    if isinstance(event, UserMessageEvent):
        if state.step is not None:
            fail(subject, f"user/message arrives while step {state.step.number} of turn {state.last_turn} is open")
        return
    assert isinstance(event, InTurn)
    turn = event.turn
    _check_turn(turn, state, subject)
    same_turn = state.turn_open and state.last_turn == turn
    if isinstance(event, TurnEndEvent):
        open_calls = state.step.unresolved() if same_turn and state.step is not None else []
        if open_calls:
            fail(subject, f"turn/end leaves unresolved tool call {open_calls[0]}")
        return
    assert isinstance(event, InStep)
    step = _check_step(turn, event.step, state if same_turn else None, subject)
    where = f"turn {turn} step {step.number}"
    if isinstance(event, AssistantMessageEvent):
        if step.committed:
            fail(subject, f"assistant/message of {where} is already recorded")
    elif isinstance(event, ToolCallEvent):
        call_id = event.call_id
        if not step.committed:
            fail(subject, f"tool/call {call_id} has no assistant/message in {where}: a failed attempt calls no tools")
        blocks = {block[0]: block for block in step.blocks}
        if call_id not in blocks:
            fail(subject, f"tool/call {call_id} is not a tool call of the assistant/message of {where}")
        _, name, kind = blocks[call_id]
        if event.name != name:
            fail(subject, f"tool/call {call_id} names {event.name!r}; the assistant/message calls {name!r}")
        if event.kind != kind:
            fail(subject, f"tool/call {call_id} is a {event.kind!r} call; the assistant/message's is a {kind!r} call")
        if call_id in step.calls:
            fail(subject, f"tool/call {call_id} is already recorded in {where}")
    elif isinstance(event, ToolResultEvent):
        if event.call_id not in step.calls:
            fail(subject, f"tool result for unknown tool call {event.call_id}")
        if event.call_id in step.results:
            fail(subject, f"tool result for tool call {event.call_id} is already recorded")
    elif isinstance(event, StepEndEvent):
        open_calls = step.unresolved()
        if open_calls:
            fail(subject, f"step/end leaves unresolved tool call {open_calls[0]}")


def _check_turn(turn: int, state: SessionState, subject: str) -> None:
    last = state.last_turn
    if last is None or (turn == last and state.turn_open):
        return
    if turn < last:
        fail(subject, f"turn {turn} does not follow turn {last}")
    if turn == last:
        fail(subject, f"turn {turn} has already ended")
    if state.turn_open:
        fail(subject, f"turn {turn} begins while turn {last} is still open")


def _check_step(turn: int, number: int, state: SessionState | None, subject: str) -> StepState:
    """The step the event belongs to; ``state`` is None when the event opens a new turn."""
    if state is None:
        return StepState(number)
    if state.step is not None:
        if number == state.step.number:
            return state.step
        if number < state.step.number:
            fail(subject, f"step {number} of turn {turn} does not follow step {state.step.number}")
        fail(subject, f"step {number} of turn {turn} begins while step {state.step.number} is still open")
    if state.last_step is not None:
        if number == state.last_step:
            fail(subject, f"step {number} of turn {turn} has already ended")
        if number < state.last_step:
            fail(subject, f"step {number} of turn {turn} does not follow step {state.last_step}")
    return StepState(number)


def _apply(event: SessionEvent, state: SessionState) -> SessionState:
    seq = state.last_seq + 1
    if isinstance(event, UserMessageEvent):
        return attrs.evolve(state, last_seq=seq)
    assert isinstance(event, InTurn)
    turn = event.turn
    if not isinstance(event, InStep):
        return SessionState(last_seq=seq, last_turn=turn, turn_open=False)
    number = event.step
    same_turn = state.turn_open and state.last_turn == turn
    step = state.step if same_turn and state.step is not None else StepState(number)
    if isinstance(event, AssistantMessageEvent):
        blocks = tuple((part.id, part.name, part.kind) for part in event.message.tool_calls)
        step = attrs.evolve(step, committed=True, blocks=blocks)
    elif isinstance(event, ToolCallEvent):
        step = attrs.evolve(step, calls=(*step.calls, event.call_id))
    elif isinstance(event, ToolResultEvent):
        step = attrs.evolve(step, results=step.results | {event.call_id})
    elif isinstance(event, StepEndEvent):
        return SessionState(last_seq=seq, last_turn=turn, turn_open=True, last_step=number, step=None)
    return SessionState(last_seq=seq, last_turn=turn, turn_open=True, last_step=number, step=step)
