"""The Responses terminal event repeats the whole output on one line: it is read within the limits its own content
already passed (docs/decisions/0050-fast-path.md), so every response the text limit admits completes."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pipeline
from operators import Finish, Limits

KiB = 1024


def event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def answer(text: str, piece: int, *, terminal_repeats: bool = True) -> bytes:
    """A Responses stream whose text arrives in deltas of ``piece`` characters and whose ``response.completed``
    repeats it whole (as OpenAI's does), with its usage."""
    out = [
        event("response.created", response={"status": "in_progress"}),
        event("response.output_item.added", output_index=0, item={"type": "message", "id": "msg_1"}),
    ]
    out += [event("response.output_text.delta", output_index=0, item_id="msg_1", delta=text[i : i + piece])
            for i in range(0, len(text), piece)]
    output = [{"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": text}]}]
    usage = {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}
    response = {"status": "completed", "usage": usage, "output": output if terminal_repeats else []}
    out.append(event("response.completed", response=response))
    return b"".join(out)


def finish_of(data: bytes, limits: Limits | None = None, *, general: bool = False) -> Finish:
    rules = pipeline.protocol_rules(limits) if general else None
    pieces = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    last = pipeline.collect(pieces, format="responses", limits=limits, rules=rules)[-1]
    assert isinstance(last, Finish)
    return last


@pytest.mark.parametrize("general", [False, True], ids=["default chain", "rule chain"])
def test_a_1_2_mb_answer_completes_although_its_terminal_event_is_longer_than_max_event_bytes(general: bool) -> None:
    text = ("All work and no play makes Jack a dull boy. \u00e9\u4e2d\n" * 30_000)[:1_200_000]
    data = answer(text, 1000)
    assert max(len(line) for line in data.split(b"\n")) > Limits().max_event_bytes

    finish = finish_of(data, general=general)

    assert finish.reason.kind == "stop", finish.reason


@pytest.mark.parametrize("general", [False, True], ids=["default chain", "rule chain"])
def test_an_answer_at_the_text_limit_completes_and_one_byte_more_is_refused_by_the_text_limit(general: bool) -> None:
    limits = Limits(max_event_bytes=16 * KiB, max_text_bytes=256 * KiB)
    at_limit = "\x01\"\\" + "x" * (limits.max_text_bytes - 3)  # control characters take 6 bytes as JSON

    assert finish_of(answer(at_limit, 2000), limits, general=general).reason.kind == "stop"
    over = finish_of(answer(at_limit + "y", 2000), limits, general=general)
    assert over.reason.failure is not None
    assert "max_text_bytes" in over.reason.failure.message


def test_a_long_line_is_refused_when_no_admitted_content_makes_room_for_it() -> None:
    limits = Limits(max_event_bytes=16 * KiB)
    data = answer("short answer", 4) + event("response.in_progress", padding="x" * (200 * KiB))
    head = answer("short answer", 4, terminal_repeats=False).rsplit(b"event: response.completed", 1)[0]
    flood = head + event("response.in_progress", padding="x" * (200 * KiB))

    finish = finish_of(flood, limits)

    assert finish.reason.failure is not None
    assert "max_event_bytes" in finish.reason.failure.message
    assert finish_of(data, limits).reason.kind == "stop"  # the same line after the terminal event is never read


@pytest.mark.parametrize("general", [False, True], ids=["default chain", "rule chain"])
def test_the_terminal_event_is_admitted_whether_its_deltas_arrive_in_the_same_read_or_before(general: bool) -> None:
    # found by the fuzz harness: the widened line limit was read once per read, so a terminal line in the same read
    # as its deltas was refused while the same bytes split earlier were admitted
    limits = Limits(max_event_bytes=512, max_text_bytes=64 * KiB)
    data = answer("Sonoran food, in short. " * 200, 40)
    rules = pipeline.protocol_rules(limits) if general else None
    whole = pipeline.collect([data], format="responses", limits=limits, rules=rules)
    split = pipeline.collect([data[:700], data[700:]], format="responses", limits=limits, rules=rules)

    assert whole == split
    last = whole[-1]
    assert isinstance(last, Finish)
    assert last.reason.kind == "stop", last.reason
