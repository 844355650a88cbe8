"""``run_turn`` with the Responses API's client-run calls (issue 33, docs/decisions/0072-client-run-tool-calls.md,
"Round trip"): a loopback server answers step 1 with a held-out stream of custom, apply_patch, shell, local_shell,
computer or MCP approval calls (tests/corpus/client-calls/) and step 2 with text; the registry runs each call by its
kind, and step 2's request sends each call back as its own item with the matching output item. The session log keeps
the kind, so the history replayed from it sends the same items.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))  # the shared loopback recorder

from request_recorder import recorder, responses_text

from operators import RetryPolicy
from pipeline import ChatClient, Grammar, Session, ToolKindError, ToolRegistry, run_turn_to_end

pytestmark = pytest.mark.server  # tests/tiers.py

FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5)
CALLS = Path(__file__).resolve().parents[2] / "corpus" / "client-calls"
SQL = 'start: "SELECT " COLUMN " FROM " TABLE\nCOLUMN: /[a-z_]+/\nTABLE: /[a-z_]+/\n'


def stream(name: str) -> bytes:
    return next(CALLS.glob(f"{name}-*.sse")).read_bytes()


def full_registry() -> ToolRegistry:
    """A tool for every call of the held-out streams, each answer telling what it got."""
    tools = ToolRegistry()

    @tools.register_custom(grammar=Grammar.lark(SQL))
    def write_sql(query: str) -> str:
        """Runs a read-only SQL query."""
        return f"rows for {query}"

    @tools.register_custom
    async def run_python(code: str) -> str:
        """Runs Python code."""
        return f"ran {len(code)} characters"

    @tools.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    @tools.handle("apply_patch")
    def apply_patch(operation: dict[str, Any]) -> str:
        return f"patched {operation['path']}"

    @tools.handle("shell")
    def shell(action: dict[str, Any]) -> dict[str, Any]:
        outcome = {"type": "exit", "exit_code": 0}
        return {"output": [{"stdout": f"ran {action['commands'][0]}", "stderr": "", "outcome": outcome}],
                "max_output_length": action["max_output_length"]}

    @tools.handle("local_shell")
    def local_shell(action: dict[str, Any]) -> str:
        return " M " + str(action["command"][0])

    @tools.handle("computer")
    def computer(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                "acknowledged_safety_checks": arguments["pending_safety_checks"]}

    @tools.handle("mcp_approval", declare=[{"type": "mcp", "server_label": "deepwiki",
                                           "server_url": "https://mcp.deepwiki.com/mcp", "require_approval": "always"}])
    def approve(request: dict[str, Any]) -> dict[str, Any]:
        return {"approve": request["server_label"] == "deepwiki", "reason": "a known server"}

    return tools


async def run(script: list[bytes], log: Path, tools: ToolRegistry) -> tuple[list[Any], list[Any]]:
    """One turn against the scripted server; its events and the request bodies."""
    async with recorder(script) as server:
        client = ChatClient(server.base_url, model="m", api="responses", retry_policy=FAST)
        async with client, asyncio.timeout(10):
            with Session.open(log) as session:
                events = await run_turn_to_end(client, session, tools, "Go.")
    return events, [request.body for request in server.requests]


def answered(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Step 2's input past the user message: the calls and their answers."""
    items: list[dict[str, Any]] = body["input"]
    assert items[0] == {"type": "message", "role": "user", "content": "Go."}
    return items[1:]


async def test_custom_calls_go_back_as_custom_items_with_the_input_as_sent(tmp_path: Path) -> None:
    events, (first, second) = await run([stream("01"), responses_text()], tmp_path / "s.jsonl", full_registry())
    assert events[-1].data == {"kind": "stop"}
    declared = {tool["name"]: tool for tool in first["tools"] if tool["type"] == "custom"}
    assert declared["write_sql"] == {
        "type": "custom", "name": "write_sql", "description": "Runs a read-only SQL query.",
        "format": {"type": "grammar", "syntax": "lark", "definition": SQL},
    }
    assert declared["run_python"] == {"type": "custom", "name": "run_python", "description": "Runs Python code."}
    query, code = "SELECT name FROM users WHERE age > 25", "print(sum(range(10)))\n"
    assert answered(second) == [
        {"type": "custom_tool_call", "call_id": "call_sql_a", "name": "write_sql", "input": query},
        {"type": "custom_tool_call", "call_id": "call_py_b", "name": "run_python", "input": code},
        {"type": "custom_tool_call_output", "call_id": "call_sql_a", "output": f"rows for {query}"},
        {"type": "custom_tool_call_output", "call_id": "call_py_b", "output": f"ran {len(code)} characters"},
    ]


async def test_apply_patch_and_shell_calls_go_back_with_their_outputs(tmp_path: Path) -> None:
    _, (_, second) = await run([stream("06"), responses_text()], tmp_path / "s.jsonl", full_registry())
    diff = "@@ def main():\n-    print('hi')\n+    print('hello')\n"
    operation = {"type": "update_file", "path": "src/app.py", "diff": diff}
    action = {"commands": ["pytest -q tests/test_app.py"], "timeout_ms": 60000, "max_output_length": 4096}
    outcome = {"type": "exit", "exit_code": 0}
    assert answered(second) == [
        {"type": "message", "role": "assistant", "content": "Patching and testing."},
        {"type": "apply_patch_call", "call_id": "call_ap_6", "status": "completed", "operation": operation},
        {"type": "shell_call", "call_id": "call_sh_6", "status": "completed", "action": action},
        {"type": "apply_patch_call_output", "call_id": "call_ap_6", "status": "completed",
         "output": "patched src/app.py"},
        {"type": "shell_call_output", "call_id": "call_sh_6", "max_output_length": 4096,
         "output": [{"stdout": "ran pytest -q tests/test_app.py", "stderr": "", "outcome": outcome}]},
    ]


