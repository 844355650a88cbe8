"""A non-empty id that another call of the response already owns is not a second call's identity: two calls claiming
one id are refused (``MALFORMED_TOOL_CALL``) in chat, Messages and Responses, never merged into one call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import F, finish, of_type, run, sse, tool, tools

import pipeline


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


# -- two calls claiming one id from their first delta: refused in all three formats, never merged ---------------------


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _messages_two_tool_uses_with_one_id() -> bytes:
    def tool_use(index: int, arguments: str) -> bytes:
        block = {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": arguments}
        return (
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            + _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            + _event("content_block_stop", {"type": "content_block_stop", "index": index})
        )

    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                  "model": "x", "usage": {"input_tokens": 1, "output_tokens": 1}}}
    return (
        _event("message_start", start)
        + tool_use(0, '{"x":1}')
        + tool_use(1, '{"y":2}')
        + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                   "usage": {"output_tokens": 5}})
        + _event("message_stop", {"type": "message_stop"})
    )


def _responses_two_function_calls_with_one_call_id() -> bytes:
    def function_call(index: int, arguments: str) -> bytes:
        def item(given: str) -> dict[str, Any]:
            return {"type": "function_call", "id": f"fc_{index}", "call_id": "call_a", "name": "f",
                    "arguments": given}

        delta = {"type": "response.function_call_arguments.delta", "output_index": index, "item_id": f"fc_{index}",
                 "delta": arguments}
        return (
            _event("response.output_item.added",
                   {"type": "response.output_item.added", "output_index": index, "item": item("")})
            + _event("response.function_call_arguments.delta", delta)
            + _event("response.output_item.done",
                     {"type": "response.output_item.done", "output_index": index, "item": item(arguments)})
        )

    done = {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [],
                                                       "usage": {"input_tokens": 1, "output_tokens": 2}}}
    return function_call(0, '{"x":1}') + function_call(1, '{"y":2}') + _event("response.completed", done)


@pytest.mark.parametrize(
    "data",
    [
        sse(F, tools(tool(0, id="a", name="f", arguments='{"x":1}')),
            tools(tool(1, id="a", name="f", arguments='{"y":2}')), finish("tool_calls")),
        _messages_two_tool_uses_with_one_id(),
        _responses_two_function_calls_with_one_call_id(),
    ],
    ids=["chat", "messages", "responses"],
)
def test_two_calls_claiming_one_id_are_refused_never_merged(data: bytes) -> None:
    out = [chunk.to_dict() for chunk in pipeline.collect(data, anomalies=True)]

    calls = [c["block"] for c in of_type(out, "block-end") if c["block"]["type"] == "tool-call"]
    assert all(call["arguments"] in ('{"x":1}', '{"y":2}') for call in calls)  # nothing concatenated
    assert not any('{"x":1}{"y":2}' in delta["arguments_delta"] for delta in of_type(out, "tool-call-delta"))
    [finish_chunk] = of_type(out, "finish")
    assert finish_chunk["reason"]["failure"]["code"] == "MALFORMED_TOOL_CALL"
    assert [a["kind"] for a in of_type(out, "anomaly") if a["kind"] == "duplicate-id"] == ["duplicate-id"]


@pytest.mark.parametrize(
    "data",
    [
        sse(F, tools(tool(0, id="a", name="f", arguments='{"x":1}')),
            tools(tool(1, id="a", name="f", arguments='{"y":2}')), finish("tool_calls")),
        _messages_two_tool_uses_with_one_id(),
        _responses_two_function_calls_with_one_call_id(),
    ],
    ids=["chat", "messages", "responses"],
)
def test_the_refusal_of_a_duplicate_id_names_the_call_that_owns_it(data: bytes) -> None:
    out = [chunk.to_dict() for chunk in pipeline.collect(data)]

    [finish_chunk] = of_type(out, "finish")
    message = finish_chunk["reason"]["failure"]["message"]
    refused = "its id '{}' was refused: the tool call at wire index 0 (block 0) owns it"
    assert any(refused.format(call_id) in message for call_id in ("a", "toolu_a", "call_a")), message
    assert "(block 1) has no id (its id" in message


def test_a_call_that_never_claimed_an_owned_id_is_described_as_before() -> None:
    data = sse(F, tools(tool(0, name="f", arguments="{}")), finish("tool_calls"))

    [finish_chunk] = of_type(run(data), "finish")

    message = finish_chunk["reason"]["failure"]["message"]
    assert message.startswith("tool call at wire index 0 (block 0) has no id: refused"), message
    assert "owns" not in message
