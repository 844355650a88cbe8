"""The tool-calling turn loop end to end: emulator over loopback HTTP -> run_turn -> session log on disk.

Every conversation here talks to a real ``Emulator`` on 127.0.0.1 (``turn_helpers`` describes its ``agent``
profile): the full multi-step conversation, tool errors, the step limit, failures, and a call that was never
identified.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from turn_helpers import (
    AGENT_KINDS,
    AGENT_TYPES,
    LIMIT,
    Tools,
    assert_no_empty_call_id,
    kinds,
    make_client,
    messages_of,
    new_key,
    of_type,
    requests_for,
    run_agent,
    turn_end,
    types_of,
)

from operators import Code, RetryPolicy, chunk_from_dict
from pipeline import (
    Session,
    run_turn,
    run_turn_to_end,
)
from pipeline.emulator import Emulator, EmulatorConfig


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay")


@pytest.fixture(scope="module")
def emulator_config(replay_dir: Path) -> EmulatorConfig:
    return EmulatorConfig(replay_dirs=[replay_dir])


# -- the full agent conversation ------------------------------------------------------------------------------------


async def test_agent_conversation_runs_every_step_and_the_log_reloads_as_run(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    tools = Tools()
    path = tmp_path / "s.jsonl"
    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        session = Session.open(path)
        try:
            turn_events = [event async for event in run_turn(client, session, tools.registry, "Weather?")]
            ran = session.events
        finally:
            session.close()

    # the events a UI sees
    assert kinds(turn_events) == AGENT_KINDS
    assert [event.step for event in turn_events if event.kind == "step-start"] == [1, 2, 3]
    assert all(event.turn == 1 for event in turn_events)
    assert turn_events[-1].data == {"kind": "stop"}
    retry = next(event for event in turn_events if event.kind == "retry")
    assert retry.step == 2
    assert retry.data.failure.code == Code.MALFORMED_TOOL_CALL
    results = [event.data[1] for event in turn_events if event.kind == "tool-result"]
    assert [result.is_error for result in results] == [False] * 4, [result.text for result in results]
    assert any(event.kind == "chunk" for event in turn_events)

    # the log reloads and equals what was run
    loaded = Session.load(path)
    assert loaded == ran
    assert types_of(loaded) == AGENT_TYPES
    assert [event.seq for event in loaded] == list(range(1, len(loaded) + 1))
    assert turn_end(loaded) == {"kind": "stop"}
    called = [event.data for event in turn_events if event.kind == "tool-call"]
    assert [data["call_id"] for data in of_type(loaded, "tool/call")] == [call.id for call in called]

    # no line carries an empty call id (ids were repeated as "" and null on the wire)
    assert assert_no_empty_call_id(path) >= 12

    # the refused attempt: kept for the record, followed by llm/retry, its tool never ran
    attempt, retried = of_type(loaded, "assistant/attempt"), of_type(loaded, "llm/retry")
    assert len(attempt) == 1
    assert len(retried) == 1
    assert (attempt[0]["turn"], attempt[0]["step"], attempt[0]["attempt"]) == (1, 2, 1)
    assert attempt[0]["failure"]["code"] == Code.MALFORMED_TOOL_CALL
    stream = [chunk_from_dict(chunk) for chunk in attempt[0]["stream"]]
    deltas = [chunk for chunk in attempt[0]["stream"] if chunk["type"] == "tool-call-delta"]
    assert stream
    assert deltas
    assert "".join(chunk["arguments_delta"] for chunk in deltas) == '{"city": "Paris"}'
    assert not [chunk for chunk in attempt[0]["stream"] if chunk["type"] == "block-end"]  # never assembled
    assert types_of(loaded).index("llm/retry") == types_of(loaded).index("assistant/attempt") + 1
    assert (retried[0]["step"], retried[0]["retry"], retried[0]["failure"]["code"]) == (2, 1, Code.MALFORMED_TOOL_CALL)
    assert tools.calls[:2] == [("get_weather", "Paris"), ("get_weather", "Berlin")]
    assert sorted(tools.calls[2:]) == [("get_time", "Europe/Paris"), ("get_weather", "Paris")]
    assert len(tools.calls) == 4  # nothing from the refused attempt

    # the two parallel calls ran concurrently: each waited for the other to start
    assert tools.met

    # the requests: 1 seed-bug, 2 refused, 3 its retry, 4 the final answer
    requests = requests_for(emu, key)
    assert [request.profile for request in requests] == ["seed-bug", "never-identified", "parallel", "clean"]
    refused, retry_request, final = (messages_of(request) for request in requests[1:])
    assert retry_request == refused  # the retry sends the same messages again
    step1_ids = [block["id"] for block in of_type(loaded, "assistant/message")[0]["message"]["content"]]
    for messages in (refused, retry_request, final):
        text = json.dumps(messages)
        assert Code.MALFORMED_TOOL_CALL not in text  # the error text never reaches the model
        assert attempt[0]["failure"]["message"] not in text
        assert [m["tool_call_id"] for m in messages if m["role"] == "tool"][:2] == step1_ids
        for message in messages:
            for call in message.get("tool_calls", []):
                assert isinstance(call["id"], str)
                assert call["id"]
    for messages in (refused, retry_request):  # the refused attempt's partial output never appears
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
        assert "Paris: sunny, 21 C" in json.dumps(messages)
    step2_ids = [block["id"] for block in of_type(loaded, "assistant/message")[1]["message"]["content"]]
    assert [m["role"] for m in final] == ["user", "assistant", "tool", "tool", "assistant", "tool", "tool"]
    assert [call["id"] for call in final[4]["tool_calls"]] == step2_ids
    assert [m["content"] for m in final if m["role"] == "tool"][2:] == ["Paris: sunny, 21 C", "12:00 in Europe/Paris"]


# -- tool errors, step limit, failures --------------------------------------------------------------------------------


async def test_unknown_tool_gives_an_error_result_and_the_turn_continues(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    tools = Tools(with_time=False, rendezvous=False)
    path = tmp_path / "s.jsonl"
    events = await run_agent(emu, path, tools, key)

    assert kinds(events) == AGENT_KINDS
    assert events[-1].data == {"kind": "stop"}
    loaded = Session.load(path)
    results = of_type(loaded, "tool/result")
    blocks = [data["message"]["content"][0] for data in results]
    assert [block["is_error"] for block in blocks] == [False, False, False, True]
    assert blocks[3]["content"][0]["text"].startswith('unknown tool "get_time"; available tools: get_weather')
    assert of_type(loaded, "tool/call")[3]["name"] == "get_time"
    final = messages_of(requests_for(emu, key)[-1])
    assert final[-1]["role"] == "tool"
    assert final[-1]["content"].startswith('unknown tool "get_time"')
    assert len(tools.calls) == 3


def sse_event(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    chunk = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "replay",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


async def test_invalid_json_arguments_and_unknown_name_give_error_results(
    emu: Emulator, replay_dir: Path, tmp_path: Path
) -> None:
    recording = replay_dir / f"{uuid.uuid4().hex}.sse"
    calls = [
        {"index": 0, "id": "call_bad_json", "function": {"name": "get_weather", "arguments": "{city: Paris"}},
        {"index": 1, "id": "call_bad_name", "function": {"name": "get_wether", "arguments": "{}"}},
    ]
    recording.write_text(
        sse_event({"role": "assistant", "content": None, "tool_calls": calls})
        + sse_event({}, "tool_calls")
        + "data: [DONE]\n\n",
        encoding="utf-8",
    )
    key = new_key()
    tools = Tools(rendezvous=False)
    path = tmp_path / "s.jsonl"
    headers = {"x-emulator-file": str(recording), "x-emulator-fail-first": "1"}  # then: clean
    async with asyncio.timeout(LIMIT), make_client(emu, "replay", key=key, headers=headers) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, "Weather in Paris?")

    assert events[-1].data == {"kind": "stop"}
    assert [event.step for event in events if event.kind == "step-start"] == [1, 2]
    loaded = Session.load(path)
    blocks = [data["message"]["content"][0] for data in of_type(loaded, "tool/result")]
    assert [block["tool_call_id"] for block in blocks] == ["call_bad_json", "call_bad_name"]
    assert all(block["is_error"] for block in blocks)
    assert blocks[0]["content"][0]["text"].startswith('arguments for tool "get_weather" are not valid JSON')
    assert blocks[1]["content"][0]["text"].startswith('unknown tool "get_wether"')
    assert 'did you mean "get_weather"?' in blocks[1]["content"][0]["text"]
    assert tools.calls == []
    second = messages_of(requests_for(emu, key)[1])
    assert [m["tool_call_id"] for m in second if m["role"] == "tool"] == ["call_bad_json", "call_bad_name"]


async def test_step_limit_ends_the_turn_max_steps_with_a_loadable_log(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    tools = Tools()
    path = tmp_path / "s.jsonl"
    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, "Weather?", max_steps=1)

    assert kinds(events)[-2:] == ["step-end", "turn-end"]
    assert events[-1].data == {"kind": "max-steps"}
    loaded = Session.load(path)
    assert types_of(loaded) == [*AGENT_TYPES[:7], "turn/end"]
    assert turn_end(loaded) == {"kind": "max-steps"}
    assert tools.calls == [("get_weather", "Paris"), ("get_weather", "Berlin")]
    assert len(requests_for(emu, key)) == 1


async def test_non_retryable_failure_ends_the_turn_error_with_the_attempt_recorded(
    emu: Emulator, tmp_path: Path
) -> None:
    tools = Tools()
    path = tmp_path / "s.jsonl"
    key = new_key()
    async with asyncio.timeout(LIMIT), make_client(emu, "auth", key=key) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, "Weather?")

    assert kinds(events) == ["step-start", "turn-end"]
    reason = events[-1].data
    assert reason["kind"] == "error"
    assert reason["failure"]["code"] == Code.AUTH
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "turn/end"]
    assert of_type(loaded, "assistant/attempt")[0]["failure"]["code"] == Code.AUTH
    assert turn_end(loaded) == reason
    assert len(requests_for(emu, key)) == 1  # not retried
    assert tools.calls == []


# -- an empty call id can never reach the session -------------------------------------------------------------------


async def test_a_never_identified_call_never_reaches_the_session(emu: Emulator, tmp_path: Path) -> None:
    tools = Tools()
    path = tmp_path / "s.jsonl"
    key = new_key()
    policy = RetryPolicy.normal(max_retries=1, initial_delay_ms=1, max_delay_ms=5)
    async with asyncio.timeout(LIMIT), make_client(emu, "never-identified", key=key, policy=policy) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, "Weather?")

    assert kinds(events) == ["step-start", "attempt-failed", "retry", "turn-end"]
    reason = events[-1].data
    assert reason["kind"] == "error"
    assert reason["failure"]["code"] == Code.MALFORMED_TOOL_CALL
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "llm/retry", "assistant/attempt", "turn/end"]
    assert not of_type(loaded, "tool/call")
    assert not of_type(loaded, "tool/result")
    assert not of_type(loaded, "assistant/message")
    assert [data["failure"]["code"] for data in of_type(loaded, "assistant/attempt")] == [Code.MALFORMED_TOOL_CALL] * 2
    assert assert_no_empty_call_id(path) == 0
    assert tools.calls == []
    assert len(requests_for(emu, key)) == 2
