"""The repairers agree with the library on malformed bytes (issue 30, decision 0070): what the client gets through
the transport's repairer, read back by the library, is the library's reading of the upstream's own bytes (or an
error in both), at every read size. Each case is one defect the ``repair`` fuzz target found."""

from __future__ import annotations

import json

import pytest
from repair_helpers import SPLITS
from scripts.fuzz_repair import HTTP_ERROR, disagreement, reading, transported

HEAD = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}


def chat(*choices: dict[str, object], **extra: object) -> bytes:
    return b"data: " + json.dumps({**HEAD, "choices": list(choices), **extra}).encode() + b"\n\n"


def delta(index: int = 0, finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"index": index, "delta": fields, "finish_reason": finish}


def call(index: object, fragment: str, **identity: object) -> dict[str, object]:
    entry: dict[str, object] = {"index": index, "function": {"arguments": fragment}, **identity}
    if "name" in identity:
        entry["function"] = {"name": identity.pop("name"), "arguments": fragment}
        entry.pop("name")
    return entry


def through(body: bytes, format: str = "chat") -> list[tuple[object, ...]]:
    """The library's reading of what the client gets, at each split size."""
    out = []
    for size in SPLITS:
        given = transported(body, format, [size])
        out.append(("error", "HTTP") if given == HTTP_ERROR else reading(given, format))
    return out


TEXT = chat(delta(content="ok")) + chat(delta(finish="stop"))
USAGE = chat(usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})


@pytest.mark.parametrize("cut", [1, 9, len(USAGE) - 2, len(USAGE) - 1])
def test_a_last_event_cut_inside_is_dropped_not_completed_by_the_added_done(cut: int) -> None:
    body = TEXT + USAGE[:cut]  # the connection cut while the trailing usage chunk was being sent
    assert reading(body, "chat") == ("ok", "", (), "stop")
    for size in SPLITS:
        given = transported(body, "chat", [size])
        assert given == TEXT + b"data: [DONE]\n\n"
    assert disagreement(body, "chat") is None


def test_a_cr_held_back_at_the_end_still_ends_the_last_event() -> None:
    body = (TEXT + b"data: [DONE]").replace(b"\n", b"\r\n") + b"\r\n\r"  # the final LF never came
    assert reading(body, "chat") == ("ok", "", (), "stop")
    assert set(through(body)) == {("ok", "", (), "stop")}
