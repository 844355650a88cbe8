"""The default chain's fast path gives exactly the rule chain's chunks (docs/decisions/0050-fast-path.md).

The oracle is the rule chain itself: ``rules=protocol_rules(limits)`` is a custom chain, so it runs the general path
(the stage operators one after the other), while no ``rules=`` runs ``operators.extend.default_chain``. Compared with
anomalies on (which keeps everything), on every shared stream at several read sizes and small limits, on generated
streams of the three formats, and on mutated streams. Gemini's: ``test_fast_path_gemini.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from corpus import MESSAGES_STREAMS, PEER_FORMAT_STREAMS, PEER_STREAMS, REAL_STREAMS, RESPONSES_STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import FRAMINGS, frame, splits, streams

import pipeline
from operators import Chunk, Format, Limits
from scripts import fuzz, fuzz_fast_path

FOLDERS = [REAL_STREAMS, PEER_STREAMS, MESSAGES_STREAMS, RESPONSES_STREAMS, PEER_FORMAT_STREAMS]
STREAMS = sorted(path for folder in FOLDERS for path in folder.rglob("*.sse"))
SMALL = Limits(max_event_bytes=256, max_arguments_bytes=64, max_text_bytes=64, max_tool_calls=2)


def both(pieces: bytes | list[bytes], limits: Limits | None = None, format: Format | None = None,
         ) -> tuple[list[Chunk], list[Chunk]]:
    fast = pipeline.collect(pieces, anomalies=True, limits=limits, format=format)
    general = pipeline.collect(pieces, anomalies=True, limits=limits, format=format,
                               rules=pipeline.protocol_rules(limits))
    return fast, general


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def test_every_shared_stream_is_read() -> None:
    assert len(STREAMS) >= 244


@pytest.mark.slow
@pytest.mark.parametrize("path", STREAMS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_the_fast_path_gives_the_rule_chains_chunks_on_every_shared_stream_at_every_read_size(path: Path) -> None:
    data = path.read_bytes()
    for size in (1, 2, 7, 64, 4096, max(len(data), 1)):
        for limits in (None, SMALL) if size in (7, 4096) else (None,):
            fast, general = both(cut(data, size), limits)
            assert fast == general, (size, limits)
    for limits in (None, SMALL):  # one event per read, as a live stream arrives
        fast, general = both(fuzz_fast_path.event_reads(data), limits)
        assert fast == general, ("events", limits)


def test_the_batches_carry_the_rule_chains_items_in_order() -> None:
    path = REAL_STREAMS
    for stream in sorted(path.glob("*.sse"))[:12]:
        pieces = cut(stream.read_bytes(), 64)
        seen: dict[str, list[Any]] = {"fast": [], "general": []}
        pipeline.translate_batches(pieces).subscribe(on_next=seen["fast"].extend)
        pipeline.translate_batches(pieces, rules=pipeline.protocol_rules()).subscribe(on_next=seen["general"].extend)
        assert seen["fast"] == seen["general"], stream.name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_generated_chat_streams_in_any_framing_and_split_give_the_rule_chains_chunks(data: st.DataObject) -> None:
    body = frame(data.draw(streams()), data.draw(FRAMINGS))
    pieces = data.draw(splits(body))
    limits = data.draw(st.sampled_from([None, SMALL]))
    fast, general = both(pieces, limits)
    assert fast == general


def _event(name: str | None, payload: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


TEXTS = st.text(st.characters(exclude_categories=["Cs"]), max_size=5)
IDS = st.sampled_from(["call_a", "call_b", "", None, 3])


@st.composite
def messages_streams(draw: st.DrawFn) -> bytes:
    """Blocks of text, thinking and tool_use, deltas interleaved and sometimes wrong (a delta of another kind, an
    index never started, a non-string text), names or no names, with or without the end."""
    named = draw(st.booleans())
    out = [_event("message_start" if named else None,
                  {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}})]
    kinds = draw(st.lists(st.sampled_from(["text", "thinking", "tool_use"]), min_size=1, max_size=3))
    for index, kind in enumerate(kinds):
        block: dict[str, Any] = {"type": kind}
        if kind == "tool_use":
            block.update(id=draw(IDS), name=draw(st.sampled_from(["Glob", "", None])), input={})
        out.append(_event("content_block_start" if named else None,
                          {"type": "content_block_start", "index": index, "content_block": block}))
    for _ in range(draw(st.integers(0, 14))):
        index = draw(st.integers(0, len(kinds)))
        delta_kind = draw(st.sampled_from(["text_delta", "thinking_delta", "input_json_delta", "signature_delta"]))
        field = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json",
                 "signature_delta": "signature"}[delta_kind]
        value = draw(st.one_of(TEXTS, st.just(None))) if draw(st.integers(0, 9)) == 0 else draw(TEXTS)
        out.append(_event("content_block_delta" if named else None,
                          {"type": "content_block_delta", "index": index, "delta": {"type": delta_kind, field: value}}))
    if draw(st.booleans()):
        out.append(_event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                            "usage": {"output_tokens": 5}}))
        out.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


@st.composite
def responses_streams(draw: st.DrawFn) -> bytes:
    out = [_event("response.created", {"type": "response.created", "response": {"status": "in_progress"}})]
    calls = draw(st.integers(0, 2))
    for index in range(calls):  # a function call or a custom tool call (decision 0072)
        item_type = draw(st.sampled_from(["function_call", "custom_tool_call"]))
        item = {"type": item_type, "call_id": draw(IDS), "name": "Glob", "arguments": "", "input": ""}
        out.append(_event("response.output_item.added",
                          {"type": "response.output_item.added", "output_index": index, "item": item}))
    kinds = ["response.output_text.delta", "response.reasoning_summary_text.delta", "response.refusal.delta",
             "response.function_call_arguments.delta", "response.custom_tool_call_input.delta"]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(kinds))
        payload: dict[str, Any] = {"type": kind, "delta": draw(TEXTS)}
        if kind.startswith(("response.function_call", "response.custom_tool_call")):
            payload["output_index"] = draw(st.integers(0, calls))
        out.append(_event(kind if draw(st.booleans()) else None, payload))
    if draw(st.booleans()):
        usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
        out.append(_event("response.completed",
                          {"type": "response.completed", "response": {"status": "completed", "usage": usage}}))
    return b"".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_generated_messages_and_responses_streams_in_any_split_give_the_rule_chains_chunks(
    data: st.DataObject,
) -> None:
    format: Format | None = data.draw(st.sampled_from(["messages", "responses", None]))
    body = data.draw(messages_streams() if format == "messages" or (format is None and data.draw(st.booleans()))
                     else responses_streams())
    pieces = data.draw(splits(body))
    limits = data.draw(st.sampled_from([None, SMALL]))
    fast, general = both(pieces, limits, format)
    assert fast == general
    fast, general = both(fuzz_fast_path.event_reads(body), limits, format)  # one event per read, as live
    assert fast == general


def test_mutated_shared_streams_give_the_rule_chains_chunks() -> None:
    rng = random.Random(24)
    seeds = [path.read_bytes()[: fuzz.MAX_LEN] for path in STREAMS]
    for _ in range(300):
        data = fuzz.mutate(rng, rng.choice(seeds), seeds)
        fuzz.TARGETS["fast_path"](data)


def test_reads_longer_than_the_framing_slice_give_the_rule_chains_chunks_also_after_the_end() -> None:
    event = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 200 + b'"}}]}\n\n'
    done = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    body = event * 400 + done + event * 400  # data after [DONE]: reported only from the framing pass that read it
    for size in (len(body), 100_000, 70_000, 65_536, 4096):
        fast, general = both(cut(body, size))
        assert fast == general, size
        assert any(getattr(chunk, "kind", None) == "payload-after-done" for chunk in fast) or size == 4096


def _runs(format: Format, kind: str) -> tuple[bytes, bytes, bytes]:
    """A response whose first ``kind`` delta (``text`` or ``reasoning``) opens its block, then 30 more deltas of that
    block of 10 bytes each, then the end: (the opening, the run, the end)."""
    word = "abcdéfgh"  # 10 UTF-8 bytes, a 2-byte character among them
    if format == "chat":
        field = "content" if kind == "text" else "reasoning_content"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _event(None, {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        return (chunk({"role": "assistant", field: word}), b"".join(chunk({field: word}) for _ in range(30)),
                chunk({}, "stop") + b"data: [DONE]\n\n")
    if format == "messages":
        block, delta_type, field = ("text", "text_delta", "text") if kind == "text" else (
            "thinking", "thinking_delta", "thinking")
        delta = _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": delta_type, field: word}})
        opening = (_event("message_start", {"type": "message_start", "message": {"id": "m", "usage": {}}})
                   + _event("content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": block, field: ""}}) + delta)
        end = (_event("content_block_stop", {"type": "content_block_stop", "index": 0})
               + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
               + _event("message_stop", {"type": "message_stop"}))
        return opening, delta * 30, end
    event_type = "response.output_text.delta" if kind == "text" else "response.reasoning_summary_text.delta"
    delta = _event(None, {"type": event_type, "delta": word})
    end = _event(None, {"type": "response.completed", "response": {"status": "completed"}})
    return _event(None, {"type": "response.created", "response": {}}) + delta, delta * 30, end


@pytest.mark.parametrize("kind", ["text", "reasoning"])
@pytest.mark.parametrize("format", ["chat", "messages", "responses"])
def test_a_run_of_deltas_crossing_max_text_bytes_inside_one_read_ends_as_the_rule_chain_ends_it(
    format: Format, kind: str
) -> None:
    opening, run, end = _runs(format, kind)
    for limit in (95, 100, 175, 1000):  # crossed inside the run, at a delta's end, later, never
        limits = Limits(max_text_bytes=limit)
        for pieces in ([opening, run, end], [opening, run + end], [opening, *cut(run, 333), end]):
            fast, general = both(pieces, limits, format)
            assert fast == general, (limit, len(pieces))
            finish = fast[-1]
            crossed = getattr(getattr(finish, "reason", None), "failure", None)
            assert (crossed is not None and crossed.code == "LIMIT_EXCEEDED") == (limit < 310), (limit, finish)


@pytest.mark.parametrize("odd", [b'"delta":{"type":"text_delta","text":"b","x":"\x91"}',
                                 b'"x\x91":1,"delta":{"type":"text_delta","text":"b"}',
                                 b'"delta":{"type":"text_delta","text":"b","x":1e999}'], ids=["value", "key", "number"])
def test_a_messages_delta_with_a_value_the_parser_refuses_is_refused_on_the_fast_path_too(odd: bytes) -> None:
    def delta(body: bytes) -> bytes:
        return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,' + body + b"}\n\n"

    opening = _runs("messages", "text")[0]
    plain = delta(b'"delta":{"type":"text_delta","text":"a"}')
    fast, general = both([opening + plain, plain + delta(odd) + plain], None, "messages")
    assert fast == general
    failure = getattr(getattr(fast[-1], "reason", None), "failure", None)
    assert failure is not None
    assert failure.code == "MALFORMED_RESPONSE"


def _delta(index: int, text: str | None = None, raw: bytes | None = None) -> bytes:
    body = raw if raw is not None else json.dumps(
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
        separators=(",", ":")).encode()
    return b"event: content_block_delta\ndata: " + body + b"\n\n"


@pytest.mark.parametrize("odd", [
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a" }}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"}}"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\ud800"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\xff"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\r"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\n"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}\n\ndata: {"type":"ping"}',
    b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}',
])
def test_messages_text_deltas_read_one_per_read_by_their_shape_give_the_rule_chains_chunks(odd: bytes) -> None:
    """After a usual text delta the Messages fast path reads the next ones by its shape (``operators/messages/
    _fast.py``): an odd one among them (a repeated key, a space, an escaped quote, a lone surrogate, invalid UTF-8, an
    empty or null text, a line end, another block, an event over ``max_event_bytes``) gives the rule chain's chunks, as
    do the usual ones after it, at every limit."""
    start = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{}}}\n\n'
    blocks = b"".join(
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"%s","text":""}}\n\n' % (index, kind) for index, kind in ((0, b"text"), (1, b"text")))
    stop = (b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}}'
            b'\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
    reads = [start, blocks, *(_delta(0, f"t{n} \u00e9\"") for n in range(3)), _delta(0, raw=odd),
             *(_delta(0, f"u{n}") for n in range(3)), _delta(0, "a longer text " * 3), _delta(0, "u4"),
             _delta(1, "other"), _delta(0, "back"), stop]
    for limits in (None, Limits(max_text_bytes=20), Limits(max_event_bytes=len(_delta(0, "u0")) + 8)):
        fast, general = both(reads, limits, "messages")
        assert fast == general, limits
