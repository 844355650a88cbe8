"""Properties of the session log: load returns exactly what was appended; a torn line loses no complete line."""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builders import (
    STOP,
    Event,
    assistant,
    attempt,
    call_block,
    reasoning,
    retry,
    step_end,
    text,
    tool_call,
    tool_result,
    turn_end,
    user,
)

from operators import TextDelta
from pipeline.session import Session, SessionError, SessionTornTailWarning, check

texts = st.text(max_size=12)
call_ids = st.text(min_size=1, max_size=6)


@st.composite
def conversations(draw: st.DrawFn) -> list[Event]:
    """Any prefix of a valid session: turns of steps with attempts, retries, tool calls and their results."""
    events: list[Event] = []
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        events.append(user(draw(texts), id=f"u{turn}"))
        steps = draw(st.integers(1, 2))
        for step in range(1, steps + 1):
            for number in range(1, draw(st.integers(0, 2)) + 1):
                events.append(attempt(turn, step, number, [TextDelta(0, draw(texts)).to_dict()]))
                events.append(retry(turn, step, number, delay_ms=draw(st.floats(0, 1e6))))
            ids = draw(st.lists(call_ids, unique=True, max_size=3))
            blocks = [reasoning(draw(texts)), text(draw(texts)), *(call_block(i, arguments=draw(texts)) for i in ids)]
            events.append(assistant(turn, step, *blocks, id=f"a{turn}.{step}"))
            for call_id in ids:
                events.append(tool_call(turn, step, call_id, arguments=blocks[2 + ids.index(call_id)]["arguments"]))
                events.append(tool_result(turn, step, call_id, value=draw(texts), id=f"r{turn}.{call_id}"))
            events.append(step_end(turn, step))
        events.append(turn_end(turn, draw(st.sampled_from([STOP, {"kind": "max-steps"}]))))
    return events[: draw(st.integers(0, len(events)))]


@contextlib.contextmanager
def fresh_log() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory) / "session.jsonl"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_load_returns_exactly_the_appended_events(events: list[Event]) -> None:
    with fresh_log() as path:
        with Session.open(path, fsync=False) as session:
            appended = [session.append(event_type, data) for event_type, data in events]
        assert [(event.type, event.data) for event in appended] == events
        assert Session.load(path) == appended
        assert check(path) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations().filter(bool), st.data())
def test_open_keeps_every_complete_line_before_a_torn_one(events: list[Event], data: st.DataObject) -> None:
    with fresh_log() as path:
        with Session.open(path, fsync=False) as session:
            appended = [session.append(event_type, payload) for event_type, payload in events]
        lines = [line + b"\n" for line in path.read_bytes().split(b"\n")[:-1]]  # only a newline byte ends a line
        assert len(lines) == len(appended)
        torn_index = data.draw(st.integers(0, len(lines) - 1), label="torn line")
        cut = data.draw(st.integers(0, len(lines[torn_index]) - 1), label="bytes kept")
        complete = b"".join(lines[:torn_index])
        path.write_bytes(complete + lines[torn_index][:cut])
        if torn_index == 0 and cut > 0:  # no complete event: nothing proves it is a log, so nothing is cut
            with pytest.raises(SessionError, match="is not a session log"):
                Session.open(path, fsync=False)
            assert path.read_bytes() == lines[0][:cut]
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reopened = Session.open(path, fsync=False)
        with reopened:
            assert reopened.events == appended[:torn_index]
            assert reopened.recovered_torn_tail == (cut > 0)
            assert [w.category for w in caught] == ([SessionTornTailWarning] if cut else [])
        assert path.read_bytes() == complete
