"""close_on_done: nothing is closed before Done; then block-ends, usage and the finish. The operator is tested alone:
batches of block events and signals in, the held block-ends, usage and finish out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import reactivex
from builders import source_of
from reactivex.subject import Subject
from reactivex.testing.marbles import marbles_testing

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Code,
    Failure,
    Finish,
    FinishReason,
    Limits,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
    close_on_done,
)
from operators.extend import Batch, Done, FinishSeen, Halt, PendingFinish, ReasoningSeal, ToolCallState, UsageSeen

REFUSED = "refused rather than assembled without its identity"
U1 = Usage(10, 1, 11)
U2 = Usage(12, 3, 15)


def state(index: int, *, id: str | None = "call_1", name: str | None = "Glob", arguments: str = "{}",
          wire_index: int | None = 0) -> ToolCallState:
    return ToolCallState(index, wire_index, id, name, arguments)


def malformed(message: str) -> Finish:
    return Finish(FinishReason.error(Code.MALFORMED_TOOL_CALL, message))


class Run:
    """What the operator emitted, and how it ended."""

    def __init__(self) -> None:
        self.batches: list[Batch[Any]] = []
        self.completed = False
        self.errors: list[Exception] = []

    @property
    def items(self) -> list[Any]:
        return [item for batch in self.batches for item in batch]

    def on_completed(self) -> None:
        self.completed = True


def run_of(source: reactivex.Observable[Any]) -> Run:
    run = Run()
    source.pipe(close_on_done()).subscribe(run.batches.append, run.errors.append, run.on_completed)
    return run


def feed(*batches: list[Any]) -> Run:
    return run_of(source_of(*batches))


def one(*items: Any) -> list[Any]:
    run = feed(list(items))
    assert run.errors == []
    return run.items


def ends(items: Sequence[Any]) -> list[BlockEnd]:
    return [item for item in items if isinstance(item, BlockEnd)]


# -- nothing before Done ---------------------------------------------------------------------------------------------


def test_nothing_is_closed_before_done() -> None:
    source: Subject[list[Any]] = Subject()
    run = run_of(source)

    source.on_next([BlockStart(0, "text"), TextDelta(0, "Hi"), FinishSeen("stop")])
    source.on_next([UsageSeen(U1)])

    assert run.items == [BlockStart(0, "text"), TextDelta(0, "Hi")]
    assert not run.completed

    source.on_next([Done()])

    assert run.batches[-1] == [BlockEnd(0, TextBlock("Hi")), UsageChunk(U1), PendingFinish("stop")]
    assert run.completed


def test_the_docstring_marble() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        source = cold(
            "-a-u-d-|",
            {"a": [BlockStart(0, "text"), TextDelta(0, "x")], "u": [UsageSeen(U1)], "d": [Done()]},
            None,
        )
        expected: dict[str | float, Any] = {
            "a": [BlockStart(0, "text"), TextDelta(0, "x")],
            "e": [BlockEnd(0, TextBlock("x")), UsageChunk(U1), PendingFinish(None)],
        }

        assert start(source.pipe(close_on_done())) == exp("-a---(e,|)", expected, None)


# -- closing at Done -------------------------------------------------------------------------------------------------


def test_at_done_block_ends_in_opening_order_then_usage_then_pending_finish() -> None:
    out = one(
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "Let me "),
        BlockStart(1, "text"),
        TextDelta(1, "Calling."),
        ReasoningDelta(0, "think."),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "call_1", "Glob", "{}"),
        FinishSeen("tool_calls"),
        UsageSeen(U1),
        state(2),
        Done(),
    )

    assert out[-5:] == [
        BlockEnd(0, ReasoningBlock("Let me think.")),
        BlockEnd(1, TextBlock("Calling.")),
        BlockEnd(2, ToolCallBlock("call_1", "Glob", "{}")),
        UsageChunk(U1),
        PendingFinish("tool_calls"),
    ]


def test_the_deltas_pass_through_as_they_arrive() -> None:
    source: Subject[list[Any]] = Subject()
    run = run_of(source)
    deltas = [BlockStart(0, "text"), TextDelta(0, "a"), ToolCallDelta(1, "", None, "x"), TextDelta(0, "b")]

    source.on_next(deltas)

    assert run.batches == [deltas]


def test_the_last_usage_wins() -> None:
    assert one(UsageSeen(U1), UsageSeen(U2), Done()) == [UsageChunk(U2), PendingFinish(None)]


def test_the_last_wire_finish_reason_wins() -> None:
    assert one(FinishSeen("length"), FinishSeen("stop"), Done()) == [PendingFinish("stop")]


def test_without_usage_or_finish_reason_only_the_pending_finish_follows() -> None:
    assert one(BlockStart(0, "text"), TextDelta(0, "x"), Done()) == [
        BlockStart(0, "text"),
        TextDelta(0, "x"),
        BlockEnd(0, TextBlock("x")),
        PendingFinish(None),
    ]


def test_a_block_without_deltas_closes_empty() -> None:
    assert ends(one(BlockStart(0, "reasoning"), Done())) == [BlockEnd(0, ReasoningBlock(""))]


def test_the_tool_call_block_is_the_accumulated_state() -> None:
    out = one(BlockStart(0, "tool-call"), state(0, id="call_9", name="Read", arguments='{"f":1}'), Done())

    assert ends(out) == [BlockEnd(0, ToolCallBlock("call_9", "Read", '{"f":1}'))]


# -- unidentified tool calls -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("id", "name", "missing"),
    [(None, "Glob", "id"), ("call_1", None, "name"), (None, None, "id and no name")],
    ids=["no-id", "no-name", "neither"],
)
def test_an_unidentified_call_gives_usage_then_malformed_tool_call_and_no_block_end(
    id: str | None, name: str | None, missing: str
) -> None:
    out = one(
        BlockStart(0, "text"),
        TextDelta(0, "Calling."),
        BlockStart(1, "tool-call"),
        ToolCallDelta(1, id or "", name, "{}"),
        FinishSeen("tool_calls"),
        UsageSeen(U1),
        state(1, id=id, name=name, wire_index=3),
        Done(),
    )

    assert ends(out) == []
    assert out[-2:] == [
        UsageChunk(U1),
        malformed(f"tool call at wire index 3 (block 1) has no {missing}: {REFUSED}"),
    ]


def test_one_unidentified_call_refuses_the_well_formed_ones_too() -> None:
    out = one(
        BlockStart(0, "tool-call"),
        BlockStart(1, "tool-call"),
        state(0, id="call_a", name="Glob", wire_index=0),
        state(1, id=None, name="Read", wire_index=1),
        Done(),
    )

    assert ends(out) == []
    assert out[-1] == malformed(f"tool call at wire index 1 (block 1) has no id: {REFUSED}")


def test_every_unidentified_call_is_named() -> None:
    out = one(
        BlockStart(0, "tool-call"),
        BlockStart(1, "tool-call"),
        state(0, id=None, wire_index=0),
        state(1, name=None, wire_index=None),
        Done(),
    )

    assert out[-1] == malformed(
        "tool call at wire index 0 (block 0) has no id; "
        f"tool call at no wire index (block 1) has no name: {REFUSED}"
    )


def test_an_unidentified_call_without_usage_gives_only_the_finish() -> None:
    out = one(BlockStart(0, "tool-call"), state(0, id=None), Done())

    assert out == [BlockStart(0, "tool-call"), malformed(f"tool call at wire index 0 (block 0) has no id: {REFUSED}")]


# -- failures --------------------------------------------------------------------------------------------------------


def test_a_halt_gives_usage_then_its_error_finish_and_no_block_end() -> None:
    failure = Failure("RATE_LIMIT", "slow down", status=429)

    run = feed([BlockStart(0, "text"), TextDelta(0, "Hi"), UsageSeen(U1), FinishSeen("stop")], [Halt(failure)])

    assert run.batches[-1] == [UsageChunk(U1), Finish(FinishReason("error", failure))]
    assert ends(run.items) == []
    assert run.completed


def test_a_halt_without_usage_gives_only_the_error_finish() -> None:
    failure = Failure("MALFORMED_RESPONSE", "malformed SSE payload: x")

    assert one(Halt(failure)) == [Finish(FinishReason("error", failure))]


def test_an_upstream_error_gives_usage_then_an_unknown_finish_and_completes() -> None:
    source = reactivex.concat(
        source_of([BlockStart(0, "text"), TextDelta(0, "Hi"), UsageSeen(U1)]),
        reactivex.throw(ValueError("decoder exploded")),
    )

    run = run_of(source)  # no exception escapes subscribe()

    assert run.items[-2:] == [UsageChunk(U1), Finish(FinishReason.error(Code.UNKNOWN, "ValueError: decoder exploded"))]
    assert ends(run.items) == []
    assert run.errors == []
    assert run.completed


def test_upstream_completing_without_done_is_stream_closed() -> None:
    run = feed([BlockStart(0, "text"), TextDelta(0, "Hi"), UsageSeen(U1), FinishSeen("stop")])

    assert run.items[-2:] == [
        UsageChunk(U1),
        Finish(FinishReason.error(Code.STREAM_CLOSED, "SSE payload stream ended without [DONE]")),
    ]
    assert ends(run.items) == []
    assert run.completed


# -- after Done ------------------------------------------------------------------------------------------------------


def test_nothing_after_done_is_read() -> None:
    run = feed(
        [BlockStart(0, "text"), TextDelta(0, "a"), Done(), TextDelta(0, "late"), UsageSeen(U2)],
        [Halt(Failure("SERVER", "late")), Anomaly("comment", None, "late")],
    )

    assert run.items == [BlockStart(0, "text"), TextDelta(0, "a"), BlockEnd(0, TextBlock("a")), PendingFinish(None)]
    assert run.completed
    assert run.errors == []


def test_done_disposes_the_upstream_subscription() -> None:
    source: Subject[list[Any]] = Subject()
    run = run_of(source)

    source.on_next([Done()])

    assert source.observers == []
    assert run.completed


def test_other_items_pass_through_unchanged() -> None:
    marker = object()
    anomaly = Anomaly("null-arguments", 0, "arguments null: adds nothing")

    assert one(anomaly, marker, Done()) == [anomaly, marker, PendingFinish(None)]


def test_each_subscription_starts_from_fresh_state() -> None:
    closed = source_of([BlockStart(0, "text"), TextDelta(0, "x"), UsageSeen(U1), Done()]).pipe(
        close_on_done()
    )
    first: list[Batch[Any]] = []
    second: list[Batch[Any]] = []

    closed.subscribe(first.append)
    closed.subscribe(second.append)

    assert first == second
    assert ends(first[0]) == [BlockEnd(0, TextBlock("x"))]


# -- reasoning seals (docs/decisions/0028-reasoning-round-trip.md) ---------------------------------------------------


def test_a_seal_puts_its_signature_encrypted_reasoning_and_item_id_on_its_reasoning_block() -> None:
    out = one(BlockStart(0, "reasoning"), ReasoningDelta(0, "think"), ReasoningSeal(0, "SIG", None, None),
              BlockStart(1, "reasoning"), ReasoningSeal(1, None, "ENC", "rs_1"), Done())

    assert ends(out) == [
        BlockEnd(0, ReasoningBlock("think", signature="SIG")),
        BlockEnd(1, ReasoningBlock("", encrypted="ENC", item_id="rs_1")),
    ]
    assert not any(isinstance(item, ReasoningSeal) for item in out)


def test_opaque_reasoning_counts_toward_max_text_bytes() -> None:
    run = run_of_limited(Limits(max_text_bytes=10), [BlockStart(0, "reasoning"), ReasoningDelta(0, "abc"),
                                                     ReasoningSeal(0, None, "x" * 8, None), Done()])

    (finish,) = [item for item in run.items if isinstance(item, Finish)]
    assert finish.reason.code == Code.LIMIT_EXCEEDED
    assert ends(run.items) == []


def run_of_limited(limits: Limits, batch: list[Any]) -> Run:
    run = Run()
    source_of(batch).pipe(close_on_done(limits)).subscribe(run.batches.append, run.errors.append, run.on_completed)
    return run
