"""Limits: whatever arrives, one response ends with ``LIMIT_EXCEEDED`` once it crosses a bound, after the usage seen,
with no block-end for an unfinished block and nothing past the limit kept. Fed through ``pipeline.collect`` from
generators, so the flood is never materialised and the test can see how far the source was read (a synchronous
source stops at the read that crossed the limit, whichever rule crossed it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pipeline
from operators import BlockEnd, Code, Finish, Limits, ReasoningDelta, TextDelta, ToolCallDelta, UsageChunk

Json = dict[str, Any]
USAGE: Json = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}


def event(value: Json) -> bytes:
    return b"data: " + json.dumps(value).encode() + b"\n\n"


def text(content: str) -> Json:
    return {"choices": [{"index": 0, "delta": {"content": content}}]}


def call(index: int, arguments: str, *, first: bool = False) -> Json:
    wire: Json = {"index": index, "function": {"arguments": arguments}}
    if first:
        wire = {"index": index, "id": f"call_{index}", "function": {"name": "f", "arguments": arguments}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [wire]}}]}


class Reads:
    """A byte source that counts how many pieces were taken from it."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self.pieces = pieces
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        for piece in self.pieces:
            self.taken += 1
            yield piece


def the_finish(chunks: list[Any]) -> Finish:
    assert chunks, "no chunk at all"
    last = chunks[-1]
    assert isinstance(last, Finish)
    assert [c for c in chunks if isinstance(c, Finish)] == [last]
    return last


def assert_limit(chunks: list[Any], name: str, what: str) -> str:
    reason = the_finish(chunks).reason
    assert reason.kind == "error"
    assert reason.failure is not None
    assert reason.failure.code == Code.LIMIT_EXCEEDED
    assert name in reason.failure.message
    assert what in reason.failure.message
    assert not any(isinstance(c, BlockEnd) for c in chunks)
    return reason.failure.message


def endless(head: bytes, piece: bytes) -> Iterator[bytes]:
    yield head
    while True:
        yield piece


# -- one SSE line, one SSE event --------------------------------------------------------------------------------------


def test_a_stream_with_no_newline_ends_with_limit_exceeded_after_about_one_limit() -> None:
    limits = Limits(max_event_bytes=64 * 1024)
    source = Reads(endless(b"", b"x" * 4096))
    chunks = pipeline.collect(source, limits=limits)

    message = assert_limit(chunks, "max_event_bytes", "one SSE line")
    assert "over max_event_bytes=65536" in message
    assert source.taken == 1 + 17  # the empty head, 16 reads fill the limit exactly, the 17th crosses it


def test_one_long_data_line_ends_with_limit_exceeded_after_the_usage_seen() -> None:
    limits = Limits(max_event_bytes=10_000)
    source = Reads(endless(event(USAGE) + event(text("hi")) + b"data: ", b"y" * 3000))
    chunks = pipeline.collect(source, limits=limits)

    assert_limit(chunks, "max_event_bytes", "one SSE line")
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["hi"]
    assert [c.usage.input_tokens for c in chunks if isinstance(c, UsageChunk)] == [7]
    assert chunks.index(next(c for c in chunks if isinstance(c, UsageChunk))) == len(chunks) - 2
    assert source.taken == 5


def test_a_long_line_within_one_read_is_refused_and_events_before_it_are_emitted() -> None:
    limits = Limits(max_event_bytes=1000)
    body = event(text("a")) + b"data: " + b"z" * 5000 + b"\n\n" + event(text("never"))
    chunks = pipeline.collect([body], limits=limits)

    message = assert_limit(chunks, "max_event_bytes", "one SSE line")
    assert "reached 1001 bytes" in message  # the first byte past the limit, whatever the reads
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["a"]


def test_many_data_lines_joined_over_the_limit_end_with_limit_exceeded() -> None:
    limits = Limits(max_event_bytes=1000)
    source = Reads(endless(b"", b"data: " + b"q" * 90 + b"\n"))
    chunks = pipeline.collect(source, limits=limits)

    message = assert_limit(chunks, "max_event_bytes", "one SSE event")
    assert "reached 1091 bytes" in message  # 12 values of 90 bytes and 11 separators
    assert source.taken == 13


def test_an_event_exactly_at_the_limit_is_accepted() -> None:
    payload = json.dumps(text("ok")).encode()
    limits = Limits(max_event_bytes=len(payload) + len(b"data: "))
    chunks = pipeline.collect([b"data: " + payload + b"\n\ndata: [DONE]\n\n"], limits=limits)
    assert the_finish(chunks).reason.kind == "stop"


