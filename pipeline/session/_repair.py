"""Offline tools for a log that breaks the rules: ``check`` lists every fault, ``repair`` quarantines them.

Both use the same ``validate_event`` as the write and read paths (docs/decisions/0011-session-durability.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ._errors import SessionError, SessionValidationError
from ._file import (
    Line,
    append_file,
    encode_line,
    lines_bytes,
    parse_line,
    read_bytes,
    refuse_foreign,
    replace_file,
    split_lines,
    subject,
)
from ._lock import Lock
from ._rules import SessionState, adopt_event
from ._shape import decode_event, is_int, seq_of

__all__ = ["RepairReport", "check", "repair"]


def check(path: str | os.PathLike[str]) -> list[str]:
    """Every rule violation in the log, not just the first, each naming its line and seq.

    A bad event is skipped and checking goes on with the next one (its seq is taken as the new reference, so a
    single gap is reported once). A torn last line (an interrupted write) is reported last, as repairable: ``load``
    ignores it, opening the log truncates it away, ``repair`` moves it to the quarantine file.
    """
    log_path = Path(path)
    lines, torn = split_lines(read_bytes(log_path))
    if lines or torn is not None:
        refuse_foreign(log_path, lines, torn)
    problems = _faults(lines)
    if torn is not None:
        problems.append(torn_problem(torn))
    return problems


def torn_problem(torn: Line) -> str:
    """How ``check`` and ``repair`` name a torn last line: ``line N, seq unknown: torn last line ...``."""
    return (
        f"line {torn.number}, seq unknown: torn last line ({len(torn.raw)} bytes of an interrupted write; "
        "repairable: `session repair` moves it to the quarantine file)"
    )


def _faults(lines: Sequence[Line]) -> list[str]:
    problems: list[str] = []
    state = SessionState()
    resync = False
    for line in lines:
        try:
            value = parse_line(line.raw)
        except ValueError as exc:
            problems.append(f"line {line.number}, seq unknown: line is not JSON ({exc})")
            resync = True
            continue
        seq = seq_of(value)
        if resync and seq is not None:
            state = attrs.evolve(state, last_seq=seq - 1)
        resync = False
        try:
            _, state = adopt_event(value, state, subject=subject(seq, line.number))
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
    line: Line
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
    A log that is already valid is left untouched, and a file none of whose lines is a valid event is refused
    (``SessionError``, unchanged): repair never empties a file that was not a session log. Takes the writer lock:
    ``SessionLockedError`` if open.
    """
    log_path = Path(path)
    lock = Lock.acquire(log_path)
    try:
        return _repair_locked(log_path, lock)
    finally:
        lock.release()


def _repair_locked(log_path: Path, lock: Lock) -> RepairReport:
    raw = lock.read()
    lines, torn = split_lines(raw)
    if lines or torn is not None:
        refuse_foreign(log_path, lines, torn)
    if not lock.info.st_mode & 0o222:
        raise SessionError(f"cannot repair session log {log_path}: it is read-only; nothing was changed")
    problems = _faults(lines)
    if torn is not None:
        problems.append(torn_problem(torn))
    records = [_record(line) for line in lines]
    bad_lines = {record.line.number for record in records if not record.parsed}
    bad_turns: set[int] = set()
    kept = _replay(records, bad_turns, bad_lines)
    if not kept and lines:
        raise SessionError(
            f"{log_path} is not a session log: none of its {len(lines) + (torn is not None)} line(s) is a valid "
            "session event, so repair would empty it; it was left unchanged (a notes file with an envelope-shaped "
            "line looks so)."
        )
    quarantined = [record.line for record in records if record.line.number in bad_lines or record.turn in bad_turns]
    if torn is not None:
        quarantined.append(torn)
    quarantine_path: Path | None = None
    if quarantined:
        quarantine_path = log_path.with_name(log_path.stem + ".quarantine.jsonl")
        append_file(quarantine_path, lines_bytes(quarantined))
    content = b"".join(encode_line(event["seq"], event["type"], event["data"]) for event in kept)
    if content != raw:
        replace_file(log_path, content)
    return RepairReport(
        kept=len(kept),
        quarantined=len(quarantined),
        quarantine_path=quarantine_path,
        turns_quarantined=sorted(bad_turns),
        problems=problems,
    )


def _record(line: Line) -> _Record:
    try:
        value = parse_line(line.raw)
    except ValueError:
        return _Record(line, None, parsed=False, turn=None)
    data = value.get("data") if isinstance(value, Mapping) else None
    turn = data.get("turn") if isinstance(data, Mapping) else None
    return _Record(line, value, parsed=True, turn=turn if is_int(turn) else None)


def _replay(records: Sequence[_Record], bad_turns: set[int], bad_lines: set[int]) -> list[dict[str, Any]]:
    """Adopts the records, renumbered, quarantining as it goes (it adds to ``bad_turns`` and ``bad_lines``).

    A record that fails blames its turn (or its line when it has none), or the open turn it collided with. Blaming
    a turn rolls back to the state before that turn's first kept record and goes on from there without the turn:
    the result is the one of replaying the whole log again after each blame, in time linear in the log for turns
    that are not interleaved (each turn is rolled back at most once, over its own span).

    The kept events are the stored JSON, not the typed events, so a repair keeps what it does not understand."""
    state = SessionState()
    kept: list[dict[str, Any]] = []
    starts: dict[int, tuple[int, int, SessionState]] = {}
    """For each turn with a kept record: the index of its first record, the length of ``kept`` and the state then."""
    index = 0
    while index < len(records):
        record = records[index]
        if record.line.number in bad_lines or record.turn in bad_turns:
            index += 1
            continue
        value = record.value
        blamed: int | None = None
        if isinstance(value, Mapping):
            seq = state.last_seq + 1
            event = {"v": value.get("v"), "seq": seq, "type": value.get("type"), "data": value.get("data")}
            where = subject(None, record.line.number)
            try:
                typed = decode_event(event, subject=where)
            except SessionValidationError:
                blamed = record.turn
            else:
                try:
                    _, adopted = adopt_event(typed, state, subject=where)
                except SessionValidationError:
                    collided = state.turn_open and state.last_turn != record.turn
                    blamed = state.last_turn if collided else record.turn
                else:
                    if record.turn is not None and record.turn not in starts:
                        starts[record.turn] = (index, len(kept), state)
                    state = adopted
                    kept.append(event)
                    index += 1
                    continue
        if blamed is None:
            bad_lines.add(record.line.number)
            index += 1
            continue
        bad_turns.add(blamed)
        if blamed in starts:
            index, length, state = starts[blamed]
            del kept[length:]
            starts = {turn: start for turn, start in starts.items() if start[0] < index}
    return kept
