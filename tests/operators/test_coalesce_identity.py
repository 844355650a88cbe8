"""coalesce_identity: which block each fragment belongs to, and who each tool call is. The operator is tested alone:
batches of WireChunk values (decoded from JSON with ``decode_chunk``) in, block-level events out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from builders import run_operator, source_of
from reactivex.testing.marbles import marbles_testing

from operators import Anomaly, BlockStart, Failure, ReasoningDelta, TextDelta, Usage, coalesce_identity
from operators._usage import map_usage
from operators.extend import (
    Batch,
    Done,
    FinishSeen,
    Halt,
    ReasoningEnd,
    ReasoningSeal,
    RefusalSeen,
    ToolFragment,
    UsageSeen,
)
from operators.wire import UNSET, WireChunk, decode_chunk

Json = dict[str, Any]

ABSENT: Any = object()
"""Leaves a field out of the JSON (as opposed to ``null``)."""


# -- builders --------------------------------------------------------------------------------------------------------


def decoded(value: Json) -> WireChunk:
    return decode_chunk(json.dumps(value).encode())


def chunk(*, choice: int = 0, finish_reason: Any = ABSENT, **delta: Any) -> WireChunk:
    """A wire chunk with one choice whose delta holds ``delta``."""
    body: Json = {"index": choice, "delta": delta}
    if finish_reason is not ABSENT:
        body["finish_reason"] = finish_reason
    return decoded({"choices": [body]})


def call(index: Any = ABSENT, *, id: Any = ABSENT, name: Any = ABSENT, arguments: Any = ABSENT) -> Json:
    """One ``tool_calls`` entry; a field given as ABSENT is left out."""
    entry: Json = {"type": "function"}
    if index is not ABSENT:
        entry["index"] = index
    if id is not ABSENT:
        entry["id"] = id
    function = {key: value for key, value in (("name", name), ("arguments", arguments)) if value is not ABSENT}
    if function:
        entry["function"] = function
    return entry


def calls(*entries: Json) -> WireChunk:
    return chunk(tool_calls=list(entries))


def feed(*batches: list[Any]) -> list[Any]:
    """Every item ``coalesce_identity`` emits for these batches, flattened."""
    return run_operator(coalesce_identity(), *batches)


def one(*items: Any) -> list[Any]:
    """Everything emitted for these items fed as one batch."""
    return feed(list(items))


def starts(items: Sequence[Any]) -> list[tuple[int, str]]:
    return [(item.index, item.block_type) for item in items if isinstance(item, BlockStart)]


def fragments(items: list[Any]) -> list[ToolFragment]:
    return [item for item in items if isinstance(item, ToolFragment)]


def identities(items: list[Any]) -> list[tuple[int, str | None, str | None]]:
    return [(f.index, f.id, f.name) for f in fragments(items)]


def anomalies(items: list[Any]) -> list[str]:
    return [item.kind for item in items if isinstance(item, Anomaly)]


def reasoning(items: list[Any]) -> list[tuple[int, str]]:
    return [(item.index, item.text) for item in items if isinstance(item, ReasoningDelta)]


def text(items: list[Any]) -> list[tuple[int, str]]:
    return [(item.index, item.text) for item in items if isinstance(item, TextDelta)]


# -- block indices ---------------------------------------------------------------------------------------------------


def test_blocks_are_numbered_in_order_of_first_appearance_with_one_counter_for_all_kinds() -> None:
    out = one(
        chunk(content="Let me look."),
        calls(call(0, id="call_a", name="Glob", arguments="")),
        chunk(reasoning_content="Hmm."),
        calls(call(1, id="call_b", name="Read", arguments="")),
    )

    assert starts(out) == [(0, "text"), (1, "tool-call"), (2, "reasoning"), (3, "tool-call")]


def test_a_block_opens_once_and_its_later_fragments_reuse_its_index() -> None:
    out = one(chunk(content="Hel"), chunk(content="lo"))

    assert out == [BlockStart(0, "text"), TextDelta(0, "Hel"), TextDelta(0, "lo")]


def test_within_one_delta_reasoning_comes_before_text_before_tool_calls() -> None:
    out = one(chunk(content="t", reasoning_content="r", tool_calls=[call(0, id="a", name="Glob")]))

    assert out == [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "r"),
        BlockStart(1, "text"),
        TextDelta(1, "t"),
        BlockStart(2, "tool-call"),
        ToolFragment(2, 0, "a", "Glob", UNSET),
    ]


def test_the_batches_follow_the_input_batches() -> None:
    out: list[Batch[Any]] = []
    batches = [[chunk(content="a")], [chunk(content="b"), chunk(content="c")]]
    source_of(*batches).pipe(coalesce_identity()).subscribe(out.append)

    assert out == [[BlockStart(0, "text"), TextDelta(0, "a")], [TextDelta(0, "b"), TextDelta(0, "c")]]


# -- reasoning (T3/T4) -----------------------------------------------------------------------------------------------


def test_reasoning_content_wins_over_the_reasoning_alias() -> None:
    assert reasoning(one(chunk(reasoning_content="official", reasoning="alias"))) == [(0, "official")]


def test_an_empty_reasoning_content_still_wins_over_the_alias_and_opens_nothing() -> None:
    assert one(chunk(reasoning_content="", reasoning="alias")) == []


def test_a_null_reasoning_content_falls_back_to_the_alias() -> None:
    assert reasoning(one(chunk(reasoning_content=None, reasoning="alias"))) == [(0, "alias")]


DETAILS = [{"type": "reasoning.text", "text": "from "}, {"type": "reasoning.text", "text": "details"}]


def test_reasoning_details_are_read_when_neither_field_is_present() -> None:
    assert reasoning(one(chunk(reasoning_details=DETAILS))) == [(0, "from details")]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"reasoning_content": None}, []),
        ({"reasoning_content": ""}, []),
        ({"reasoning": None}, []),
        ({"reasoning": ""}, []),
        ({"reasoning_content": "official"}, [(0, "official")]),
        ({"reasoning": "alias"}, [(0, "alias")]),
    ],
    ids=["content-null", "content-empty", "alias-null", "alias-empty", "content", "alias"],
)
def test_reasoning_details_are_ignored_when_either_field_is_present(
    fields: Json, expected: list[tuple[int, str]]
) -> None:
    assert reasoning(one(chunk(reasoning_details=DETAILS, **fields))) == expected


def test_deepseeks_empty_first_reasoning_content_opens_nothing() -> None:
    first = chunk(role="assistant", content=None, reasoning_content="")

    assert one(first) == []
    assert starts(one(first, chunk(content="Hi"))) == [(0, "text")]


def test_empty_text_opens_nothing() -> None:
    assert one(chunk(content=""), chunk(content=None)) == []


def test_there_is_one_reasoning_block_even_when_reasoning_resumes_after_text() -> None:
    out = one(chunk(reasoning_content="think"), chunk(content="say"), chunk(reasoning_content=" more"))

    assert starts(out) == [(0, "reasoning"), (1, "text")]
    assert reasoning(out) == [(0, "think"), (0, " more")]
    assert text(out) == [(1, "say")]


def test_mistral_list_content_gives_text_parts_as_text_and_thinking_parts_as_reasoning() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "see."}]},
        {"type": "thinking", "thinking": " Done."},
        {"type": "text", "text": "The answer"},
        {"type": "text", "text": " is 4."},
        {"type": "image_url", "image_url": "ignored"},
    ]

    out = one(chunk(content=parts))

    assert out == [
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "Let me see. Done."),
        BlockStart(1, "text"),
        TextDelta(1, "The answer is 4."),
    ]


def test_mistral_list_content_with_only_empty_parts_opens_nothing() -> None:
    assert one(chunk(content=[{"type": "text", "text": ""}, {"type": "thinking", "thinking": ""}])) == []


# -- tool-call identity ----------------------------------------------------------------------------------------------


def test_a_non_empty_id_and_name_establish_the_identity() -> None:
    out = one(calls(call(0, id="call_1", name="Glob", arguments='{"p')), calls(call(0, arguments='at')))

    assert out == [
        BlockStart(0, "tool-call"),
        ToolFragment(0, 0, "call_1", "Glob", '{"p'),
        ToolFragment(0, 0, "call_1", "Glob", "at"),
    ]


IGNORED = [ABSENT, None, "", 0, 7, True, ["call_x"], {"name": "Glob"}]
IGNORED_IDS = ["absent", "null", "empty", "zero", "int", "bool", "list", "object"]


@pytest.mark.parametrize("value", IGNORED, ids=IGNORED_IDS)
def test_an_empty_or_non_string_id_on_a_continuation_keeps_the_established_id(value: Any) -> None:
    out = one(calls(call(0, id="call_1", name="Glob")), calls(call(0, id=value, arguments="{}")))

    assert identities(out) == [(0, "call_1", "Glob"), (0, "call_1", "Glob")]
    assert starts(out) == [(0, "tool-call")]


@pytest.mark.parametrize("value", IGNORED, ids=IGNORED_IDS)
def test_an_empty_or_non_string_name_on_a_continuation_keeps_the_established_name(value: Any) -> None:
    out = one(calls(call(0, id="call_1", name="Glob")), calls(call(0, name=value, arguments="{}")))

    assert identities(out) == [(0, "call_1", "Glob"), (0, "call_1", "Glob")]


@pytest.mark.parametrize("value", IGNORED, ids=IGNORED_IDS)
def test_an_empty_or_non_string_identity_establishes_nothing(value: Any) -> None:
    out = one(
        calls(call(0, id=value, name=value, arguments="")),
        calls(call(0, id="call_1", name="Glob", arguments="{}")),
    )

    assert identities(out) == [(0, None, None), (0, "call_1", "Glob")]
    assert starts(out) == [(0, "tool-call")]


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "empty-identity"), ("", "empty-identity"), (7, "non-string-identity"), ([1], "non-string-identity")],
    ids=["null", "empty", "int", "list"],
)
def test_ignored_identity_is_reported_once_per_call_and_field(value: Any, kind: str) -> None:
    out = one(
        calls(call(0, id="call_1", name="Glob")),
        calls(call(0, name=value)),
        calls(call(0, name=value)),
        calls(call(0, id=value)),
    )

    assert anomalies(out) == [kind, kind]
    assert {item.index for item in out if isinstance(item, Anomaly)} == {0}


def test_an_absent_identity_is_not_reported() -> None:
    assert anomalies(one(calls(call(0, id="call_1", name="Glob")), calls(call(0, arguments="{}")))) == []


def test_a_conflicting_name_keeps_the_first_name() -> None:
    out = one(calls(call(0, id="call_1", name="Glob")), calls(call(0, name="Grep")))

    assert identities(out) == [(0, "call_1", "Glob"), (0, "call_1", "Glob")]
    assert anomalies(out) == ["conflicting-identity"]


def test_a_name_is_never_concatenated() -> None:
    out = one(calls(call(0, id="call_1", name="Gl")), calls(call(0, name="ob")))

    assert [name for _, _, name in identities(out)] == ["Gl", "Gl"]


def test_a_repeated_identical_identity_changes_nothing_and_is_not_reported() -> None:
    out = one(calls(call(0, id="call_1", name="Glob")), calls(call(0, id="call_1", name="Glob", arguments="{}")))

    assert identities(out) == [(0, "call_1", "Glob"), (0, "call_1", "Glob")]
    assert anomalies(out) == []


def test_the_identity_may_arrive_after_the_first_fragment() -> None:
    out = one(calls(call(0, arguments="{")), calls(call(0, name="Glob")), calls(call(0, id="call_1", arguments="}")))

    assert identities(out) == [(0, None, None), (0, None, "Glob"), (0, "call_1", "Glob")]


def test_the_docstring_marble() -> None:
    c1 = [calls(call(0, id="a", name="Glob", arguments=""))]
    c2 = [calls(call(0, id="", name=None, arguments="{}"))]
    with marbles_testing() as (start, cold, _hot, exp):
        source = cold("-x-y-|", {"x": c1, "y": c2}, None)
        expected: dict[str | float, Any] = {
            "s": [BlockStart(0, "tool-call"), ToolFragment(0, 0, "a", "Glob", "")],
            "f": [
                Anomaly("empty-identity", 0, "id '' ignored, keeping 'a'"),
                Anomaly("empty-identity", 0, "name None ignored, keeping 'Glob'"),
                ToolFragment(0, 0, "a", "Glob", "{}"),
            ],
        }

        assert start(source.pipe(coalesce_identity())) == exp("-s-f-|", expected, None)


# -- correlation -----------------------------------------------------------------------------------------------------


def test_fragments_are_correlated_by_wire_index() -> None:
    out = one(
        calls(call(0, id="a", name="Glob", arguments="")),
        calls(call(1, id="b", name="Read", arguments="")),
        calls(call(0, arguments="{0}")),
        calls(call(1, arguments="{1}")),
    )

    assert [(f.index, f.wire_index, f.arguments) for f in fragments(out)] == [
        (0, 0, ""),
        (1, 1, ""),
        (0, 0, "{0}"),
        (1, 1, "{1}"),
    ]


def test_a_new_non_empty_id_on_an_established_index_starts_a_new_call() -> None:  # Ollama: every call at index 0
    out = one(
        calls(call(0, id="a", name="Glob", arguments="{}")),
        calls(call(0, id="b", name="Read", arguments="{}")),
        calls(call(0, arguments="more")),
    )

    assert starts(out) == [(0, "tool-call"), (1, "tool-call")]
    assert [(f.index, f.id, f.name, f.arguments) for f in fragments(out)] == [
        (0, "a", "Glob", "{}"),
        (1, "b", "Read", "{}"),
        (1, "b", "Read", "more"),
    ]
    assert anomalies(out) == ["reused-index"]


def test_an_id_given_at_an_index_whose_call_has_no_id_yet_is_that_calls_id() -> None:
    out = one(calls(call(0, name="Glob")), calls(call(0, id="late")))

    assert starts(out) == [(0, "tool-call")]
    assert identities(out) == [(0, None, "Glob"), (0, "late", "Glob")]


def test_a_delta_without_index_joins_the_call_its_id_names() -> None:
    out = one(
        calls(call(0, id="a", name="Glob")),
        calls(call(1, id="b", name="Read")),
        calls(call(id="a", arguments="for a")),
    )

    assert [(f.index, f.id, f.arguments) for f in fragments(out)][-1] == (0, "a", "for a")
    assert anomalies(out) == ["missing-index"]


def test_a_delta_without_index_or_id_joins_the_latest_call() -> None:
    out = one(
        calls(call(0, id="a", name="Glob")),
        calls(call(1, id="b", name="Read")),
        calls(call(arguments="for b")),
        calls(call(arguments=" again")),
    )

    assert [(f.index, f.id, f.arguments) for f in fragments(out)][-2:] == [(1, "b", "for b"), (1, "b", " again")]
    assert anomalies(out) == ["missing-index"]


def test_deltas_without_any_index_open_a_call_per_new_id() -> None:
    out = one(
        calls(call(id="a", name="Glob", arguments="{}")),
        calls(call(id="b", name="Read", arguments="{}")),
        calls(call(arguments="more b")),
    )

    assert [(f.index, f.wire_index, f.id, f.arguments) for f in fragments(out)] == [
        (0, None, "a", "{}"),
        (1, None, "b", "{}"),
        (1, None, "b", "more b"),
    ]


def test_a_sparse_first_index_is_fine() -> None:
    out = one(
        calls(call(1, id="b", name="Read", arguments="")),
        calls(call(0, id="a", name="Glob", arguments="")),
        calls(call(1, arguments="for b")),
    )

    assert starts(out) == [(0, "tool-call"), (1, "tool-call")]
    assert [(f.index, f.wire_index, f.id) for f in fragments(out)] == [(0, 1, "b"), (1, 0, "a"), (0, 1, "b")]
    assert anomalies(out) == []


# -- choices, usage, finish, refusal ---------------------------------------------------------------------------------


def test_choices_other_than_0_are_ignored_and_reported_once_as_extra_choice() -> None:
    two = decoded(
        {
            "choices": [
                {"index": 1, "delta": {"content": "other"}, "finish_reason": "length"},
                {"index": 0, "delta": {"content": "mine"}},
            ]
        }
    )

    out = one(two, two)

    assert anomalies(out) == ["extra-choice"]
    assert text(out) == [(0, "mine"), (0, "mine")]
    assert not any(isinstance(item, FinishSeen) for item in out)


def test_usage_is_mapped_to_disjoint_counts() -> None:
    wire = {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }

    usage_only = decoded({"choices": [], "usage": wire})

    out = one(usage_only)

    expected = Usage(input_tokens=40, output_tokens=20, total_tokens=120, cache_read_tokens=60, reasoning_tokens=5)
    assert usage_only.usage is not None
    assert out == [UsageSeen(expected)] == [UsageSeen(map_usage(usage_only.usage))]


def test_x_groq_usage_is_used_when_there_is_no_top_level_usage() -> None:
    out = one(decoded({"choices": [], "x_groq": {"usage": {"prompt_tokens": 3, "completion_tokens": 2}}}))

    assert out == [UsageSeen(Usage(3, 2, 5))]


def test_top_level_usage_wins_over_x_groq_usage() -> None:
    out = one(
        decoded(
            {
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1},
                "x_groq": {"usage": {"prompt_tokens": 3, "completion_tokens": 2}},
            }
        )
    )

    assert out == [UsageSeen(Usage(10, 1, 11))]


def test_a_finish_reason_becomes_finish_seen_after_the_deltas_and_before_the_usage() -> None:
    out = one(
        decoded(
            {
                "choices": [{"index": 0, "delta": {"content": "bye"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            }
        )
    )

    assert out == [BlockStart(0, "text"), TextDelta(0, "bye"), FinishSeen("stop"), UsageSeen(Usage(1, 1, 2))]


def test_a_null_finish_reason_is_no_finish() -> None:
    assert one(chunk(finish_reason=None)) == []


def test_a_refusal_becomes_refusal_seen_and_opens_no_block() -> None:
    assert one(chunk(refusal="I can't"), chunk(refusal=""), chunk(refusal=" help.")) == [
        RefusalSeen("I can't"),
        RefusalSeen(" help."),
    ]


def test_items_that_are_not_wire_chunks_pass_through_unchanged() -> None:
    marker = object()
    halt = Halt(Failure("SERVER", "boom"))
    anomaly = Anomaly("comment", None, "comment line ignored: :")

    assert one(anomaly, chunk(content="x"), marker, Done(), halt) == [
        anomaly,
        BlockStart(0, "text"),
        TextDelta(0, "x"),
        marker,
        Done(),
        halt,
    ]


def test_each_subscription_starts_from_fresh_state() -> None:
    source = source_of([calls(call(0, id="a", name="Glob")), chunk(content="x")])
    coalesced = source.pipe(coalesce_identity())
    first: list[Batch[Any]] = []
    second: list[Batch[Any]] = []

    coalesced.subscribe(first.append)
    coalesced.subscribe(second.append)

    assert first == second
    assert starts(first[0]) == [(0, "tool-call"), (1, "text")]


# -- reasoning segments (docs/decisions/0028-reasoning-round-trip.md) -----------------------------------------------


def test_a_reasoning_end_seals_the_open_block_and_later_reasoning_opens_a_new_one() -> None:
    out = one(chunk(reasoning_content="a"), ReasoningEnd(signature="SIG"), chunk(reasoning_content="b"))

    assert starts(out) == [(0, "reasoning"), (1, "reasoning")]
    assert [item for item in out if isinstance(item, ReasoningSeal)] == [ReasoningSeal(0, "SIG", None, None)]
    assert [(d.index, d.text) for d in out if isinstance(d, ReasoningDelta)] == [(0, "a"), (1, "b")]


def test_a_reasoning_end_with_encrypted_reasoning_and_no_text_opens_its_own_block() -> None:
    out = one(chunk(content="hi"), ReasoningEnd(encrypted="DATA"))

    assert starts(out) == [(0, "text"), (1, "reasoning")]
    assert [item for item in out if isinstance(item, ReasoningSeal)] == [ReasoningSeal(1, None, "DATA", None)]


def test_a_reasoning_end_with_nothing_to_keep_and_no_open_block_is_dropped() -> None:
    assert one(ReasoningEnd(item_id="rs_1"), ReasoningEnd()) == []


def test_a_reasoning_end_with_nothing_to_keep_still_ends_the_block() -> None:
    out = one(chunk(reasoning_content="a"), ReasoningEnd(), chunk(reasoning_content="b"))

    assert starts(out) == [(0, "reasoning"), (1, "reasoning")]
    assert not any(isinstance(item, ReasoningSeal) for item in out)
