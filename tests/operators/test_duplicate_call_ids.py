"""A non-empty id that another call of the response already owns is not a second call's identity."""

from __future__ import annotations

from builders import F, finish, of_type, run, sse, tool, tools


def test_an_id_owned_by_another_call_is_refused_and_the_call_stays_unidentified() -> None:
    data = sse(
        F,
        tools(tool(0, name="f", arguments="")),
        tools(tool(1, id="a", name="g", arguments="{}")),
        tools(tool(0, id="a", arguments="{}")),
        finish("tool_calls"),
    )

    out = run(data, anomalies=True)

    ends = [c for c in of_type(out, "block-end") if c["block"]["type"] == "tool-call"]
    assert [c["block"]["id"] for c in ends] == []  # the unidentified call refuses the whole response
    [finish_chunk] = of_type(out, "finish")
    assert finish_chunk["reason"]["failure"]["code"] == "MALFORMED_TOOL_CALL"
    assert "id" in finish_chunk["reason"]["failure"]["message"]
    [anomaly] = [a for a in of_type(out, "anomaly") if a["kind"] == "duplicate-id"]
    assert "id 'a' ignored" in anomaly["detail"]
    assert "already owns it" in anomaly["detail"]


def test_a_call_repeating_its_own_id_is_not_an_anomaly() -> None:
    data = sse(
        F,
        tools(tool(0, id="a", name="f", arguments="")),
        tools(tool(0, id="a", arguments="{}")),
        finish("tool_calls"),
    )

    out = run(data, anomalies=True)

    ends = [c["block"] for c in of_type(out, "block-end")]
    assert [(b["id"], b["name"], b["arguments"]) for b in ends] == [("a", "f", "{}")]
    assert [a for a in of_type(out, "anomaly") if a["kind"] == "duplicate-id"] == []


def test_no_two_tool_call_block_ends_share_an_id_when_ids_collide_across_indexes() -> None:
    data = sse(
        F,
        tools(tool(0, name="f", arguments="{}"), tool(1, id="b", name="g", arguments="{}")),
        tools(tool(2, name="h", arguments="{}")),
        tools(tool(0, id="b"), tool(2, id="c")),
        finish("tool_calls"),
    )

    ids = [c["block"]["id"] for c in of_type(run(data), "block-end") if c["block"]["type"] == "tool-call"]

    assert len(ids) == len(set(ids))