# -- arguments, tool calls, text -------------------------------------------------------------------------------------


def test_arguments_past_the_limit_end_with_limit_exceeded_and_are_not_kept() -> None:
    limits = Limits(max_arguments_bytes=1000)
    fragments = (event(call(0, "é" * 50)) for _ in range(1000))  # 100 UTF-8 bytes each
    source = Reads(iter([event(USAGE) + event(call(0, "", first=True)), *fragments]))
    chunks = pipeline.collect(source, limits=limits)

    message = assert_limit(chunks, "max_arguments_bytes", "the arguments of one tool call")
    assert "reached 1100 bytes, over max_arguments_bytes=1000" in message
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert sum(len(d.arguments_delta.encode()) for d in deltas) == 1000
    assert isinstance(chunks[-2], UsageChunk)


def test_a_tool_call_past_max_tool_calls_ends_with_limit_exceeded_and_is_not_started() -> None:
    limits = Limits(max_tool_calls=3)
    source = Reads(event(call(i, "{}", first=True)) for i in range(1000))
    chunks = pipeline.collect(source, limits=limits)

    message = assert_limit(chunks, "max_tool_calls", "tool calls in one response")
    assert "reached 4, over max_tool_calls=3" in message
    starts = [c for c in chunks if c.type == "block-start"]
    assert len(starts) == 3


def test_endless_text_ends_with_limit_exceeded_after_the_usage_seen() -> None:
    limits = Limits(max_text_bytes=10_000)
    reasoning: Json = {"choices": [{"index": 0, "delta": {"reasoning_content": "r" * 100}}]}
    source = Reads(iter([event(USAGE) + event(reasoning), *(event(text("t" * 100)) for _ in range(1000))]))
    chunks = pipeline.collect(source, limits=limits)

    message = assert_limit(chunks, "max_text_bytes", "the text and reasoning of one response")
    assert "reached 10100 bytes" in message
    kept = sum(len(c.text) for c in chunks if isinstance(c, (TextDelta, ReasoningDelta)))
    assert kept == 10_000
    assert isinstance(chunks[-2], UsageChunk)


def test_text_is_counted_in_utf8_bytes() -> None:
    limits = Limits(max_text_bytes=10)
    chunks = pipeline.collect([event(text("😀😀")) + event(text("😀")) + b"data: [DONE]\n\n"], limits=limits)
    assert "reached 12 bytes" in assert_limit(chunks, "max_text_bytes", "text")
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["😀😀"]


def test_text_within_the_limit_is_assembled_as_before() -> None:
    limits = Limits(max_text_bytes=8)
    chunks = pipeline.collect([event(text("😀😀")) + b"data: [DONE]\n\n"], limits=limits)
    assert the_finish(chunks).reason.kind == "stop"
    assert pipeline.assemble(chunks).text == "😀😀"


# -- nesting ---------------------------------------------------------------------------------------------------------


def test_a_payload_nested_too_deep_is_malformed_and_the_chunk_before_it_is_emitted() -> None:
    deep = b'data: {"error": ' + b"[" * 100_000 + b"\n\n"
    chunks = pipeline.collect([event(text("good")) + deep])

    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["good"]
    reason = the_finish(chunks).reason
    assert reason.failure is not None
    assert reason.failure.code == Code.MALFORMED_RESPONSE


# -- a later stage's finish stops a synchronous source too ------------------------------------------------------------


def test_endless_arguments_from_a_generator_stop_being_read_at_the_limit() -> None:
    limits = Limits(max_arguments_bytes=1000)
    source = Reads(endless(event(call(0, "", first=True)), event(call(0, "x" * 100))))
    chunks = pipeline.collect(source, limits=limits)  # returns: the endless generator is no longer drained

    assert_limit(chunks, "max_arguments_bytes", "the arguments of one tool call")
    assert source.taken == 12  # the head, ten fragments within the limit, the one crossing it


def test_endless_text_from_a_generator_stops_being_read_at_the_limit() -> None:
    limits = Limits(max_text_bytes=1000)
    source = Reads(endless(event(USAGE), event(text("t" * 100))))
    chunks = pipeline.collect(source, limits=limits)

    assert_limit(chunks, "max_text_bytes", "the text and reasoning of one response")
    assert source.taken == 12


def test_endless_tool_calls_from_a_generator_stop_being_read_at_the_limit() -> None:
    limits = Limits(max_tool_calls=3)
    source = Reads(event(call(i, "{}", first=True)) for i in range(10**9))
    chunks = pipeline.collect(source, limits=limits)

    assert_limit(chunks, "max_tool_calls", "tool calls in one response")
    assert source.taken == 4
