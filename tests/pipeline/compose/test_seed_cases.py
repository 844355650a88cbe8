"""The seed's own tool-call identity cases, end to end through the pipeline, with the anomaly each quirk reports.

A tool call's ``id`` and ``name`` are identity: accepted only as non-empty strings, never concatenated, kept across
empty / null / non-string continuations. A call that never gets a string id or name is refused at ``[DONE]`` with
``MALFORMED_TOOL_CALL`` (after the usage, with no block-end at all). Anomalies are reported only when asked for
(``anomalies=True``) and never change the other chunks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import F, Json, delta, finish, of_type, run, sse, tool, tools, usage

import pipeline
from operators import ToolCallBlock

# -- expected chunks, as JSON ---------------------------------------------------------------------------------------


def start_call(index: int) -> Json:
    return {"type": "block-start", "index": index, "block_type": "tool-call"}


def call_delta(index: int, id: str, name: str | None, arguments_delta: str) -> Json:
    out: Json = {"type": "tool-call-delta", "index": index, "id": id}
    if name is not None:
        out["name"] = name
    out["arguments_delta"] = arguments_delta
    return out


def end_call(index: int, id: str, name: str, arguments: str) -> Json:
    return {
        "type": "block-end",
        "index": index,
        "block": {"type": "tool-call", "id": id, "name": name, "arguments": arguments},
    }


def usage_chunk(input_tokens: int, output_tokens: int) -> Json:
    total = input_tokens + output_tokens
    return {
        "type": "usage",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": total},
    }


TOOL_CALLS_FINISH: Json = {"type": "finish", "reason": {"kind": "tool-calls"}}
STOP_FINISH: Json = {"type": "finish", "reason": {"kind": "stop"}}


def anomalies(out: list[Json]) -> list[tuple[str, int | None]]:
    return [(c["kind"], c["index"]) for c in of_type(out, "anomaly")]


def details(out: list[Json], kind: str) -> list[str]:
    return [c["detail"] for c in of_type(out, "anomaly") if c["kind"] == kind]


def without_anomalies(out: list[Json]) -> list[Json]:
    return [c for c in out if c["type"] != "anomaly"]


def refusal(out: list[Json]) -> str:
    """The message of the ``MALFORMED_TOOL_CALL`` finish that ends ``out``."""
    last = out[-1]
    assert last["type"] == "finish"
    assert last["reason"]["kind"] == "error"
    assert last["reason"]["failure"]["code"] == "MALFORMED_TOOL_CALL"
    message: str = last["reason"]["failure"]["message"]
    return message


def assembled_calls(data: bytes) -> list[tuple[str, str, str]]:
    message = pipeline.assemble(pipeline.collect(data))
    return [(c.id, c.name, c.arguments) for c in message.tool_calls]


def check_anomalies_are_opt_in(data: bytes) -> list[Json]:
    """Runs ``data`` with and without anomalies: the flag only adds anomaly chunks. Returns the run with them."""
    plain = run(data)
    reported = run(data, anomalies=True)
    assert of_type(plain, "anomaly") == []
    assert without_anomalies(reported) == plain
    return reported


# -- continuations keep the identity --------------------------------------------------------------------------------


def test_empty_string_continuation_deltas_keep_id_and_name() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name="Glob", arguments="")),
        tools(tool(0, id="", name="", arguments='{"pattern"')),
        tools(tool(0, id="", name="", arguments=':"*.py"}')),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out) == [
        start_call(0),
        call_delta(0, "call_1", "Glob", ""),
        call_delta(0, "call_1", "Glob", '{"pattern"'),
        call_delta(0, "call_1", "Glob", ':"*.py"}'),
        end_call(0, "call_1", "Glob", '{"pattern":"*.py"}'),
        TOOL_CALLS_FINISH,
    ]
    # reported once per call and field, not once per continuation
    assert anomalies(out) == [("empty-identity", 0), ("empty-identity", 0)]
    assert details(out, "empty-identity") == ["id '' ignored, keeping 'call_1'", "name '' ignored, keeping 'Glob'"]
    assert assembled_calls(data) == [("call_1", "Glob", '{"pattern":"*.py"}')]


def test_null_continuation_deltas_keep_id_and_name() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name="Glob", arguments="")),
        tools(tool(0, id=None, name=None, arguments=None)),
        tools(tool(0, id=None, name=None, arguments="{}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out) == [
        start_call(0),
        call_delta(0, "call_1", "Glob", ""),
        call_delta(0, "call_1", "Glob", ""),
        call_delta(0, "call_1", "Glob", "{}"),
        end_call(0, "call_1", "Glob", "{}"),
        TOOL_CALLS_FINISH,
    ]
    assert sorted(anomalies(out), key=str) == [("empty-identity", 0), ("empty-identity", 0), ("null-arguments", 0)]
    assert details(out, "empty-identity") == ["id None ignored, keeping 'call_1'", "name None ignored, keeping 'Glob'"]
    assert "null" not in json.dumps(without_anomalies(out))
    assert assembled_calls(data) == [("call_1", "Glob", "{}")]


def test_repeated_identical_identity_is_not_concatenated() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name="Glob", arguments="")),
        tools(tool(0, id="call_1", name="Glob", arguments='{"a"')),
        tools(tool(0, id=None, name=None, arguments=":")),
        tools(tool(0, id="call_1", name="Glob", arguments="1}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "block-end") == [end_call(0, "call_1", "Glob", '{"a":1}')]
    assert {(c["id"], c["name"]) for c in of_type(out, "tool-call-delta")} == {("call_1", "Glob")}
    text = json.dumps(out)
    for glued in ("GlobGlob", "Globnull", "nullGlob", "call_1call_1", "call_1null"):
        assert glued not in text
    # re-sending the same identity is not an anomaly; only the nulls are
    assert anomalies(out) == [("empty-identity", 0), ("empty-identity", 0)]
    assert assembled_calls(data) == [("call_1", "Glob", '{"a":1}')]


def test_conflicting_name_keeps_the_identity_of_the_first_delta() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name="Glob", arguments="")),
        tools(tool(0, name="Grep", arguments="{}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "tool-call-delta") == [
        call_delta(0, "call_1", "Glob", ""),
        call_delta(0, "call_1", "Glob", "{}"),
    ]
    assert of_type(out, "block-end") == [end_call(0, "call_1", "Glob", "{}")]
    assert anomalies(out) == [("conflicting-identity", 0)]
    assert "GlobGrep" not in json.dumps(out)


def test_parallel_calls_keep_separate_identities_under_interleaved_empty_and_null_continuations() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_a", name="Read", arguments=""), tool(1, id="call_b", name="Glob", arguments="")),
        tools(tool(1, id="", name="", arguments='{"b"')),
        tools(tool(0, id=None, name=None, arguments='{"a"')),
        tools(tool(1, id=None, name=None, arguments=":2}"), tool(0, id="", name="", arguments=":1}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out) == [
        start_call(0),
        call_delta(0, "call_a", "Read", ""),
        start_call(1),
        call_delta(1, "call_b", "Glob", ""),
        call_delta(1, "call_b", "Glob", '{"b"'),
        call_delta(0, "call_a", "Read", '{"a"'),
        call_delta(1, "call_b", "Glob", ":2}"),
        call_delta(0, "call_a", "Read", ":1}"),
        end_call(0, "call_a", "Read", '{"a":1}'),
        end_call(1, "call_b", "Glob", '{"b":2}'),
        TOOL_CALLS_FINISH,
    ]
    assert sorted(anomalies(out), key=str) == [("empty-identity", 0)] * 2 + [("empty-identity", 1)] * 2
    assert assembled_calls(data) == [("call_a", "Read", '{"a":1}'), ("call_b", "Glob", '{"b":2}')]


# -- refusal of an unidentified call --------------------------------------------------------------------------------


def test_refused_when_the_id_never_arrives_with_usage_before_the_failure_and_no_block_end() -> None:
    data = sse(
        F,
        tools(tool(0, name="Glob", arguments="")),
        tools(tool(0, arguments="{}")),
        finish("tool_calls", usage={"prompt_tokens": 7, "completion_tokens": 3}),
    )

    out = check_anomalies_are_opt_in(data)

    assert out[:-1] == [
        start_call(0),
        call_delta(0, "", "Glob", ""),
        call_delta(0, "", "Glob", "{}"),
        usage_chunk(7, 3),
    ]
    assert of_type(out, "block-end") == []
    message = refusal(out)
    assert "wire index 0" in message
    assert "no id" in message
    assert "no name" not in message
    assert anomalies(out) == []  # the id was absent, not sent badly
    assert pipeline.assemble(pipeline.collect(data)).tool_calls == ()


def test_refused_when_the_id_is_only_ever_empty() -> None:
    data = sse(
        F,
        tools(tool(0, id="", name="Glob", arguments="{}")),
        tools(tool(0, id="", arguments="")),
        finish("tool_calls"),
        usage(5, 1),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "block-end") == []
    assert of_type(out, "usage") == [usage_chunk(5, 1)]
    assert [c["type"] for c in out[-2:]] == ["usage", "finish"]
    assert "no id" in refusal(out)
    assert anomalies(out) == [("empty-identity", 0)]
    assert details(out, "empty-identity") == ["id '' ignored, still unknown"]


def test_refused_when_the_name_never_arrives_with_usage_before_the_failure_and_no_block_end() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name=None, arguments="")),
        tools(tool(0, id="", name="", arguments="{}")),
        finish("tool_calls"),
        usage(9, 2),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out)[:-1] == [
        start_call(0),
        call_delta(0, "call_1", None, ""),
        call_delta(0, "call_1", None, "{}"),
        usage_chunk(9, 2),
    ]
    assert of_type(out, "block-end") == []
    message = refusal(out)
    assert "wire index 0" in message
    assert "no name" in message
    assert "no id" not in message
    assert ("empty-identity", 0) in anomalies(out)
    assert details(out, "empty-identity") == ["name None ignored, still unknown", "id '' ignored, keeping 'call_1'"]


def test_one_unidentified_parallel_call_refuses_the_whole_response() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_a", name="Read", arguments="{}"), tool(1, name="Glob", arguments="{}")),
        finish("tool_calls"),
        usage(4, 4),
    )

    out = run(data)

    assert of_type(out, "block-end") == []
    assert out[-2] == usage_chunk(4, 4)
    message = refusal(out)
    assert "wire index 1" in message
    assert "wire index 0" not in message
    assert pipeline.assemble(pipeline.collect(data)).tool_calls == ()


# -- late and odd identities ----------------------------------------------------------------------------------------


def test_id_arriving_one_delta_late_is_assembled() -> None:
    data = sse(
        F,
        tools(tool(0, name="Glob", arguments='{"a"')),
        tools(tool(0, id="call_1", arguments=":1}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert out == [
        start_call(0),
        call_delta(0, "", "Glob", '{"a"'),
        call_delta(0, "call_1", "Glob", ":1}"),
        end_call(0, "call_1", "Glob", '{"a":1}'),
        TOOL_CALLS_FINISH,
    ]
    assert assembled_calls(data) == [("call_1", "Glob", '{"a":1}')]


@pytest.mark.parametrize(
    "bad_id", [7, {"id": "call_1"}, ["call_1"], True, 0.5], ids=["int", "object", "list", "bool", "float"]
)
def test_non_string_id_is_ignored_and_the_call_refused_without_a_string_id(bad_id: Any) -> None:
    data = sse(
        F,
        tools(tool(0, id=bad_id, name="Glob", arguments="{}")),
        tools(tool(0, id=bad_id, arguments="")),
        finish("tool_calls"),
        usage(3, 1),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out)[:-1] == [
        start_call(0),
        call_delta(0, "", "Glob", "{}"),
        call_delta(0, "", "Glob", ""),
        usage_chunk(3, 1),
    ]
    assert of_type(out, "block-end") == []
    assert "no id" in refusal(out)
    assert anomalies(out) == [("non-string-identity", 0)]
    assert pipeline.assemble(pipeline.collect(data)).tool_calls == ()


def test_non_string_id_is_ignored_until_a_string_id_arrives() -> None:
    """GLM sends an integer id; a later string id is the call's identity."""
    data = sse(
        F,
        tools(tool(0, id=7, name="Glob", arguments='{"a"')),
        tools(tool(0, id="call_7", arguments=":1}")),
        tools(tool(0, id=7, arguments="")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "block-end") == [end_call(0, "call_7", "Glob", '{"a":1}')]
    assert out[-1] == TOOL_CALLS_FINISH
    assert anomalies(out) == [("non-string-identity", 0)]
    assert "7call_7" not in json.dumps(out)


def test_non_string_name_is_ignored_and_the_call_refused_without_a_string_name() -> None:
    data = sse(F, tools(tool(0, id="call_1", name=42, arguments="{}")), finish("tool_calls"))

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out)[:2] == [start_call(0), call_delta(0, "call_1", None, "{}")]
    assert "no name" in refusal(out)
    assert anomalies(out) == [("non-string-identity", 0)]


