"""What a session writes it can read back, however deeply a value nests: a value nested past the log's bound is
refused at the append (nothing written), and a stored line nested past it is the session's corruption error on load,
never a bare ``RecursionError`` (decision 0011)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from session_builders import FAILURE, attempt, user

from pipeline.session import Session, SessionCorruptionError, SessionWriteError

DEPTH = 100  # the log line's bound (the envelope is one level)


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def attempt_with_raw(levels: int) -> tuple[str, dict[str, Any]]:
    """An attempt whose error finish carries a provider value nested ``levels`` deep."""
    failure = {**FAILURE, "raw": nested(levels)}
    return attempt(stream=[{"type": "finish", "reason": {"kind": "error", "failure": failure}}])


def deep_call(frames: int, then: Any) -> Any:
    return then() if frames == 0 else deep_call(frames - 1, then)


@pytest.mark.parametrize("levels", [DEPTH, 480, 5_000])
def test_an_append_nested_past_the_bound_is_refused_and_nothing_is_written(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "s.jsonl"
    with Session.open(path) as session:
        session.append(*user())
        before = path.read_bytes()
        with pytest.raises(SessionWriteError, match=f"nested deeper than {DEPTH} levels"):
            session.append(*attempt_with_raw(levels))
        assert len(session.events) == 1
    assert path.read_bytes() == before


def test_what_is_written_at_the_bound_loads_back_even_from_a_deep_stack(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    deepest = DEPTH - 6  # the deepest the append takes: envelope, data, stream list, chunk, reason, failure
    with Session.open(path) as session:
        session.append(*user())
        session.append(*attempt_with_raw(deepest))

    events = deep_call(600, lambda: Session.load(path))

    assert events[-1].failure is not None
    assert len(events) == 2


@pytest.mark.parametrize("levels", [DEPTH + 1, 480, 200_000])
def test_a_stored_line_nested_past_the_bound_is_corruption_not_a_recursion_error(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "s.jsonl"
    with Session.open(path) as session:
        session.append(*user())
    first = path.read_bytes()
    deep = '{"v":1,"seq":2,"type":"user/message","data":' + '{"a":' * levels + "1" + "}" * levels + "}"
    after = json.dumps({"v": 1, "seq": 3, "type": "user/message", "data": {}})
    path.write_bytes(first + deep.encode() + b"\n" + after.encode() + b"\n")

    with pytest.raises(SessionCorruptionError, match=f"nested deeper than {DEPTH} levels"):
        Session.load(path)
