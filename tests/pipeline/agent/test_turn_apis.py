"""``run_turn`` with a client of each API: the same conversation goes out in each API's shape, and the tool call of
step 1 and its result come back in step 2's request (docs/decisions/0027-request-shapes.md).

The Messages and Responses parsers are not merged yet. The request-side tests therefore let each API's stream be
read by the chat parser (the recorder answers in chat SSE): what they check is only what run_turn sends. The whole
turn against real Messages and Responses streams is an xfail until the parsers land."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))  # the shared loopback recorder

from request_recorder import (
    chat_text,
    chat_tool_call,
    messages_text,
    messages_tool_call,
    recorder,
    responses_text,
    responses_tool_call,
)

import operators._parse_format as parse_format
from operators import RetryPolicy
from operators._parse_sse import chat_stage
from pipeline import ChatClient, Session, ToolRegistry, run_turn_to_end

pytestmark = pytest.mark.server  # tests/tiers.py

FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5)


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    return tools


async def run(api: str, script: list[bytes], tmp_path: Path, **request: Any) -> tuple[list[Any], list[Any]]:
    """Runs one turn; returns its events and the recorded requests."""
    async with recorder(script) as server:
        client = ChatClient(server.base_url, model="m", api=api, retry_policy=FAST)  # type: ignore[arg-type]
        async with client, asyncio.timeout(10):
            with Session.open(tmp_path / "s.jsonl") as session:
                events = await run_turn_to_end(client, session, registry(), "Weather in Paris?", **request)
    return events, server.requests


@pytest.fixture
def chat_parser_for_every_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads every API's stream with the chat parser (the recorder answers in chat SSE): request side only."""
    monkeypatch.setattr(parse_format, "PARSERS", MappingProxyType(
        {"chat": chat_stage, "messages": chat_stage, "responses": chat_stage}))


CHAT_SCRIPT = [chat_tool_call(), chat_text()]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}


@pytest.mark.usefixtures("chat_parser_for_every_api")
async def test_run_turn_on_messages_sends_tool_use_and_tool_result_blocks(tmp_path: Path) -> None:
    events, requests = await run("messages", CHAT_SCRIPT, tmp_path, system="Be brief.")
    assert events[-1].data == {"kind": "stop"}
    assert [r.path for r in requests] == ["/v1/messages", "/v1/messages"]
    first, second = (r.body for r in requests)
    assert first["system"] == second["system"] == "Be brief."
    assert first["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert [tool["name"] for tool in first["tools"]] == ["get_weather"]
    assert first["tools"][0]["input_schema"]["properties"] == SCHEMA["properties"]
    assert second["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "Paris: sunny"}]},
    ]
    assert second["max_tokens"] == 4096
    assert requests[1].headers["anthropic-version"] == "2023-06-01"


@pytest.mark.usefixtures("chat_parser_for_every_api")
async def test_run_turn_on_responses_sends_function_call_items_and_their_outputs(tmp_path: Path) -> None:
    events, requests = await run("responses", CHAT_SCRIPT, tmp_path, system="Be brief.")
    assert events[-1].data == {"kind": "stop"}
    assert [r.path for r in requests] == ["/v1/responses", "/v1/responses"]
    first, second = (r.body for r in requests)
    assert first["instructions"] == second["instructions"] == "Be brief."
    assert first["input"] == [{"type": "message", "role": "user", "content": "Weather in Paris?"}]
    assert [(tool["type"], tool["name"]) for tool in first["tools"]] == [("function", "get_weather")]
    assert second["input"][1:] == [
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Paris: sunny"},
    ]


async def test_run_turn_on_chat_sends_the_chat_history_as_before(tmp_path: Path) -> None:
    events, requests = await run("chat", CHAT_SCRIPT, tmp_path, system="Be brief.")
    assert events[-1].data == {"kind": "stop"}
    second = requests[1].body
    assert requests[1].path == "/v1/chat/completions"
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny"}


SCRIPTS = {
    "chat": [chat_tool_call(), chat_text()],
    "messages": [messages_tool_call(call_id="call_1"), messages_text()],
    "responses": [responses_tool_call(), responses_text()],
}


@pytest.mark.parametrize(
    "api",
    [
        "chat",
        "messages",
        "responses",
    ],
)
async def test_run_turn_completes_a_tool_turn_on_each_api(api: str, tmp_path: Path) -> None:
    events, requests = await run(api, SCRIPTS[api], tmp_path)
    kinds = [event.kind for event in events if event.kind != "chunk"]
    assert kinds == ["step-start", "assistant-message", "tool-call", "tool-result", "step-end",
                     "step-start", "assistant-message", "step-end", "turn-end"]
    assert events[-1].data == {"kind": "stop"}
    assert len(requests) == 2
    call = next(event.data for event in events if event.kind == "tool-call")
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", '{"city": "Paris"}')
