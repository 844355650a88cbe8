"""classify_finish: the wire finish_reason to a FinishReason; a stop without any block is EMPTY_RESPONSE; a refusal is
REFUSAL. The operator is tested alone: batches ending with PendingFinish (or an error Finish) in, one Finish out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from builders import source_of
from reactivex.testing.marbles import marbles_testing

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Code,
    Finish,
    FinishReason,
    TextBlock,
    TextDelta,
    Usage,
    UsageChunk,
    classify_finish,
)
from operators._classify_finish import EMPTY_RESPONSE_MESSAGE
from operators.extend import Batch, PendingFinish, RefusalSeen

TEXT_BLOCK = [BlockStart(0, "text"), TextDelta(0, "Hi"), BlockEnd(0, TextBlock("Hi"))]
USAGE = UsageChunk(Usage(5, 2, 7))


def feed(*batches: list[Any]) -> list[Any]:
    """Every item ``classify_finish`` emits for these batches, flattened."""
    out: list[Batch[Any]] = []
    errors: list[Exception] = []
    source_of(*batches).pipe(classify_finish()).subscribe(out.append, errors.append)
    assert errors == []
    return [item for batch in out for item in batch]


def one(*items: Any) -> list[Any]:
    return feed(list(items))


def finish_of(items: Sequence[Any]) -> FinishReason:
    last = items[-1]
    assert isinstance(last, Finish), f"expected a finish last, got {items!r}"
    return last.reason


def error(code: str, message: str) -> FinishReason:
    return FinishReason.error(code, message)


# -- the mapping table -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", FinishReason("stop")),
        (None, FinishReason("stop")),
        ("tool_calls", FinishReason("tool-calls")),
        ("function_call", FinishReason("tool-calls")),
        ("length", FinishReason("max-tokens")),
        ("content_filter", error("CONTENT_FILTER", "model stopped: content_filter")),
        (
            "insufficient_system_resource",
            error("INSUFFICIENT_SYSTEM_RESOURCE", "model stopped: insufficient_system_resource"),
        ),
        ("mystery_reason", error("MYSTERY_REASON", "model stopped: mystery_reason")),
    ],
    ids=lambda value: repr(value) if not isinstance(value, FinishReason) else "",
)
def test_the_wire_finish_reason_maps_to_a_finish_reason(wire: str | None, expected: FinishReason) -> None:
    assert one(*TEXT_BLOCK, PendingFinish(wire)) == [*TEXT_BLOCK, Finish(expected)]


def test_the_usage_stays_before_the_finish() -> None:
    assert one(*TEXT_BLOCK, USAGE, PendingFinish("stop")) == [*TEXT_BLOCK, USAGE, Finish(FinishReason("stop"))]


def test_the_docstring_marble() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        source = cold(
            "-a-b-|",
            {
                "a": [BlockStart(0, "text"), TextDelta(0, "x")],
                "b": [BlockEnd(0, TextBlock("x")), PendingFinish("stop")],
            },
            None,
        )
        expected: dict[str | float, Any] = {
            "a": [BlockStart(0, "text"), TextDelta(0, "x")],
            "b": [BlockEnd(0, TextBlock("x")), Finish(FinishReason("stop"))],
        }

        assert start(source.pipe(classify_finish())) == exp("-a-b-|", expected, None)


# -- EMPTY_RESPONSE --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", ["stop", None])
def test_a_stop_without_any_block_is_empty_response(wire: str | None) -> None:
    assert one(USAGE, PendingFinish(wire)) == [USAGE, Finish(error(Code.EMPTY_RESPONSE, EMPTY_RESPONSE_MESSAGE))]


def test_a_reasoning_only_answer_stays_stop() -> None:
    out = one(BlockStart(0, "reasoning"), PendingFinish("stop"))

    assert finish_of(out) == FinishReason("stop")


def test_a_block_opened_in_an_earlier_batch_counts() -> None:
    assert finish_of(feed([BlockStart(0, "text")], [PendingFinish("stop")])) == FinishReason("stop")


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("length", FinishReason("max-tokens")),
        ("tool_calls", FinishReason("tool-calls")),
        ("content_filter", error("CONTENT_FILTER", "model stopped: content_filter")),
        ("mystery_reason", error("MYSTERY_REASON", "model stopped: mystery_reason")),
    ],
)
def test_a_non_stop_finish_with_zero_blocks_is_not_rewritten(wire: str, expected: FinishReason) -> None:
    assert one(PendingFinish(wire)) == [Finish(expected)]


# -- refusal ---------------------------------------------------------------------------------------------------------


def test_a_refusal_ends_with_error_refusal_carrying_its_text() -> None:
    out = feed([RefusalSeen("I can't help ")], [RefusalSeen("with that."), USAGE, PendingFinish("stop")])

    assert out == [USAGE, Finish(error(Code.REFUSAL, "I can't help with that."))]


def test_a_refusal_wins_over_the_wire_reason_and_over_content() -> None:
    out = one(*TEXT_BLOCK, RefusalSeen("No."), PendingFinish("length"))

    assert finish_of(out) == error(Code.REFUSAL, "No.")


# -- pass-through ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reason",
    [
        error(Code.MALFORMED_TOOL_CALL, "tool call at wire index 0 (block 0) has no id"),
        error(Code.STREAM_CLOSED, "SSE stream ended without [DONE]"),
        FinishReason("aborted", error("ABORTED", "cancelled").failure),
    ],
    ids=["malformed-tool-call", "stream-closed", "aborted"],
)
def test_a_finish_from_upstream_passes_unchanged(reason: FinishReason) -> None:
    # Not EMPTY_RESPONSE although no block was opened, and not REFUSAL although a refusal was seen.
    assert one(RefusalSeen("No."), USAGE, Finish(reason)) == [USAGE, Finish(reason)]


def test_refusal_seen_and_pending_finish_never_leave_the_operator() -> None:
    out = one(RefusalSeen("a"), *TEXT_BLOCK, RefusalSeen("b"), PendingFinish("stop"))

    assert not any(isinstance(item, RefusalSeen | PendingFinish) for item in out)


def test_other_items_pass_through_unchanged_and_in_order() -> None:
    marker = object()
    anomaly = Anomaly("missing-done", None, "the stream ended after a finish_reason without [DONE]")

    assert one(anomaly, *TEXT_BLOCK, marker) == [anomaly, *TEXT_BLOCK, marker]


def test_each_subscription_starts_from_fresh_state() -> None:
    operator = classify_finish()
    opened: list[Batch[Any]] = []
    empty: list[Batch[Any]] = []

    source_of([BlockStart(0, "text"), PendingFinish("stop")]).pipe(operator).subscribe(opened.append)
    source_of([PendingFinish("stop")]).pipe(operator).subscribe(empty.append)

    assert finish_of(opened[0]) == FinishReason("stop")
    assert finish_of(empty[0]) == error(Code.EMPTY_RESPONSE, EMPTY_RESPONSE_MESSAGE)