def test_ollama_parallel_calls_all_at_index_0_with_distinct_ids_become_separate_calls() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_a", name="Read", arguments='{"path":"a"}')),
        tools(tool(0, id="call_b", name="Glob", arguments='{"pattern":"*"}')),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out) == [
        start_call(0),
        call_delta(0, "call_a", "Read", '{"path":"a"}'),
        start_call(1),
        call_delta(1, "call_b", "Glob", '{"pattern":"*"}'),
        end_call(0, "call_a", "Read", '{"path":"a"}'),
        end_call(1, "call_b", "Glob", '{"pattern":"*"}'),
        TOOL_CALLS_FINISH,
    ]
    assert anomalies(out) == [("reused-index", 1)]
    assert assembled_calls(data) == [("call_a", "Read", '{"path":"a"}'), ("call_b", "Glob", '{"pattern":"*"}')]


def test_ollama_parallel_calls_at_index_0_in_one_delta_become_separate_calls() -> None:
    data = sse(
        F,
        tools(
            tool(0, id="call_a", name="Read", arguments="{}"),
            tool(0, id="call_b", name="Glob", arguments="{}"),
            tool(0, id="call_c", name="Grep", arguments="{}"),
        ),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "block-end") == [
        end_call(0, "call_a", "Read", "{}"),
        end_call(1, "call_b", "Glob", "{}"),
        end_call(2, "call_c", "Grep", "{}"),
    ]
    assert anomalies(out) == [("reused-index", 1), ("reused-index", 2)]


