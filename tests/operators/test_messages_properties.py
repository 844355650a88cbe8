"""Invariants of parse_messages_sse under the protocol rules: any split of a fixture's bytes gives the same chunks, and
no tool-call block-end ever lacks a non-empty id and name, whatever identity the stream gives."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from corpus import MESSAGES_STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators import BlockEnd, Chunk, Finish, ReasoningBlock, ToolCallBlock, chunk_from_dict
from operators.messages import parse_messages_sse
from pipeline.compose import apply, bytes_source, protocol_rules, to_chunks

FIXTURES = MESSAGES_STREAMS
STREAMS = sorted(FIXTURES.glob("*.sse"))
DATA = {path.name: path.read_bytes() for path in STREAMS}

SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chunks(pieces: list[bytes]) -> list[Chunk]:
    out: list[Chunk] = []
    rules = protocol_rules()
    to_chunks(anomalies=True)(apply(parse_messages_sse()(bytes_source(pieces)), rules)).subscribe(out.append)
    return out


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.skipif(not STREAMS, reason=f"no Messages streams under {FIXTURES}")
@SLOW
@given(name=st.sampled_from(sorted(DATA) or ["-"]), cuts=st.lists(st.integers(min_value=0, max_value=200_000)))
def test_any_split_of_a_fixture_gives_the_same_chunks(name: str, cuts: list[int]) -> None:
    data = DATA[name]
    scaled = [cut % (len(data) + 1) for cut in cuts]
    assert chunks(split_at(data, scaled)) == chunks([data])


GOOD = st.sampled_from(["toolu_1", "toolu_2", "Glob", "Read"])
BAD = st.one_of(st.none(), st.just(""), st.text(max_size=6), st.integers(), st.just(["x"]))
IDENTITY = st.one_of(GOOD, GOOD, GOOD, BAD)  # mostly identified, so block-ends are common


@st.composite
def tool_streams(draw: st.DrawFn) -> bytes:
    """A Messages stream of up to three tool_use blocks with drawn identity (possibly repeated in later starts),
    interleaved argument deltas, and a drawn ending."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 3}}}
    ]
    count = draw(st.integers(min_value=1, max_value=3))
    for index in range(count):
        block: dict[str, Any] = {"type": "tool_use", "input": draw(st.sampled_from([{}, {"a": 1}]))}
        for key in ("id", "name"):
            value = draw(IDENTITY)
            if value is not None or draw(st.booleans()):
                block[key] = value
        events.append({"type": "content_block_start", "index": index, "content_block": block})
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        index = draw(st.integers(min_value=0, max_value=count - 1))
        if draw(st.booleans()):
            fragment = draw(st.sampled_from(["", "{", '"k":', "1}"]))
            delta = {"type": "input_json_delta", "partial_json": fragment}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        else:
            block = {"type": "tool_use", "id": draw(IDENTITY), "name": draw(IDENTITY)}
            events.append({"type": "content_block_start", "index": index, "content_block": block})
    events.extend({"type": "content_block_stop", "index": i} for i in range(draw(st.integers(0, count))))
    reason = draw(st.sampled_from(["tool_use", "max_tokens", "end_turn", None]))
    events.append({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 4}})
    if draw(st.booleans()):
        events.append({"type": "message_stop"})
    named = draw(st.booleans())
    return "".join(
        (f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events
    ).encode()


@SLOW
@given(data=tool_streams(), cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=8))
def test_no_tool_call_block_end_without_a_non_empty_id_and_name(data: bytes, cuts: list[int]) -> None:
    out = chunks(split_at(data, cuts))
    for chunk in out:
        if isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
            assert isinstance(chunk.block.id, str)
            assert chunk.block.id
            assert isinstance(chunk.block.name, str)
            assert chunk.block.name
    assert isinstance(out[-1], Finish)
    assert sum(isinstance(c, Finish) for c in out) == 1


OPAQUE = st.one_of(st.just(""), st.text(alphabet="ABCxyz+/=", min_size=1, max_size=12))


@st.composite
def thinking_streams(draw: st.DrawFn) -> tuple[bytes, list[ReasoningBlock]]:
    """Thinking and redacted_thinking blocks (signatures given at the start and in drawn signature deltas) between
    text blocks, with the reasoning blocks the rules must give back: one per block, the last non-empty signature."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "m", "content": []}}]
    expected: list[ReasoningBlock] = []
    for index in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["thinking", "redacted_thinking", "text"]))
        if kind == "redacted_thinking":
            data = draw(OPAQUE)
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": kind, "data": data}})
            if data:
                expected.append(ReasoningBlock("", encrypted=data))
        elif kind == "thinking":
            signature = draw(OPAQUE)
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": kind, "thinking": "", "signature": signature}})
            texts = draw(st.lists(st.text(alphabet="ab ", min_size=1, max_size=4), max_size=3))
            for text in texts:
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "thinking_delta", "thinking": text}})
            for sig in draw(st.lists(OPAQUE, max_size=2)):
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "signature_delta", "signature": sig}})
                signature = sig or signature
            if texts or signature:
                expected.append(ReasoningBlock("".join(texts), signature=signature or None))
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": "ok"}})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "content_block_start", "index": 9, "content_block": {"type": "text", "text": "end"}})
    events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}})
    events.append({"type": "message_stop"})
    encoded = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return encoded, expected


@SLOW
@given(case=thinking_streams(), cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=8))
def test_every_thinking_block_keeps_its_last_signature_and_reads_back_from_json(
    case: tuple[bytes, list[ReasoningBlock]], cuts: list[int]
) -> None:
    data, expected = case
    out = chunks(split_at(data, cuts))
    blocks = [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ReasoningBlock)]
    assert blocks == expected
    assert [chunk_from_dict(c.to_dict()) for c in out] == out
