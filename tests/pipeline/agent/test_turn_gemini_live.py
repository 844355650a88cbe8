"""``run_turn`` with ``ChatClient(api="gemini")`` against the emulator's Gemini profiles, over loopback: what the
follow-up requests carry (the emulator records each body as received), what the session log keeps, and a retry by
the client's own policy (decision 0071).

- A call Google gave no id gets the made id ``gemini-made-<n>``: the log keeps it (tool call and tool result), no
  request carries it; its ``functionResponse`` names the call. A call with Google's id is answered with that id.
- Thought signatures go back in place: on the ``functionCall`` part (``thinking-tool``, whose follow-up the emulator
  refuses with a 400 without it), on the thought part and on the text part (``thinking-signatures``).
- A session reopened from its log sends the contents the live session would have sent.
- ``MALFORMED_FUNCTION_CALL`` and a 429 ``RESOURCE_EXHAUSTED`` with ``RetryInfo`` are retried by ``ChatClient``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from operators import RetryPolicy
from pipeline import ChatClient, Session, ToolRegistry, TurnEvent, run_turn_to_end
from pipeline.emulator import Emulator, RecordedRequest
from pipeline.emulator.gemini._profiles import TEXT_SIGNATURE, THOUGHT_SIGNATURE, TIME_ARGS
from pipeline.emulator.gemini._sent_back import SIGNATURE, THOUGHT_PIECES
from pipeline.formats import gemini_request

pytestmark = pytest.mark.server  # tests/tiers.py

MADE = "gemini-made-"
FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=1000)
WEATHER = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register
    async def get_weather(city: str) -> str:
        """Current weather in a city."""
        return f"sunny in {city}"

    @tools.register
    async def get_time(timezone: str) -> str:
        """The time in a timezone, as JSON."""
        return json.dumps({"timezone": timezone, "time": "12:00"})

    return tools


def client(emu: Emulator, model: str, **headers: str) -> ChatClient:
    """A Gemini client on the emulator's ``/v1beta`` (Google's version path); ``headers`` as ``x-emulator-*``."""
    base = emu.base_url.removesuffix("/v1") + "/v1beta"
    sent = {f"x-emulator-{name.replace('_', '-')}": value for name, value in headers.items()}
    return ChatClient(base, model=model, api="gemini", headers=sent, retry_policy=FAST)


async def turn(
    emu: Emulator, log: Path, model: str, prompt: str = "Weather in Paris?", **headers: str
) -> list[TurnEvent]:
    async with client(emu, model, **headers) as gemini:
        with Session.open(log, fsync=False) as session:
            return await run_turn_to_end(gemini, session, registry(), prompt)


def bodies(emu: Emulator) -> list[dict[str, Any]]:
    requests: list[RecordedRequest] = emu.state.requests
    assert all(r.path.endswith(":streamGenerateContent") for r in requests)
    return [r.body for r in requests]


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def stored_call_ids(log: Path) -> tuple[list[str], list[str]]:
    """The ids of the log's tool calls (the assistant messages' blocks, each also a ``tool/call``) and of its tool
    results (``tool/result``)."""
    events = logged(log)
    blocks = [b["id"] for e in events if e["type"] == "assistant/message"
              for b in e["data"]["message"]["content"] if b["type"] == "tool-call"]
    assert [e["data"]["call_id"] for e in events if e["type"] == "tool/call"] == blocks
    results = [e["data"]["message"]["source"]["call_id"] for e in events if e["type"] == "tool/result"]
    return blocks, results


async def test_a_signed_call_without_an_id_goes_back_signed_named_and_without_the_made_id(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        events = await turn(emu, log, "emulator-gemini-thinking-tool")
        sent = bodies(emu)

    assert events[-1].data == {"kind": "stop"}  # the emulator answers 400 to a follow-up without the signature
    assert [r.profile for r in emu.state.requests] == ["thinking-tool", "clean"]
    assert sent[1]["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [{**WEATHER, "thoughtSignature": SIGNATURE}]},  # unsigned thoughts are not sent
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                         "response": {"output": "sunny in Paris"}}}]},
    ]
    assert MADE not in json.dumps(sent)
    assert stored_call_ids(log) == ([MADE + "0"], [MADE + "0"])  # the log keeps the id the library made
    with Session.open(log, fsync=False) as session:
        (call,) = session.messages()[1]["tool_calls"]
    assert call["extra_content"] == {"google": {"thought_signature": SIGNATURE}}
    first = next(e["data"]["message"]["content"] for e in logged(log) if e["type"] == "assistant/message")
    assert first[0] == {"type": "reasoning", "text": "".join(THOUGHT_PIECES)}  # kept in the log, not sent


async def test_googles_own_call_id_goes_back_on_the_call_and_its_response(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        events = await turn(emu, log, "emulator-gemini-call-with-id", fail_first="1", then="clean")
        sent = bodies(emu)

    assert events[-1].data == {"kind": "stop"}
    (call_id,), (result_id,) = stored_call_ids(log)
    assert call_id == result_id
    assert call_id.startswith("call-")  # Google's, kept exactly
    assert sent[1]["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {**WEATHER["functionCall"], "id": call_id}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": "get_weather", "response": {"output": "sunny in Paris"}, "id": call_id}}]},
    ]


async def test_parallel_calls_without_ids_are_answered_together_each_by_name_in_order(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        events = await turn(emu, log, "emulator-gemini-parallel", fail_first="1", then="clean")
        sent = bodies(emu)

    assert events[-1].data == {"kind": "stop"}
    assert stored_call_ids(log) == ([MADE + "0", MADE + "1"], [MADE + "0", MADE + "1"])
    assert sent[1]["contents"][1:] == [
        {"role": "model", "parts": [WEATHER, {"functionCall": {"name": "get_time", "args": TIME_ARGS}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "sunny in Paris"}}},
            {"functionResponse": {"name": "get_time", "response": {"timezone": "Europe/Paris", "time": "12:00"}}},
        ]},
    ]
    assert MADE not in json.dumps(sent)


async def test_thought_and_text_signatures_go_back_on_their_parts_in_the_next_turn(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        await turn(emu, log, "emulator-gemini-thinking-signatures", "Hello?")
        await turn(emu, log, "emulator-gemini-clean", "And again?")
        sent = bodies(emu)

    assert sent[1]["contents"] == [
        {"role": "user", "parts": [{"text": "Hello?"}]},
        {"role": "model", "parts": [
            {"text": THOUGHT_PIECES[0], "thought": True, "thoughtSignature": THOUGHT_SIGNATURE},
            {"text": "Hello from the emulator.", "thoughtSignature": TEXT_SIGNATURE},
        ]},
        {"role": "user", "parts": [{"text": "And again?"}]},
    ]


async def test_a_session_reopened_from_its_log_sends_the_contents_the_live_session_would(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    tools = registry().schemas()
    async with Emulator() as emu:
        async with client(emu, "emulator-gemini-thinking-tool") as gemini:
            with Session.open(log, fsync=False) as live:
                await run_turn_to_end(gemini, live, registry(), "Weather in Paris?")
                history = live.messages()
        await turn(emu, log, "emulator-gemini-clean", "And tomorrow?")  # a new Session.open: read from the log
        sent = bodies(emu)

    expected = gemini_request([*history, {"role": "user", "content": "And tomorrow?"}], model="m", tools=tools)
    assert sent[-1] == expected
    assert sent[-1]["contents"][:3] == sent[1]["contents"]  # the first turn's contents, as its follow-up sent them
    assert MADE + "0" in log.read_text()
    assert MADE not in json.dumps(sent)


async def test_a_malformed_function_call_is_retried_by_the_client_and_the_turn_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        events = await turn(emu, log, "emulator-gemini-malformed-function-call", fail_first="1", then="clean")
        sent = bodies(emu)

    assert [r.profile for r in emu.state.requests] == ["malformed-function-call", "clean"]
    assert sent[0] == sent[1]  # the same request again
    (retry,) = [e.data for e in events if e.kind == "retry"]
    assert retry.failure.code == "MALFORMED_TOOL_CALL"
    assert "Malformed function call: print(default_api.get_weather" in retry.failure.message
    assert events[-1].data == {"kind": "stop"}
    recorded = {e["type"]: e["data"] for e in logged(log)}
    assert recorded["assistant/attempt"]["failure"]["code"] == "MALFORMED_TOOL_CALL"
    assert recorded["llm/retry"]["retry"] == 1
    assert recorded["assistant/message"]["message"]["content"] == [{"type": "text", "text": "Hello from the emulator."}]


async def test_a_429_resource_exhausted_waits_its_retry_info_delay_and_is_retried(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    async with Emulator() as emu:
        events = await turn(emu, log, "emulator-gemini-rate-limit", fail_first="1", then="clean", retry_after="0.05")

    (retry,) = [e.data for e in events if e.kind == "retry"]
    assert (retry.failure.code, retry.failure.status, retry.failure.retry_after_ms) == ("RATE_LIMIT", 429, 50)
    assert retry.delay_ms >= 50
    assert events[-1].data == {"kind": "stop"}
    assert [r.profile for r in emu.state.requests] == ["rate-limit", "clean"]
