"""``ChatRepair`` alone (sans I/O): a sound stream passes byte for byte however its bytes are split; a repaired one is
the same whatever the split; events after ``[DONE]`` are not read."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from corpus import PEER_STREAMS, REAL_STREAMS
from gateway import sse_event
from hypothesis import given
from hypothesis import strategies as st
from test_faithful_chat import _NEVER, _SEED, KEEP

import pipeline
from pipeline.sanitize import ChatRepair


def _body(events: Sequence[object]) -> bytes:
    return b"".join(sse_event(e) for e in events)


def _run(body: bytes, cuts: list[int], **options: object) -> tuple[bytes, ChatRepair]:
    repair = ChatRepair(**options)  # type: ignore[arg-type]
    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    out = b"".join(repair.feed(p) for p in pieces) + repair.close()
    return out, repair


@given(st.sampled_from(sorted(KEEP)), st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_a_sound_stream_passes_byte_for_byte_however_it_is_split(case: str, cuts: list[int]) -> None:
    body = _body(KEEP[case])
    out, repair = _run(body, cuts)
    assert out == body
    assert repair.failure is None


@given(st.lists(st.integers(min_value=0, max_value=3000), max_size=12))
def test_a_repaired_stream_is_the_same_whatever_the_split(cuts: list[int]) -> None:
    body = _body(_SEED)
    whole, _ = _run(body, [])
    assert _run(body, cuts)[0] == whole
    calls = [json.loads(line[6:]) for line in whole.decode().split("\n\n") if line.startswith("data: {")]
    entries = [e for c in calls for ch in c["choices"] for e in ch["delta"].get("tool_calls", [])]
    assert entries[0]["id"] == "call_1"
    assert all("id" not in e and "name" not in e["function"] for e in entries[1:])


def test_a_never_identified_call_is_a_failure_with_nothing_released() -> None:
    out, repair = _run(_body(_NEVER), [])
    assert out == b""
    assert repair.failure is not None
    assert repair.failure.code == "MALFORMED_TOOL_CALL"


def test_nothing_after_done_is_read_and_a_missing_done_is_added() -> None:
    body = _body(KEEP["empty"])
    out, _ = _run(body + b'data: {"stray": true}\n\n', [])
    assert out == body
    without_done = body.replace(b"data: [DONE]\n\n", b"")
    assert _run(without_done, [])[0] == body


def test_the_key_echoed_by_the_upstream_is_not_forwarded() -> None:
    key = "sk-secret-key-12345"
    body = _body([{"id": "x", "choices": [{"index": 0, "delta": {"content": f"your key is {key}"},
                                           "finish_reason": None}]}, *KEEP["empty"][1:]])
    out, _ = _run(body, [], api_key=key)
    assert key.encode() not in out
    assert b"[redacted]" in out




def _reading(body: bytes) -> tuple[object, ...]:
    message = pipeline.assemble(pipeline.collect(body))
    calls = tuple((c.id, c.name, c.arguments) for c in message.tool_calls)
    finish = message.finish
    return message.text, calls, finish.kind if finish else None, finish.code if finish else None


def test_the_library_reads_every_recorded_stream_the_same_after_its_repair() -> None:
    checked = 0
    for path in sorted(p for folder in (REAL_STREAMS, PEER_STREAMS) for p in folder.glob("*.sse")):
        body = path.read_bytes()
        repaired, repair = _run(body, [])
        if repair.failure is not None:
            continue  # refused (an error before or after the first byte): not a stream to re-read
        assert _reading(repaired) == _reading(body), path.name
        checked += 1
    assert checked >= 60


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_an_event_shaped_like_the_last_text_delta_but_carrying_a_call_still_meets_the_rules(
    separators: tuple[str, str],
) -> None:
    payload = {"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}
    text = b"data: " + json.dumps(payload, separators=separators).encode() + b"\n\n"
    repair = ChatRepair()
    assert repair.feed(text) + repair.feed(text) == text + text
    assert repair._shape[0]  # the shape was learnt: the next event takes the shape path
    prefix, suffix = text.split(b'"a"')
    smuggled = prefix + b'"b","tool_calls":[{"index":0,"function":{"arguments":"{}"}}],"x":""' + suffix
    finish = sse_event({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    out = b"".join(repair.feed(e) for e in (smuggled, finish, sse_event("[DONE]")))
    assert repair.failure is not None
    assert repair.failure.code == "MALFORMED_TOOL_CALL"  # the call had no id: seen, not passed as text
    assert out.endswith(b"\n\n")
    assert b"MALFORMED_TOOL_CALL" in out