def test_delta_without_index_joins_the_call_named_by_its_id_else_the_latest_call() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_a", name="Read", arguments='{"a"')),
        tools(tool(1, id="call_b", name="Glob", arguments='{"b"')),
        tools(tool(arguments=":2}")),  # no index, no id: the latest call (call_b)
        tools(tool(id="call_a", arguments=":1}")),  # no index: the call its id names (call_a)
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out) == [
        start_call(0),
        call_delta(0, "call_a", "Read", '{"a"'),
        start_call(1),
        call_delta(1, "call_b", "Glob", '{"b"'),
        call_delta(1, "call_b", "Glob", ":2}"),
        call_delta(0, "call_a", "Read", ":1}"),
        end_call(0, "call_a", "Read", '{"a":1}'),
        end_call(1, "call_b", "Glob", '{"b":2}'),
        TOOL_CALLS_FINISH,
    ]
    assert anomalies(out) == [("missing-index", None)]  # reported once per response


def test_calls_without_any_index_are_told_apart_by_id() -> None:
    data = sse(
        F,
        tools(tool(id="call_a", name="Read", arguments="{}")),
        tools(tool(id="call_b", name="Glob", arguments="{")),
        tools(tool(arguments="}")),
        finish("tool_calls"),
    )

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "block-end") == [end_call(0, "call_a", "Read", "{}"), end_call(1, "call_b", "Glob", "{}")]
    assert anomalies(out) == [("missing-index", None)]


