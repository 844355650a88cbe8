"""The Messages side of decision 0072 (docs/decisions/0072-client-run-tool-calls.md, "The Messages side"): what
Anthropic runs is informational, what the client runs is a tool call.

Anthropic runs its server tools (``server_tool_use`` and its ``web_search_tool_result``, ``web_fetch_tool_result``,
``code_execution_tool_result``, ``bash_code_execution_tool_result``, ``text_editor_code_execution_tool_result``,
``tool_search_tool_result``, ``advisor_tool_result``, any ``*_tool_result``) and the MCP connector's calls
(``mcp_tool_use``, ``mcp_tool_result``, ``mcp_tool_listing``): each is a ``server-tool`` anomaly naming the tool, its
input never read, never a call. Every ``tool_use`` is a call the client runs, kind ``function``, whoever its
``caller`` (the model, or code execution: programmatic tool calling) and whatever the tool (a user-defined one, or an
Anthropic-defined client tool such as ``bash`` or a ``computer`` toolset's action). Hand-built streams in the shapes of
the anthropic SDK's types, and every recorded stream that carries these blocks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from corpus import MESSAGES_STREAMS, PEER_FORMAT_STREAMS
from test_parse_messages import (
    SAID,
    anomalies,
    args,
    block,
    calls,
    chunks,
    finish,
    sse,
    stop,
    stream,
    text,
    tool_use,
)

import pipeline
from operators import ToolCallKind

Json = dict[str, Any]
SERVER_TOOLS: list[tuple[str, str, Any]] = [  # the server_tool_use's name, its result block's type and content
    ("web_search", "web_search_tool_result", [{"type": "web_search_result", "url": "https://example.com/",
                                               "title": "Example", "encrypted_content": "EqgfCioIARgB",
                                               "page_age": None}]),
    ("web_fetch", "web_fetch_tool_result", {"type": "web_fetch_result", "url": "https://example.com/",
                                            "retrieved_at": "2025-12-01T00:00:00Z",
                                            "content": {"type": "document", "title": "Example", "source": {
                                                "type": "text", "media_type": "text/plain", "data": "Example"}}}),
    ("code_execution", "code_execution_tool_result", {"type": "code_execution_result", "stdout": "4\n",
                                                      "stderr": "", "return_code": 0, "content": []}),
    ("bash_code_execution", "bash_code_execution_tool_result", {"type": "bash_code_execution_result",
                                                                "stdout": "a.txt\n", "stderr": "",
                                                                "return_code": 0, "content": []}),
    ("text_editor_code_execution", "text_editor_code_execution_tool_result", {
        "type": "text_editor_code_execution_view_result", "file_type": "text", "content": "x = 1\n",
        "num_lines": 1, "start_line": 1, "total_lines": 1}),
    ("tool_search_tool_regex", "tool_search_tool_result", {
        "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference",
                                                                      "tool_name": "get_weather"}]}),
    ("advisor", "advisor_tool_result", {"type": "advisor_result", "text": "Check the edge case.",
                                        "stop_reason": "end_turn"}),
]
"""As the anthropic SDK types them (``ServerToolUseBlock.name``, the ``*ToolResultBlock`` types)."""


@pytest.mark.parametrize(("name", "result", "content"), SERVER_TOOLS, ids=[t[0] for t in SERVER_TOOLS])
def test_a_server_tool_and_its_result_are_informational(name: str, result: str, content: Any) -> None:
    out = chunks(sse(*stream(
        block(0, type="server_tool_use", id="srvtoolu_1", name=name, input={}),
        args(0, '{"query": "'), args(0, 'x"}'),
        stop(0),
        block(1, type=result, tool_use_id="srvtoolu_1", content=content),
        stop(1),
        block(2, type="text", text=""), text(2, "Found it."), stop(2),
    )))
    assert calls(out) == []
    details = [a.detail for a in anomalies(out, "server-tool")]
    assert details == [f"server-side server_tool_use: {name}", f"server-side {result}: {result}"]
    assert finish(out).reason.kind == "stop"
    assert pipeline.assemble(out).text == "Found it."


def test_the_mcp_connectors_call_result_and_listing_are_informational_naming_the_server() -> None:
    out = chunks(sse(*stream(
        block(0, type="mcp_tool_listing", mcp_server_name="deepwiki",
              tools=[{"name": "ask_question", "input_schema": {"type": "object"}}]),
        stop(0),
        block(1, type="mcp_tool_use", id="mcptoolu_1", name="ask_question", server_name="deepwiki", input={}),
        args(1, '{"repoName": "anthropics/anthropic-sdk-python"}'),
        stop(1),
        block(2, type="mcp_tool_result", tool_use_id="mcptoolu_1", is_error=False,
              content=[{"type": "text", "text": "It is a Python SDK."}]),
        stop(2),
        *SAID,
    )))
    assert calls(out) == []
    assert [a.detail for a in anomalies(out, "server-tool")] == [
        "server-side mcp_tool_listing: mcp_tool_listing on deepwiki",
        "server-side mcp_tool_use: ask_question on deepwiki",
        "server-side mcp_tool_result: mcp_tool_result",
    ]
    assert not anomalies(out, "unknown-block")
    assert finish(out).reason.kind == "stop"


@pytest.mark.parametrize(("name", "extra", "arguments"), [
    ("get_weather", {}, '{"city":"Paris"}'),  # a user-defined tool
    ("bash", {}, '{"command":"ls -a"}'),  # an Anthropic-defined client tool (bash_20250124)
    ("str_replace_based_edit_tool", {}, '{"command":"view","path":"/repo/a.py"}'),  # the text editor tool
    ("left_click", {"toolset_name": "computer"}, '{"coordinate":[156,220]}'),  # a computer toolset's action
    ("rollDie", {"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_c"}}, '{"sides":6}'),
])
def test_every_tool_use_is_a_function_call_the_client_runs(name: str, extra: Json, arguments: str) -> None:
    out = chunks(sse(*stream(tool_use(0, id="toolu_9", name=name, input=json.loads(arguments), **extra), stop(0),
                             reason="tool_use")))
    (call,) = calls(out)
    assert (call.id, call.name, call.kind, call.arguments) == ("toolu_9", name, ToolCallKind.FUNCTION, arguments)
    assert finish(out).reason.kind == "tool-calls"


def test_a_programmatic_call_beside_the_code_execution_that_made_it_is_the_only_call() -> None:
    out = chunks(sse(*stream(
        block(0, type="server_tool_use", id="srvtoolu_c", name="code_execution",
              input={"code": "await rollDie(sides=6)"}),
        stop(0),
        tool_use(1, id="toolu_r", name="rollDie", input={"sides": 6},
                 caller={"type": "code_execution_20250825", "tool_id": "srvtoolu_c"}),
        stop(1),
        reason="tool_use",
    )))
    (call,) = calls(out)
    assert (call.id, call.name, call.arguments) == ("toolu_r", "rollDie", '{"sides":6}')
    assert [a.detail for a in anomalies(out, "server-tool")] == ["server-side server_tool_use: code_execution"]
    assert finish(out).reason.kind == "tool-calls"


def test_a_long_server_tool_turn_paused_is_pause_turn_with_no_call() -> None:
    out = chunks(sse(*stream(
        block(0, type="server_tool_use", id="srvtoolu_1", name="web_search", input={"query": "q"}), stop(0),
        block(1, type="web_search_tool_result", tool_use_id="srvtoolu_1", content=[]), stop(1),
        reason="pause_turn",
    )))
    assert calls(out) == []
    failure = finish(out).reason.failure
    assert failure is not None
    assert failure.code == "PAUSE_TURN"


# -- the recorded streams that carry them

_START = re.compile(rb'"content_block":\s*\{\s*"type":\s*"([a-z_]+)"(?:,\s*"id":\s*"([^"]*)")?')
RECORDED = [p for folder in (MESSAGES_STREAMS, PEER_FORMAT_STREAMS / "messages") for p in sorted(folder.glob("*.sse"))
            if re.search(rb'"type":\s*"(server_tool_use|mcp_tool_use|[a-z_]+_tool_result)"', p.read_bytes())]


def _tool_use_ids(raw: bytes) -> list[str]:
    """The ids of the stream's ``tool_use`` blocks, in order (content_block_start, or message_start's content)."""
    ids = [m.group(2).decode() for m in _START.finditer(raw) if m.group(1) == b"tool_use" and m.group(2)]
    for m in re.finditer(rb'"content":\s*(\[\{.*?\}\])\s*,\s*"stop_reason"', raw):  # a continuation's whole blocks
        ids += [b["id"] for b in json.loads(m.group(1)) if b.get("type") == "tool_use"]
    return ids


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name[:5]}-{p.stem[:40]}")
def test_every_recorded_stream_with_server_blocks_calls_only_its_tool_use_blocks(path: Path) -> None:
    raw = path.read_bytes()
    out = chunks(raw)
    server = [m.group(1).decode() for m in _START.finditer(raw) if m.group(1) != b"tool_use"
              and (m.group(1) in (b"server_tool_use", b"mcp_tool_use") or m.group(1).endswith(b"_tool_result"))]
    assert server, path.name
    assert len(anomalies(out, "server-tool")) >= len(set(server))
    read = [call.id for call in calls(out)]
    assert read == _tool_use_ids(raw)[: len(read)]  # a stream cut early reads fewer
    assert all(call.kind == ToolCallKind.FUNCTION for call in calls(out))
    assert not any(i.startswith(("srvtoolu_", "mcptoolu_")) for i in read)


def test_the_recorded_streams_cover_each_kind_of_server_block() -> None:
    seen = {m.group(1).decode() for path in RECORDED for m in _START.finditer(path.read_bytes())}
    assert {"server_tool_use", "mcp_tool_use", "mcp_tool_result", "web_search_tool_result", "web_fetch_tool_result",
            "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
            "tool_search_tool_result", "advisor_tool_result"} <= seen
