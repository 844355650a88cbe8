"""The Responses items a client runs are tool calls with their kind (docs/decisions/0072-client-run-tool-calls.md).

Custom tool calls (their input streamed), ``apply_patch_call``, ``shell_call``, ``local_shell_call``,
``computer_call`` and ``mcp_approval_request`` each give a ``ToolCallBlock`` whose ``kind`` says which, under the
identity rules of function calls; what the provider runs stays informational. The held-out streams
(``tests/corpus/client-calls``) give the same chunks at every read split, on the fast path as on the rule chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import CLIENT_CALL_STREAMS

import pipeline
from operators import (
    DEFAULT_RETRYABLE_CODES,
    Anomaly,
    BlockEnd,
    Chunk,
    Code,
    Finish,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallKind,
    UsageChunk,
    chunk_from_dict,
    chunk_from_json,
)

Json = dict[str, Any]
USAGE: Json = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
HELD_OUT = sorted(CLIENT_CALL_STREAMS.glob("*.sse"))


def ev(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def added(index: int, item: Json) -> bytes:
    return ev("response.output_item.added", output_index=index, item=item)


def done(index: int, item: Json) -> bytes:
    return ev("response.output_item.done", output_index=index, item=item)


def custom(index: int = 0, call_id: Any = "call_1", name: Any = "write_sql", input: str = "", **more: Any) -> Json:
    return {"type": "custom_tool_call", "id": f"ctc_{index}", "call_id": call_id, "name": name, "input": input,
            **more}


def input_delta(index: int, delta: str) -> bytes:
    return ev("response.custom_tool_call_input.delta", output_index=index, item_id=f"ctc_{index}", delta=delta)


def completed(**response: Any) -> bytes:
    return ev("response.completed", response={"status": "completed", "usage": USAGE, **response})


def chunks(*events: bytes) -> list[Chunk]:
    return pipeline.collect(b"".join(events), anomalies=True, format="responses")


def calls(out: list[Chunk]) -> list[ToolCallBlock]:
    return [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]


def finish(out: list[Chunk]) -> Finish:
    last = out[-1]
    assert isinstance(last, Finish)
    return last


def anomalies(out: list[Chunk]) -> list[Anomaly]:
    return [c for c in out if isinstance(c, Anomaly)]


# -- every kind ------------------------------------------------------------------------------------------------------

ACTION = {"type": "exec", "command": ["ls", "-a"], "env": {}}
OPERATION = {"type": "create_file", "path": "a.py", "diff": "+print(1)\n"}
SHELL = {"commands": ["pytest -q"], "timeout_ms": 1000}
CLICK = {"type": "click", "button": "left", "x": 1, "y": 2}
BUILT_IN = [
    ({"type": "apply_patch_call", "call_id": "c", "operation": OPERATION}, "apply_patch", json.dumps(OPERATION)),
    ({"type": "shell_call", "call_id": "c", "action": SHELL}, "shell", json.dumps(SHELL)),
    ({"type": "local_shell_call", "call_id": "c", "action": ACTION}, "local_shell", json.dumps(ACTION)),
    ({"type": "computer_call", "call_id": "c", "action": CLICK, "pending_safety_checks": []}, "computer",
     json.dumps({"action": CLICK, "pending_safety_checks": []})),
]


@pytest.mark.parametrize(("item", "kind", "arguments"), BUILT_IN, ids=[row[1] for row in BUILT_IN])
def test_a_built_in_call_is_a_tool_call_named_by_its_kind_with_its_action_as_sent(
    item: Json, kind: str, arguments: str
) -> None:
    item = {"id": "it_1", "status": "completed", **item}
    out = chunks(added(0, {**item, "status": "in_progress"}), done(0, item), completed())

    [call] = calls(out)
    assert (call.id, call.name, call.kind) == ("c", kind, kind)
    assert json.loads(call.arguments) == json.loads(arguments)
    assert finish(out).reason.kind == "tool-calls"


def test_a_built_in_calls_arguments_are_the_exact_json_text_of_its_done_item() -> None:
    text = b'{"type":"exec","command":["echo","\\u00e9"] , "env":{}}'
    item = b'{"type":"local_shell_call","id":"l","call_id":"c","action":' + text + b"}"
    body = (added(0, {"type": "local_shell_call", "id": "l", "call_id": "c", "action": {"command": []}})
            + b'event: response.output_item.done\ndata: {"type":"response.output_item.done","output_index":0,'
            + b'"item":' + item + b"}\n\n" + completed())

    [call] = calls(chunks(body))

    assert call.arguments == text.decode()


def test_a_custom_call_carries_its_input_exactly_as_sent_not_json() -> None:
    out = chunks(added(0, custom()), input_delta(0, "SELECT * "), input_delta(0, "FROM t;\n"),
                 ev("response.custom_tool_call_input.done", output_index=0, item_id="ctc_0",
                    input="SELECT * FROM t;\n"),
                 done(0, custom(input="SELECT * FROM t;\n")), completed())

    [call] = calls(out)
    assert (call.id, call.name, call.kind, call.arguments) == ("call_1", "write_sql", "custom", "SELECT * FROM t;\n")
    deltas = [c for c in out if isinstance(c, ToolCallDelta)]
    assert {c.kind for c in deltas} == {"custom"}
    assert finish(out).reason.kind == "tool-calls"


def test_a_custom_input_given_only_whole_is_sent_once() -> None:
    out = chunks(added(0, custom()),
                 ev("response.custom_tool_call_input.done", output_index=0, item_id="ctc_0", input="x = 1"),
                 done(0, custom(input="x = 1")), completed())

    assert [c.arguments_delta for c in out if isinstance(c, ToolCallDelta) and c.arguments_delta] == ["x = 1"]


def test_an_mcp_approval_request_is_identified_by_its_own_id_and_carries_server_tool_and_arguments() -> None:
    item = {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "wiki", "name": "ask",
            "arguments": '{"q":"why"}'}
    out = chunks(added(0, item), done(0, item), completed())

    [call] = calls(out)
    assert (call.id, call.name, call.kind) == ("mcpr_1", "mcp_approval", ToolCallKind.MCP_APPROVAL)
    assert json.loads(call.arguments) == {"server_label": "wiki", "name": "ask", "arguments": '{"q":"why"}'}


def test_parallel_custom_calls_with_interleaved_input_deltas_keep_each_input_apart() -> None:
    out = chunks(added(0, custom(0, "call_a", "sql")), added(1, custom(1, "call_b", "py")),
                 input_delta(0, "SELECT "), input_delta(1, "print("), input_delta(0, "1"), input_delta(1, "2)"),
                 done(0, custom(0, "call_a", "sql", "SELECT 1")), done(1, custom(1, "call_b", "py", "print(2)")),
                 completed())

    assert [(c.id, c.name, c.arguments) for c in calls(out)] == [("call_a", "sql", "SELECT 1"),
                                                                 ("call_b", "py", "print(2)")]


# -- the identity rules ----------------------------------------------------------------------------------------------


def test_an_identity_blanked_on_done_or_changed_in_the_terminal_event_keeps_the_first() -> None:
    out = chunks(added(0, custom()), input_delta(0, "a"), done(0, custom(call_id="", name="", input="a")),
                 completed(output=[custom(call_id="call_2", name="other", input="a")]))

    assert [(c.id, c.name) for c in calls(out)] == [("call_1", "write_sql")]
    assert not anomalies(out)


def test_an_identity_changed_on_done_keeps_the_first_and_says_so() -> None:
    out = chunks(added(0, custom()), input_delta(0, "a"), done(0, custom(call_id="call_2", input="a")), completed())

    assert [c.id for c in calls(out)] == ["call_1"]
    [conflict] = [a for a in anomalies(out) if a.kind == "conflicting-identity"]
    assert "custom_tool_call" in conflict.detail


def test_a_call_never_identified_is_malformed_tool_call_after_its_usage_with_no_block_end() -> None:
    out = chunks(added(0, custom(call_id="")), input_delta(0, "a"), done(0, custom(call_id="", input="a")),
                 completed())

    reason = finish(out).reason
    assert reason.code == Code.MALFORMED_TOOL_CALL
    assert reason.failure is not None
    assert "custom tool call" in reason.failure.message
    assert Code.MALFORMED_TOOL_CALL in DEFAULT_RETRYABLE_CODES
    assert isinstance(out[-2], UsageChunk)
    assert not any(isinstance(c, BlockEnd) for c in out)


def test_a_cut_inside_the_input_is_an_error_never_half_an_input() -> None:
    body = b"".join([added(0, custom()), input_delta(0, "*** Begin Patch\n"), input_delta(0, "+half")])
    for end in (len(body), len(body) - 9):  # after a whole delta, and inside one
        out = pipeline.collect(body[:end], anomalies=True, format="responses")
        assert finish(out).reason.code == Code.STREAM_CLOSED
        assert not any(isinstance(c, BlockEnd) for c in out)


def test_a_built_in_call_that_never_finished_is_malformed_tool_call_not_its_added_action() -> None:
    item = {"type": "local_shell_call", "id": "l", "call_id": "c", "action": {"type": "exec", "command": []}}
    out = chunks(added(0, item), completed())

    reason = finish(out).reason
    assert reason.code == Code.MALFORMED_TOOL_CALL
    assert reason.failure is not None
    assert "local_shell_call at output_index 0" in reason.failure.message
    assert isinstance(out[-2], UsageChunk)
    assert not calls(out)


def test_an_input_delta_at_the_index_of_a_call_of_another_kind_is_a_malformed_body() -> None:
    function = {"type": "function_call", "id": "fc", "call_id": "call_f", "name": "f", "arguments": ""}
    out = chunks(added(0, function), input_delta(0, "x"), completed())

    reason = finish(out).reason
    assert reason.code == Code.MALFORMED_RESPONSE
    assert reason.failure is not None
    assert "function_call" in reason.failure.message


# -- what the provider runs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("item", [
    {"type": "shell_call", "call_id": "c", "action": SHELL, "environment": {"type": "container_reference"}},
    {"type": "shell_call_output", "call_id": "c", "output": []},
    {"type": "mcp_call", "name": "ask", "server_label": "wiki", "arguments": "{}"},
    {"type": "local_shell_call", "call_id": "c", "action": ACTION, "execution": "server"},
], ids=["hosted-shell", "shell-output", "mcp-call", "execution-server"])
def test_what_the_provider_runs_stays_informational(item: Json) -> None:
    item = {"id": "x", **item}
    out = chunks(added(0, item), done(0, item), ev("response.output_text.delta", output_index=1, delta="ok"),
                 completed())

    assert not calls(out)
    assert [a.kind for a in anomalies(out)] == ["server-tool"]
    assert finish(out).reason.kind == "stop"


# -- the protocol ----------------------------------------------------------------------------------------------------


def test_the_kind_is_in_the_json_only_when_it_is_not_a_function_and_is_read_back() -> None:
    plain = ToolCallBlock("c", "f", "{}")
    custom_block = ToolCallBlock("c", "sql", "SELECT 1", kind=ToolCallKind.CUSTOM)
    delta = ToolCallDelta(0, "c", "sql", "SELECT", kind="custom")

    assert "kind" not in plain.to_dict()
    assert "kind" not in ToolCallDelta(0, "c", "f", "{}").to_dict()
    assert list(custom_block.to_dict()) == ["type", "id", "name", "kind", "arguments"]
    assert list(delta.to_dict()) == ["type", "index", "id", "name", "kind", "arguments_delta"]
    assert chunk_from_json(delta.to_json()) == delta
    assert chunk_from_dict(BlockEnd(1, custom_block).to_dict()) == BlockEnd(1, custom_block)
    assert chunk_from_dict(BlockEnd(1, plain).to_dict()) == BlockEnd(1, plain)
    known = {"function", "custom", "apply_patch", "shell", "local_shell", "computer", "mcp_approval"}
    assert known == ToolCallKind.KNOWN
    assert ToolCallBlock("c", "x", "{}", kind="future_kind").kind == "future_kind"  # extensible


@pytest.mark.parametrize("kind", ["", None, 3])
def test_a_kind_must_be_a_non_empty_string(kind: Any) -> None:
    with pytest.raises(ValueError, match="kind"):
        ToolCallBlock("c", "f", "{}", kind=kind)
    with pytest.raises(ValueError, match="kind"):
        ToolCallDelta(0, "c", "f", "{}", kind=kind)


# -- the held-out streams at every split -----------------------------------------------------------------------------


@pytest.mark.parametrize("step", [5, pytest.param(1, marks=pytest.mark.slow)], ids=["every-5th", "every"])
@pytest.mark.parametrize("path", HELD_OUT, ids=lambda path: path.stem)
def test_a_held_out_stream_gives_the_same_chunks_at_every_read_split_on_both_paths(path: Path, step: int) -> None:
    """Two reads split at every byte (every 5th in the fast loop), and reads of 1, 7 and 64 bytes: the fast path
    (the default chain) and the rule chain (``rules=``) give the chunks of the whole body read at once."""
    data = path.read_bytes()
    whole = pipeline.collect(data, anomalies=True, rules=pipeline.protocol_rules())
    assert pipeline.collect(data, anomalies=True) == whole
    splits = [[data[:at], data[at:]] for at in range(0, len(data) + 1, step)]
    splits += [[data[i : i + size] for i in range(0, len(data), size)] for size in (1, 7, 64)]
    for pieces in splits:
        assert pipeline.collect(pieces, anomalies=True) == whole, [len(p) for p in pieces]
        assert pipeline.collect(pieces, anomalies=True, rules=pipeline.protocol_rules()) == whole
