"""``operators.responses.responses_call_shape``: the library's table of the Responses items a client runs (decision
0072), for a reader of the raw items (the transport's repairer). It agrees with what the reader itself reads: the
kind, the identity field, whether the item's ``name`` names the call, and the fields a built-in call's arguments are
made of (present: the reader reads arguments; absent or null: it does not)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

import pipeline
from operators import ToolCallKind
from operators.responses import ResponsesCallShape, responses_call_shape

BUILT_IN = {"apply_patch_call": ToolCallKind.APPLY_PATCH, "shell_call": ToolCallKind.SHELL,
            "local_shell_call": ToolCallKind.LOCAL_SHELL, "computer_call": ToolCallKind.COMPUTER,
            "mcp_approval_request": ToolCallKind.MCP_APPROVAL}


def _stream(item: Mapping[str, object]) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [item]}},
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_the_shapes_of_the_streamed_kinds() -> None:
    assert responses_call_shape({"type": "function_call"}) == ResponsesCallShape("function", "call_id", True, ())
    assert responses_call_shape({"type": "custom_tool_call"}) == ResponsesCallShape("custom", "call_id", True, ())


@pytest.mark.parametrize("item", [
    {"type": "message"}, {"type": "reasoning"}, {"type": "web_search_call"}, {"type": "mcp_call"},
    {"type": "shell_call", "environment": {"type": "container_auto"}}, {"type": "shell_call_output"},
    {"type": "function_call", "execution": "server"}, {"type": 3}, {},
])
def test_what_the_provider_runs_and_every_other_item_has_no_shape(item: dict[str, object]) -> None:
    assert responses_call_shape(item) is None


@pytest.mark.parametrize(("item_type", "kind"), BUILT_IN.items())
def test_a_built_in_calls_argument_fields_are_the_ones_the_reader_reads(item_type: str, kind: str) -> None:
    shape = responses_call_shape({"type": item_type, "environment": {"type": "local"}})
    assert shape is not None
    assert (shape.kind, shape.own_name) == (kind, False)
    assert shape.id_field == ("id" if kind == ToolCallKind.MCP_APPROVAL else "call_id")
    identity = {"type": item_type, "id": "item_1", "call_id": "call_1"}
    for field in shape.argument_fields:  # each field alone is enough: the call is read
        message = pipeline.assemble(pipeline.collect(_stream({**identity, field: {"x": 1}}), format="responses"))
        (call,) = message.tool_calls
        assert (call.kind, call.id) == (kind, identity[shape.id_field])
    nulls = dict.fromkeys(shape.argument_fields)  # none of them, or all null: the call is never finished
    for item in (identity, {**identity, **nulls}):
        read = pipeline.assemble(pipeline.collect(_stream(item), format="responses"))
        assert read.finish.failure is not None
        assert read.finish.failure.code == "MALFORMED_TOOL_CALL"
