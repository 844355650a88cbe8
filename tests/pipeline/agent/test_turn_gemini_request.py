"""``run_turn`` sends its chat-shaped history through Gemini's request builder: two tool rounds whose calls came with
no wire id (the id the library made, ``gemini-made-0``, repeats from one response to the next) go back as
``functionCall`` / ``functionResponse`` parts without any id, each result naming its own round's call; the key goes
in ``x-goog-api-key`` only and the URL carries ``?alt=sse`` (decision 0071).

A record in Gemini's shape stands in for the messages one, so the answers can be scripted Messages streams whose tool
calls carry the made id (what the Gemini parser emits for a call without a wire id): what is checked is only what
run_turn sends. The real Gemini stream, end to end against the emulator, is test_turn_gemini_live.py."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))  # the shared SSE scripts

from request_recorder import messages_text, messages_tool_call

from operators import RetryPolicy
from pipeline import ChatClient, Session, ToolRegistry, run_turn_to_end
from pipeline.client import _client as client_module
from pipeline.client import _config as config_module
from pipeline.formats import WIRE_FORMATS, gemini_request

KEY = "AIza-turn-Qx7Wv3Lm"
SCRIPT = [messages_tool_call("gemini-made-0", "get_weather"), messages_tool_call("gemini-made-0", "get_time"),
          messages_text("Sunny, and noon.")]


@pytest.fixture
def gemini_like(monkeypatch: pytest.MonkeyPatch) -> None:
    record = attrs.evolve(WIRE_FORMATS["messages"], path="/models/{model}:streamGenerateContent", headers={},
                          build=gemini_request, key_header="x-goog-api-key", query={"alt": "sse"}, bearer=False)
    formats = {**WIRE_FORMATS, "messages": record}
    monkeypatch.setattr(config_module, "WIRE_FORMATS", formats)
    monkeypatch.setattr(client_module, "WIRE_FORMATS", formats)


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    @tools.register
    async def get_time(city: str) -> str:
        """The time in a city, as JSON."""
        return json.dumps({"city": city, "time": "12:00"})

    return tools


@pytest.mark.usefixtures("gemini_like")
async def test_run_turn_sends_two_made_id_rounds_to_gemini_without_ids_each_result_naming_its_call(
    tmp_path: Path,
) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        body = SCRIPT[len(sent) - 1]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=httpx.ByteStream(body))

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = ChatClient("http://127.0.0.1:9/v1beta", model="gemini-2.5-flash", api_key=KEY, api="messages",
                        http_client=http, retry_policy=RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5))
    async with http, client, asyncio.timeout(10):
        with Session.open(tmp_path / "s.jsonl") as session:
            events = await run_turn_to_end(client, session, registry(), "Weather and time in Paris?", system="Brief.")

    assert events[-1].data == {"kind": "stop"}
    assert {str(r.url) for r in sent} == {
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"}
    assert all(r.headers["x-goog-api-key"] == KEY and "authorization" not in r.headers for r in sent)
    last: dict[str, Any] = json.loads(sent[2].content)
    assert last["systemInstruction"] == {"parts": [{"text": "Brief."}]}
    assert [d["name"] for d in last["tools"][0]["functionDeclarations"]] == ["get_weather", "get_time"]
    assert last["contents"] == [
        {"role": "user", "parts": [{"text": "Weather and time in Paris?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                         "response": {"output": "Paris: sunny"}}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_time",
                                                         "response": {"city": "Paris", "time": "12:00"}}}]},
    ]
    assert json.loads(sent[1].content)["contents"] == last["contents"][:3]
