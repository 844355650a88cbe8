"""Builders for session tests: events as ``(type, data)`` before they are numbered, logs written the plain way."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from operators import (
    BlockStart,
    Failure,
    FinishReason,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
)
from pipeline.session import Session

Event: TypeAlias = tuple[str, dict[str, Any]]
"""An event before it is numbered: ``(type, data)``."""

FAILURE = {"code": "SERVER", "message": "upstream 502", "status": 502}
STOP = {"kind": "stop"}


def text(value: str = "hello") -> dict[str, Any]:
    return {"type": "text", "text": value}


def reasoning(value: str = "thinking") -> dict[str, Any]:
    return {"type": "reasoning", "text": value}


def call_block(call_id: str = "call_1", name: str = "read_file", arguments: str = '{"path":"a"}') -> dict[str, Any]:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def user(value: str = "hi", *, id: str = "u1") -> Event:
    return ("user/message", {"id": id, "role": "user", "source": {"kind": "user"}, "content": [text(value)]})


def assistant_message(*blocks: dict[str, Any], id: str = "a1", **overrides: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": id,
        "role": "assistant",
        "source": {"kind": "model", "provider": "openai", "model": "gpt-4o"},
        "content": list(blocks),
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "finish": {"kind": "tool-calls" if any(b["type"] == "tool-call" for b in blocks) else "stop"},
    }
    message.update(overrides)
    return message


def assistant(turn: int = 1, step: int = 1, *blocks: dict[str, Any], **overrides: Any) -> Event:
    return ("assistant/message", {"turn": turn, "step": step, "message": assistant_message(*blocks, **overrides)})


def attempt(turn: int = 1, step: int = 1, number: int = 1, stream: list[Any] | None = None) -> Event:
    chunks = stream if stream is not None else [TextDelta(0, "par").to_dict()]
    return ("assistant/attempt", {"turn": turn, "step": step, "attempt": number, "stream": chunks, "failure": FAILURE})


def retry(turn: int = 1, step: int = 1, number: int = 1, **overrides: Any) -> Event:
    data = {"turn": turn, "step": step, "retry": number, "max_retries": 3, "delay_ms": 250.0, "failure": FAILURE}
    data.update(overrides)
    return ("llm/retry", data)


def tool_call(
    turn: int = 1, step: int = 1, call_id: Any = "call_1", name: Any = "read_file", **overrides: Any
) -> Event:
    data = {"turn": turn, "step": step, "call_id": call_id, "name": name, "arguments": '{"path":"a"}'}
    data.update(overrides)
    return ("tool/call", data)


def result_message(call_id: Any = "call_1", value: str = "ok", *, id: str = "r1", **overrides: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": id,
        "role": "user",
        "source": {"kind": "tool", "call_id": call_id},
        "content": [{"type": "tool-result", "tool_call_id": call_id, "content": [text(value)], "is_error": False}],
    }
    message.update(overrides)
    return message


def tool_result(turn: int = 1, step: int = 1, call_id: Any = "call_1", **overrides: Any) -> Event:
    return ("tool/result", {"turn": turn, "step": step, "message": result_message(call_id, **overrides)})


def step_end(turn: int = 1, step: int = 1) -> Event:
    return ("step/end", {"turn": turn, "step": step})


def turn_end(turn: int = 1, reason: dict[str, Any] | None = None) -> Event:
    return ("turn/end", {"turn": turn, "reason": reason if reason is not None else STOP})


def tool_turn(turn: int = 1, call_id: str = "call_1", *, user_id: str = "u1") -> list[Event]:
    """A whole turn: the user asks, the model calls one tool, gets its result, then answers."""
    return [
        user("read a", id=user_id),
        assistant(turn, 1, call_block(call_id), id=f"a{turn}.1"),
        tool_call(turn, 1, call_id),
        tool_result(turn, 1, call_id, id=f"r{turn}"),
        step_end(turn, 1),
        assistant(turn, 2, text("a says hi"), id=f"a{turn}.2"),
        step_end(turn, 2),
        turn_end(turn),
    ]


def line_of(seq: int, event: Event) -> str:
    """What a plain writer would put in the file (not our compact encoding)."""
    return json.dumps({"v": 1, "seq": seq, "type": event[0], "data": event[1]}) + "\n"


def write_log(path: Path, events: Sequence[Event]) -> Path:
    path.write_text("".join(line_of(seq, event) for seq, event in enumerate(events, 1)), encoding="utf-8")
    return path


def open_session(path: Path, events: Sequence[Event] = ()) -> Session:
    session = Session.open(path, fsync=False)
    for event_type, data in events:
        session.append(event_type, data)
    return session


OPEN_CALL = [user(), assistant(1, 1, call_block("call_1"))]
CALLED = [*OPEN_CALL, tool_call(1, 1, "call_1")]
RESOLVED = [*CALLED, tool_result(1, 1, "call_1")]


def record_tool_turn(session: Session) -> None:
    """What the loop writes for a turn with a failed attempt, a retry, one tool call and a final answer."""
    turn = session.next_turn()
    session.append_user_message("what is in a?", id="u1")
    session.append_attempt(
        turn,
        1,
        1,
        [BlockStart(0, "tool-call"), ToolCallDelta(0, "", "read_file", '{"pa')],
        Failure("STREAM_CLOSED", "the bytes ended before [DONE]"),
    )
    session.append_retry(turn, 1, 1, 3, 500.0, Failure("STREAM_CLOSED", "the bytes ended before [DONE]"))
    session.append_assistant_message(
        turn,
        1,
        content=[TextBlock("Let me look."), ToolCallBlock("call_1", "read_file", '{"path":"a"}')],
        provider="openai",
        model="gpt-4o",
        usage=Usage(10, 5),
        finish=FinishReason("tool-calls"),
        id="a1",
    )
    session.append_tool_call(turn, 1, "call_1", "read_file", '{"path":"a"}')
    session.append_tool_result(turn, 1, "call_1", "a: 1 — ünïcode\u2028line", id="r1")
    session.append_step_end(turn, 1)
    session.append_assistant_message(
        turn,
        2,
        content=[reasoning("a holds 1"), text("a holds 1.")],
        provider="openai",
        model="gpt-4o",
        usage=None,
        finish={"kind": "stop"},
        id="a2",
    )
    session.append_step_end(turn, 2)
    session.append_turn_end(turn, {"kind": "stop"})


def broken_turn(turn: int) -> list[Event]:
    """What an older writer left: a tool call closed with ``id:""`` and its pair (anchor P4)."""
    return [
        user("read b", id=f"u{turn}"),
        assistant(turn, 1, call_block(""), id=f"a{turn}"),
        tool_call(turn, 1, ""),
        tool_result(turn, 1, "", id=f"r{turn}"),
        step_end(turn, 1),
        turn_end(turn),
    ]
