"""accumulate_arguments: a tool call's arguments fragments concatenate; null or absent adds nothing. The operator is
tested alone: batches of ToolFragment values (and anything else) in, tool-call deltas and, at Done, call states out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from builders import run_operator, source_of
from reactivex.testing.marbles import marbles_testing

from operators import Anomaly, BlockStart, Failure, TextDelta, ToolCallDelta, accumulate_arguments
from operators.extend import Batch, Done, FinishSeen, Halt, ToolCallState, ToolFragment
from operators.wire import UNSET

NULL_REPORT = "arguments null: adds nothing"


def frag(arguments: Any, *, index: int = 0, id: str | None = "call_1", name: str | None = "Glob",
         wire_index: int | None = None) -> ToolFragment:
    """A fragment of the call in block ``index`` (wire index defaults to the block index)."""
    return ToolFragment(index, index if wire_index is None else wire_index, id, name, arguments)


def feed(*batches: list[Any]) -> list[Any]:
    """Every item ``accumulate_arguments`` emits for these batches, flattened."""
    return run_operator(accumulate_arguments(), *batches)


def one(*items: Any) -> list[Any]:
    return feed(list(items))


def states(items: Sequence[Any]) -> list[ToolCallState]:
    return [item for item in items if isinstance(item, ToolCallState)]


def deltas(items: list[Any]) -> list[ToolCallDelta]:
    return [item for item in items if isinstance(item, ToolCallDelta)]


# -- concatenation ---------------------------------------------------------------------------------------------------


def test_each_fragment_becomes_one_tool_call_delta() -> None:
    assert one(frag('{"a"'), frag(":1}")) == [
        ToolCallDelta(0, "call_1", "Glob", '{"a"'),
        ToolCallDelta(0, "call_1", "Glob", ":1}"),
    ]


def test_fragments_concatenate_per_call() -> None:
    out = one(
        frag('{"p', index=0),
        frag('{"f', index=1, id="call_2", name="Read"),
        frag('":1}', index=0),
        frag('":2}', index=1, id="call_2", name="Read"),
        Done(),
    )

    assert [(s.index, s.arguments) for s in states(out)] == [(0, '{"p":1}'), (1, '{"f":2}')]


def test_arguments_are_never_parsed() -> None:
    out = one(frag("not "), frag("json {"), Done())

    assert states(out)[0].arguments == "not json {"


def test_null_arguments_add_nothing_and_give_an_empty_delta() -> None:
    out = one(frag("{}"), frag(None), Done())

    assert deltas(out) == [ToolCallDelta(0, "call_1", "Glob", "{}"), ToolCallDelta(0, "call_1", "Glob", "")]
    assert states(out)[0].arguments == "{}"


def test_null_arguments_are_reported_once_per_call() -> None:
    out = one(frag(None, index=0), frag(None, index=0), frag(None, index=1), frag(None, index=1))

    assert [item for item in out if isinstance(item, Anomaly)] == [
        Anomaly("null-arguments", 0, NULL_REPORT),
        Anomaly("null-arguments", 1, NULL_REPORT),
    ]
    assert out[0] == Anomaly("null-arguments", 0, NULL_REPORT)
    assert out[1] == ToolCallDelta(0, "call_1", "Glob", "")


def test_absent_arguments_add_nothing_and_are_not_reported() -> None:
    out = one(frag(UNSET), frag("{}"), frag(UNSET), Done())

    assert out == [
        ToolCallDelta(0, "call_1", "Glob", ""),
        ToolCallDelta(0, "call_1", "Glob", "{}"),
        ToolCallDelta(0, "call_1", "Glob", ""),
        ToolCallState(0, 0, "call_1", "Glob", "{}"),
        Done(),
    ]


def test_the_docstring_marble() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        source = cold("-x-y-|", {"x": [frag('{"a"'), frag(None)], "y": [frag(":1}"), Done()]}, None)
        expected: dict[str | float, Any] = {
            "d": [ToolCallDelta(0, "call_1", "Glob", '{"a"'), Anomaly("null-arguments", 0, NULL_REPORT),
                  ToolCallDelta(0, "call_1", "Glob", "")],
            "e": [ToolCallDelta(0, "call_1", "Glob", ":1}"), ToolCallState(0, 0, "call_1", "Glob", '{"a":1}'),
                  Done()],
        }

        assert start(source.pipe(accumulate_arguments())) == exp("-d-e-|", expected, None)


# -- identity in the deltas ------------------------------------------------------------------------------------------


def test_the_delta_id_is_empty_until_known_and_the_name_none_until_known() -> None:
    out = one(frag("{", id=None, name=None), frag("", id=None, name="Glob"), frag("}", id="call_1", name="Glob"))

    assert out == [
        ToolCallDelta(0, "", None, "{"),
        ToolCallDelta(0, "", "Glob", ""),
        ToolCallDelta(0, "call_1", "Glob", "}"),
    ]
    assert out[0].to_dict() == {"type": "tool-call-delta", "index": 0, "id": "", "arguments_delta": "{"}


def test_the_state_carries_the_identity_of_the_last_fragment_and_the_wire_index() -> None:
    out = one(frag("{", id=None, name=None, wire_index=3), frag("}", id="call_1", name="Glob", wire_index=3), Done())

    assert states(out) == [ToolCallState(0, 3, "call_1", "Glob", "{}")]


def test_a_call_still_unidentified_at_done_is_handed_on_with_what_is_missing() -> None:
    (state,) = states(one(frag("{}", id=None, name="Glob"), Done()))

    assert state.id is None
    assert state.missing == ("id",)


# -- Done ------------------------------------------------------------------------------------------------------------


def test_at_done_one_state_per_call_in_opening_order_precedes_done() -> None:
    out = one(
        frag("b", index=1, id="call_b", name="Read"),
        frag("a", index=0, id="call_a", name="Glob"),
        frag("c", index=2, id="call_c", name="Grep"),
        frag("!", index=0, id="call_a", name="Glob"),
        Done(),
    )

    assert out[-4:] == [
        ToolCallState(1, 1, "call_b", "Read", "b"),
        ToolCallState(0, 0, "call_a", "Glob", "a!"),
        ToolCallState(2, 2, "call_c", "Grep", "c"),
        Done(),
    ]


def test_done_arriving_in_a_later_batch_still_follows_the_states() -> None:
    out = feed([frag("{")], [frag("}")], [FinishSeen("tool_calls"), Done(synthetic=True)])

    assert out[-3:] == [FinishSeen("tool_calls"), ToolCallState(0, 0, "call_1", "Glob", "{}"), Done(synthetic=True)]


def test_done_without_any_call_passes_alone() -> None:
    assert one(Done()) == [Done()]


def test_other_items_pass_through_unchanged_and_in_order() -> None:
    marker = object()
    halt = Halt(Failure("SERVER", "boom"))

    assert one(BlockStart(0, "text"), TextDelta(0, "hi"), marker, FinishSeen("stop"), halt) == [
        BlockStart(0, "text"),
        TextDelta(0, "hi"),
        marker,
        FinishSeen("stop"),
        halt,
    ]


def test_each_subscription_starts_from_fresh_state() -> None:
    accumulated = source_of([frag("{"), frag("}"), Done()]).pipe(accumulate_arguments())
    first: list[Batch[Any]] = []
    second: list[Batch[Any]] = []

    accumulated.subscribe(first.append)
    accumulated.subscribe(second.append)

    assert first == second
    assert states(first[0]) == [ToolCallState(0, 0, "call_1", "Glob", "{}")]
