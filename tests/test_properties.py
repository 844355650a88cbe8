"""The protocol's invariants, stated once and checked on generated streams (hypothesis):

1. any split of the bytes gives exactly the same chunks as the unsplit bytes (LF, CR and CRLF line ends alike);
2. null / "" / non-string / absent / repeated identity values in continuation deltas keep the established identity;
3. the order guarantees: block-start before its deltas, block-ends after all deltas, at most one usage right before
   the finish, exactly one finish and it is last, and no block-end at all when a tool call lacks its identity;
4. ``pipeline.translate`` never raises and always ends with exactly one finish, whatever the bytes;
5. under small ``Limits`` too, any split gives the same chunks, failures included; no two tool-call block-ends share
   an id; every ``--json`` line (``llm-stream replay --json``'s Printer) is strict JSON (no NaN, no Infinity).
"""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import attrs
from builders import F, delta, finish, tool, tools, usage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pipeline
from operators import (
    BlockEnd,
    BlockStart,
    Chunk,
    Code,
    Finish,
    FinishReason,
    Limits,
    ReasoningDelta,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from operators._classify_finish import EMPTY_RESPONSE_MESSAGE, map_finish_reason
from pipeline.cli._render import Printer

Json = dict[str, Any]

ABSENT: Any = object()
"""A field left out of the JSON."""

FAST = settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
"""Any text, including multi-byte UTF-8 characters (and line separators other than CR and LF)."""

NON_EMPTY = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=6)

IDENTITY_NOISE = st.sampled_from([ABSENT, None, "", 0, 7, True, ["call_x"], {"name": "Glob"}])
"""Identity values that must never change an established id or name."""

MALFORMED = st.sampled_from(
    ["{not json", "[1, 2]", '{"choices": "x"}', '{"choices": [], "usage": {"prompt_tokens": "5"}}']
)
"""Payloads that halt MALFORMED_RESPONSE: not JSON, or the wrong shape."""


# -- generated streams -----------------------------------------------------------------------------------------------


@attrs.frozen
class Call:
    """One generated tool call: its wire deltas and whether a non-empty id / name appears in them."""

    deltas: list[Json]
    has_id: bool
    has_name: bool
    id: str
    name: str
    arguments: str


@attrs.frozen
class Stream:
    payloads: list[Json | str]  # a str is a malformed payload
    done: bool
    calls: list[Call]
    reason: str | None
    usage_at: int | None
    malformed_at: int | None

    @property
    def completes(self) -> bool:
        """Whether the bytes reach ``Done``: [DONE], or the end after a finish_reason; no malformed payload."""
        return self.malformed_at is None and (self.done or self.reason is not None)


def identity_values(draw: st.DrawFn, value: str, count: int, *, given: bool) -> list[Any]:
    """One identity field over ``count`` deltas: noise before the first non-empty value (at a random delta when
    ``given``), then noise or the identical value again."""
    first = draw(st.integers(0, count - 1)) if given else count
    out: list[Any] = []
    for position in range(count):
        if position < first:
            out.append(draw(IDENTITY_NOISE))
        elif position == first:
            out.append(value)
        else:
            out.append(draw(st.one_of(IDENTITY_NOISE, st.just(value))))
    return out


def entry(index: int, id: Any, name: Any, arguments: Any) -> Json:
    given = (("id", id), ("name", name), ("arguments", arguments))
    fields = {key: value for key, value in given if value is not ABSENT}
    return tool(index, **fields)


@st.composite
def tool_calls(draw: st.DrawFn, index: int, *, always_identified: bool = False) -> Call:
    count = draw(st.integers(1, 5))
    has_id = always_identified or draw(st.sampled_from([True, True, True, False]))
    has_name = always_identified or draw(st.sampled_from([True, True, True, False]))
    call_id = f"call_{index}_" + draw(NON_EMPTY)
    name = draw(NON_EMPTY)
    ids = identity_values(draw, call_id, count, given=has_id)
    names = identity_values(draw, name, count, given=has_name)
    arguments = [draw(st.one_of(st.just(ABSENT), st.none(), TEXT)) for _ in range(count)]
    deltas = [tools(entry(index, i, n, a)) for i, n, a in zip(ids, names, arguments, strict=True)]
    joined = "".join(a for a in arguments if isinstance(a, str))
    return Call(deltas, has_id, has_name, call_id, name, joined)