# -- framing anomalies ----------------------------------------------------------------------------------------------


def test_comment_lines_are_ignored_and_reported() -> None:
    data = b": OPENROUTER PROCESSING\n\n" + sse(F, delta(content="hi"), finish("stop"))

    out = check_anomalies_are_opt_in(data)

    assert anomalies(out) == [("comment", None)]
    assert out[-1] == STOP_FINISH


def test_payload_after_done_is_not_read_and_reported() -> None:
    data = sse(F, delta(content="hi"), finish("stop")) + sse(usage(100, 100), delta(content="late"), done=False)

    out = check_anomalies_are_opt_in(data)

    assert of_type(out, "usage") == []
    assert [c["text"] for c in of_type(out, "text-delta")] == ["hi"]
    assert anomalies(out) == [("payload-after-done", None)]
    assert out[-1] == STOP_FINISH


def test_missing_done_after_a_finish_reason_counts_as_done_and_is_reported() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_1", name="Glob", arguments="{}")),
        finish("tool_calls"),
        usage(2, 1),
        done=False,
    )

    out = check_anomalies_are_opt_in(data)

    assert without_anomalies(out)[-3:] == [end_call(0, "call_1", "Glob", "{}"), usage_chunk(2, 1), TOOL_CALLS_FINISH]
    assert anomalies(out) == [("missing-done", None)]