async def test_a_local_shell_call_goes_back_with_its_output_named_by_the_call_id(tmp_path: Path) -> None:
    _, (first, second) = await run([stream("05"), responses_text()], tmp_path / "s.jsonl", full_registry())
    assert {"type": "local_shell"} in first["tools"]
    action = {"type": "exec", "command": ["git", "status", "--short"], "env": {"GIT_PAGER": "cat"},
              "timeout_ms": 10000, "working_directory": "/repo"}
    assert answered(second) == [
        {"type": "local_shell_call", "call_id": "call_ls_5", "status": "completed", "action": action},
        {"type": "local_shell_call_output", "id": "call_ls_5", "call_id": "call_ls_5", "output": " M git"},
    ]


async def test_a_computer_call_goes_back_with_its_screenshot_and_the_acknowledged_checks(tmp_path: Path) -> None:
    _, (first, second) = await run([stream("07"), responses_text()], tmp_path / "s.jsonl", full_registry())
    assert {"type": "computer"} in first["tools"]
    checks = [{"id": "cu_sc_07", "code": "malicious_instructions", "message": "The page may hold instructions."}]
    assert answered(second) == [
        {"type": "computer_call", "call_id": "call_cu_7", "status": "completed",
         "action": {"type": "click", "button": "left", "x": 156, "y": 220}, "pending_safety_checks": checks},
        {"type": "computer_call_output", "call_id": "call_cu_7",
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
         "acknowledged_safety_checks": checks},
    ]


async def test_an_mcp_approval_request_is_answered_beside_a_function_call(tmp_path: Path) -> None:
    _, (first, second) = await run([stream("10"), responses_text()], tmp_path / "s.jsonl", full_registry())
    assert {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp",
            "require_approval": "always"} in first["tools"]
    question = '{"repoName":"openai/codex","question":"What is apply_patch?"}'
    assert answered(second) == [
        {"type": "function_call", "call_id": "call_fn_10", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "mcp_approval_request", "id": "mcpr_10", "server_label": "deepwiki", "name": "ask_question",
         "arguments": question},
        {"type": "function_call_output", "call_id": "call_fn_10", "output": "Paris: sunny"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_10", "approve": True,
         "reason": "a known server"},
    ]


async def test_a_kind_without_a_handler_is_answered_as_an_unknown_tool_and_the_turn_goes_on(tmp_path: Path) -> None:
    events, (_, second) = await run([stream("06"), responses_text()], tmp_path / "s.jsonl", ToolRegistry())
    assert events[-1].data == {"kind": "stop"}
    results = [event.data[1] for event in events if event.kind == "tool-result"]
    assert all(result.is_error for result in results)
    assert results[0].text == ('unknown tool "apply_patch" (kind apply_patch): no handler is registered for '
                               "apply_patch calls; handled kinds: (none)")
    outputs = answered(second)[3:]
    assert outputs == [
        {"type": "apply_patch_call_output", "call_id": "call_ap_6", "status": "failed", "output": results[0].text},
        {"type": "shell_call_output", "call_id": "call_sh_6",
         "output": [{"stdout": "", "stderr": results[1].text, "outcome": {"type": "exit", "exit_code": 1}}]},
    ]


@pytest.mark.parametrize("name", ["01", "05", "06", "07", "10"])
async def test_the_session_log_keeps_each_kind_and_its_replay_sends_the_same_items(tmp_path: Path, name: str) -> None:
    log = tmp_path / "s.jsonl"
    tools = full_registry()
    _, (_, second) = await run([stream(name), responses_text()], log, tools)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = {call["kind"] for call in json.loads((CALLS / f"{stream_stem(name)}.expected.json").read_text())
             ["tool_calls"] if "kind" in call}
    recorded = [line["data"] for line in lines if line["type"] == "tool/call"]
    assert {call["kind"] for call in recorded if "kind" in call} == kinds
    stored = next(line for line in lines if line["type"] == "assistant/message")["data"]["message"]["content"]
    assert {part["kind"] for part in stored if part["type"] == "tool-call" and "kind" in part} == kinds
    with Session.open(log) as replayed:
        client = ChatClient("http://127.0.0.1:9/v1", model="m", api="responses")
        body = client.request_body(replayed.messages(), tools=tools.schemas())
        await client.aclose()
    assert body["input"][: len(second["input"])] == second["input"]
    assert body["tools"] == second["tools"]


def stream_stem(name: str) -> str:
    return next(CALLS.glob(f"{name}-*.sse")).stem


@pytest.mark.parametrize("api", ["chat", "messages", "gemini"])
async def test_a_registry_with_a_custom_tool_is_refused_for_another_api_before_anything_is_written(
    tmp_path: Path, api: str
) -> None:
    tools = ToolRegistry()
    tools.register_custom(lambda text: text, name="echo", description="Echoes.")
    client = ChatClient("http://127.0.0.1:9/v1", model="m", api=api)  # type: ignore[arg-type]
    async with client:
        with Session.open(tmp_path / "s.jsonl") as session:
            with pytest.raises(ToolKindError, match="declares a 'custom' tool, which only the Responses API takes"):
                await run_turn_to_end(client, session, tools, "Go.")
            assert session.events == []