@st.composite
def streams(draw: st.DrawFn, *, malformed: bool = True) -> Stream:
    queues: list[list[Json]] = [
        [delta(content=text) for text in draw(st.lists(TEXT, max_size=4))],
        [delta(reasoning_content=text) for text in draw(st.lists(TEXT, max_size=4))],
    ]
    calls = [draw(tool_calls(index)) for index in range(draw(st.integers(0, 3)))]
    queues.extend(list(call.deltas) for call in calls)

    payloads: list[Json | str] = [F] if draw(st.booleans()) else []
    while any(queues):
        waiting = [queue for queue in queues if queue]
        payloads.append(waiting[draw(st.integers(0, len(waiting) - 1))].pop(0))

    reason = draw(st.sampled_from([None, "stop", "tool_calls", "length", "content_filter"]))
    if reason is not None:
        payloads.append(finish(reason))
    usage_at: int | None = None
    if draw(st.booleans()):
        usage_at = len(payloads)
        payloads.append(usage(draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))))
    malformed_at: int | None = None
    if malformed and draw(st.sampled_from([False, False, False, False, True])):
        malformed_at = draw(st.integers(0, len(payloads)))
        payloads.insert(malformed_at, draw(MALFORMED))
        if usage_at is not None and malformed_at <= usage_at:
            usage_at += 1
    done = draw(st.sampled_from([True, True, True, False]))
    return Stream(payloads, done, calls, reason, usage_at, malformed_at)


@attrs.frozen
class Framing:
    eol: str = "\n"
    bom: bool = False
    comments: bool = False
    space: bool = True
    multiline: bool = False


FRAMINGS = st.builds(
    Framing,
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    bom=st.booleans(),
    comments=st.booleans(),
    space=st.booleans(),
    multiline=st.booleans(),
)