# -- anomalies are opt-in -------------------------------------------------------------------------------------------

QUIRKS: dict[str, tuple[bytes, str]] = {
    "empty-identity": (
        sse(F, tools(tool(0, id="c", name="f", arguments="")), tools(tool(0, id="", arguments="{}"))),
        "empty-identity",
    ),
    "non-string-identity": (sse(F, tools(tool(0, id=7, name="f", arguments="{}"))), "non-string-identity"),
    "conflicting-identity": (
        sse(F, tools(tool(0, id="c", name="f", arguments="")), tools(tool(0, name="g", arguments="{}"))),
        "conflicting-identity",
    ),
    "null-arguments": (sse(F, tools(tool(0, id="c", name="f", arguments=None))), "null-arguments"),
    "reused-index": (
        sse(F, tools(tool(0, id="a", name="f", arguments="{}")), tools(tool(0, id="b", name="g", arguments="{}"))),
        "reused-index",
    ),
    "missing-index": (sse(F, tools(tool(id="c", name="f", arguments="{}"))), "missing-index"),
    "comment": (b": keepalive\n\n" + sse(F, delta(content="x")), "comment"),
    "payload-after-done": (sse(F, delta(content="x")) + sse(usage(1, 1), done=False), "payload-after-done"),
    "missing-done": (sse(F, delta(content="x"), finish("stop"), done=False), "missing-done"),
}


@pytest.mark.parametrize(("data", "kind"), list(QUIRKS.values()), ids=list(QUIRKS))
def test_each_quirk_is_reported_only_when_anomalies_are_asked_for(data: bytes, kind: str) -> None:
    plain = pipeline.collect(data)
    reported = [c.to_dict() for c in pipeline.collect(data, anomalies=True)]

    assert all(c.type != "anomaly" for c in plain)
    assert kind in [c["kind"] for c in of_type(reported, "anomaly")]
    assert without_anomalies(reported) == [c.to_dict() for c in plain]
    assert reported[-1]["type"] == "finish"


def test_assembled_tool_calls_are_always_identified() -> None:
    data = sse(
        F,
        tools(tool(0, id="call_a", name="Read", arguments=""), tool(1, id="call_b", name="Glob", arguments="")),
        tools(tool(0, id=None, name="", arguments="{}"), tool(1, id="", name=None, arguments="{}")),
        finish("tool_calls"),
    )

    message = pipeline.assemble(pipeline.collect(data))

    assert message.finish.kind == "tool-calls"
    assert message.tool_calls == (ToolCallBlock("call_a", "Read", "{}"), ToolCallBlock("call_b", "Glob", "{}"))