def frame(stream: Stream, framing: Framing = Framing()) -> bytes:
    """SSE bytes for the stream, UTF-8 kept as is (so a split can land inside a character)."""
    field = "data: " if framing.space else "data:"
    events: list[str] = []
    for value in [*stream.payloads, *(["[DONE]"] if stream.done else [])]:
        if isinstance(value, dict):
            text = json.dumps(value, ensure_ascii=False, indent=1 if framing.multiline else None)
        else:
            text = value
        lines = [f"{field}{line}" for line in text.split("\n")]
        if framing.comments:
            lines.insert(0, ": keep-alive")
        events.append("".join(f"{line}{framing.eol}" for line in lines) + framing.eol)
    return ("\ufeff" if framing.bom else "").encode() + "".join(events).encode()


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at arbitrary positions into non-empty pieces (sometimes one byte each)."""
    if len(data) < 2:
        return [data]
    if draw(st.integers(0, 9)) == 0:
        return [data[i : i + 1] for i in range(len(data))]
    # Arbitrary positions, plus the tricky ones more often than chance would pick them: right after a CR (between
    # CR and LF) and before a UTF-8 continuation byte (inside a character).
    tricky = [i for i in range(1, len(data)) if data[i - 1] == 0x0D or 0x80 <= data[i] < 0xC0]
    position = st.integers(1, len(data) - 1)
    if tricky:
        position = st.one_of(position, st.sampled_from(tricky))
    cuts = sorted(draw(st.lists(position, max_size=12, unique=True)))
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def collect(source: bytes | list[bytes], *, anomalies: bool = False) -> list[Chunk]:
    return pipeline.collect(source, anomalies=anomalies)


# -- 1. any split gives the same chunks ------------------------------------------------------------------------------


@FAST
@given(data=st.data(), stream=streams(), framing=FRAMINGS)
def test_any_split_of_the_bytes_gives_the_same_chunks(data: st.DataObject, stream: Stream, framing: Framing) -> None:
    raw = frame(stream, framing)
    pieces = data.draw(splits(raw))

    assert collect(pieces, anomalies=True) == collect(raw, anomalies=True)


@FAST
@given(data=st.data(), stream=streams(malformed=False), framing=FRAMINGS)
def test_crlf_line_ends_give_the_same_chunks_as_lf_under_any_split(
    data: st.DataObject, stream: Stream, framing: Framing
) -> None:
    lf = frame(stream, attrs.evolve(framing, eol="\n"))
    crlf = frame(stream, attrs.evolve(framing, eol="\r\n"))

    assert collect(data.draw(splits(crlf)), anomalies=True) == collect(lf, anomalies=True)


# -- 2. identity noise keeps the established identity ----------------------------------------------------------------


@FAST
@given(call=tool_calls(0, always_identified=True))
def test_identity_noise_in_continuation_deltas_keeps_the_first_non_empty_identity(call: Call) -> None:
    out = collect(frame(Stream([*call.deltas, finish("tool_calls")], True, [call], "tool_calls", None, None)))

    ends = [chunk for chunk in out if isinstance(chunk, BlockEnd)]
    assert ends == [BlockEnd(0, ToolCallBlock(call.id, call.name, call.arguments))]
    ids = [chunk.id for chunk in out if isinstance(chunk, ToolCallDelta)]
    names = [chunk.name for chunk in out if isinstance(chunk, ToolCallDelta)]
    assert ids == [""] * ids.index(call.id) + [call.id] * (len(ids) - ids.index(call.id)), "once known, kept"
    assert names == [None] * names.index(call.name) + [call.name] * (len(names) - names.index(call.name))
    assert isinstance(out[-1], Finish)
    assert out[-1].reason.kind == "tool-calls"


# -- 3. the order guarantees -----------------------------------------------------------------------------------------


def assert_order_guarantees(out: list[Chunk]) -> None:
    finishes = [position for position, chunk in enumerate(out) if isinstance(chunk, Finish)]
    assert finishes == [len(out) - 1], "exactly one finish, and it is last"
    usages = [position for position, chunk in enumerate(out) if isinstance(chunk, UsageChunk)]
    assert usages in ([], [len(out) - 2]), "at most one usage, right before the finish"

    started: dict[int, str] = {}
    ended: set[int] = set()
    last_delta = -1
    first_end: int | None = None
    for position, chunk in enumerate(out):
        if isinstance(chunk, BlockStart):
            assert chunk.index not in started, "a block starts once"
            started[chunk.index] = chunk.block_type
        elif isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            assert chunk.index in started, "a block-start precedes its deltas"
            assert chunk.index not in ended, "no delta after its block-end"
            last_delta = position
        elif isinstance(chunk, BlockEnd):
            assert started.get(chunk.index) == chunk.block.type, "a block-end closes a started block of its type"
            assert chunk.index not in ended, "a block ends once"
            ended.add(chunk.index)
            first_end = position if first_end is None else first_end
            if isinstance(chunk.block, ToolCallBlock):
                assert chunk.block.id
                assert chunk.block.name
    if first_end is not None:
        assert first_end > last_delta, "block-ends only after all deltas"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams())
def test_generated_streams_keep_the_order_guarantees(stream: Stream) -> None:
    out = collect(frame(stream))

    assert_order_guarantees(out)
    last = out[-1]
    assert isinstance(last, Finish)
    ends = [chunk for chunk in out if isinstance(chunk, BlockEnd)]
    started = {chunk.index for chunk in out if isinstance(chunk, BlockStart)}

    usage_read = stream.usage_at is not None and (stream.malformed_at is None or stream.malformed_at > stream.usage_at)
    assert any(isinstance(chunk, UsageChunk) for chunk in out) == usage_read

    if not stream.completes:
        assert ends == []
        assert last.reason.code == (Code.MALFORMED_RESPONSE if stream.malformed_at is not None else Code.STREAM_CLOSED)
    elif any(not (call.has_id and call.has_name) for call in stream.calls):
        assert ends == [], "no block-end at all when a tool call lacks its identity"
        assert last.reason.code == Code.MALFORMED_TOOL_CALL
    else:
        assert {end.index for end in ends} == started
        expected = map_finish_reason(stream.reason)
        if expected.kind == "stop" and not started:
            expected = FinishReason.error(Code.EMPTY_RESPONSE, EMPTY_RESPONSE_MESSAGE)
        assert last.reason == expected


# -- 4. translate never raises ---------------------------------------------------------------------------------------

SSE_TOKENS = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"[DONE]",
        b"event: error\n",
        b": comment\n",
        b"id: 1\n",
        b"\xef\xbb\xbf",
        b"{",
        b"}",
        b'{"choices":[{"delta":{"content":"a","reasoning_content":"r"}}]}',
        b'{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]}}]}',
        b'{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":null}}]}}]}',
        b'{"choices":[{"index":0,"finish_reason":"stop"}]}',
        b'{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}',
        b'{"error":{"message":"x","code":429}}',
        b'{"choices":[{"delta":{"refusal":"no"}}]}',
    ]
)


def assert_one_finish_last(source: bytes | list[bytes]) -> None:
    out: list[Chunk] = []
    errors: list[Exception] = []

    pipeline.translate(source, anomalies=True).subscribe(on_next=out.append, on_error=errors.append)

    assert errors == []
    assert [type(chunk) for chunk in out].count(Finish) == 1
    assert isinstance(out[-1], Finish)


@settings(max_examples=200, deadline=None)
@given(st.binary())
def test_translate_never_raises_for_arbitrary_bytes_and_ends_with_one_finish(raw: bytes) -> None:
    assert_one_finish_last(raw)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(SSE_TOKENS, st.binary(max_size=6)), max_size=30))
def test_translate_never_raises_for_sse_like_reads_and_ends_with_one_finish(reads: list[bytes]) -> None:
    assert_one_finish_last(reads)
    assert_one_finish_last(b"".join(reads))


# -- 5. failures too are the same under any split; tool-call ids; strict JSON lines ----------------------------------

SMALL_LIMITS = st.builds(
    Limits,
    max_event_bytes=st.sampled_from([16, 64, 512, 1 << 20]),
    max_arguments_bytes=st.sampled_from([1, 8, 1024]),
    max_text_bytes=st.sampled_from([1, 8, 1024]),
    max_tool_calls=st.integers(1, 3),
)

SSE_READS = st.lists(st.one_of(SSE_TOKENS, st.binary(max_size=6)), max_size=30)


@FAST
@given(data=st.data(), reads=SSE_READS, limits=SMALL_LIMITS)
def test_any_split_gives_the_same_chunks_failures_included(
    data: st.DataObject, reads: list[bytes], limits: Limits
) -> None:
    raw = b"".join(reads)
    whole = pipeline.collect(raw, anomalies=True, limits=limits)

    assert pipeline.collect(data.draw(splits(raw)), anomalies=True, limits=limits) == whole
    assert isinstance(whole[-1], Finish)


@FAST
@given(data=st.data(), stream=streams(), framing=FRAMINGS, limits=SMALL_LIMITS)
def test_any_split_of_a_generated_stream_gives_the_same_finish_under_small_limits(
    data: st.DataObject, stream: Stream, framing: Framing, limits: Limits
) -> None:
    raw = frame(stream, framing)

    assert pipeline.collect(data.draw(splits(raw)), anomalies=True, limits=limits) == pipeline.collect(
        raw, anomalies=True, limits=limits
    )


@FAST
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["call_a", "call_b"]), NON_EMPTY), max_size=6))
def test_no_two_tool_call_block_ends_share_an_id(calls: list[tuple[int, str, str]]) -> None:
    payloads = [tools(tool(index, id=call_id, name=name, arguments="{}")) for index, call_id, name in calls]
    raw = frame(Stream([*payloads, finish("tool_calls")], True, [], "tool_calls", None, None))

    ids = [c.block.id for c in collect(raw) if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert len(ids) == len(set(ids))


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


@FAST
@given(reads=SSE_READS, limits=SMALL_LIMITS)
def test_every_json_line_of_replay_is_strict_json(reads: list[bytes], limits: Limits) -> None:
    out = io.StringIO()
    printer = Printer(out, mode="json", color=False)
    for chunk in pipeline.collect(b"".join(reads), anomalies=True, limits=limits):
        printer.chunk(chunk)

    lines = out.getvalue().splitlines()
    assert lines
    for line in lines:
        json.loads(line, parse_constant=_no_constant)
