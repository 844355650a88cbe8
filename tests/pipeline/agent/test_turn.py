"""The tool-calling turn loop end to end: emulator over loopback HTTP -> run_turn -> session log on disk.

Every conversation here talks to a real ``Emulator`` on 127.0.0.1. The ``agent`` profile scripts a multi-step
conversation by the number of assistant messages in the request: step 1 is the seed's bug (two ``get_weather`` calls
whose continuation deltas repeat identity as ``""`` and ``null``), step 2 is first a never-identified call (refused
with ``MALFORMED_TOOL_CALL`` and retried) and then two parallel calls, later steps a plain text answer. The step-2
counter is keyed by ``x-emulator-key``, so each test uses its own key.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from operators import Code, Failure, Finish, FinishReason, RetryPolicy, TextDelta
from operators._chunks import chunk_from_json
from pipeline import (
    ChatClient,
    Session,
    SessionCorruptionError,
    SessionError,
    SessionEvent,
    SessionLockedError,
    ToolRegistry,
    TurnEvent,
    check,
    repair,
    run_turn,
    run_turn_to_end,
)
from pipeline.cli import main
from pipeline.emulator import Emulator, EmulatorConfig, RecordedRequest
from pipeline.session import SessionTornTailWarning

FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5)
"""Retries without real waiting."""

LIMIT = 10.0
"""Seconds any single conversation may take before the test fails instead of hanging."""

PARALLEL_WAIT = 2.0
"""How long each parallel tool waits for the other to start: only reached when they do not run concurrently."""


# -- fixtures and helpers -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay")


@pytest.fixture(scope="module")
def emu(replay_dir: Path) -> Iterator[Emulator]:
    with Emulator(config=EmulatorConfig(replay_dirs=[replay_dir])) as emulator:
        yield emulator


def new_key() -> str:
    return f"test-turn-{uuid.uuid4().hex}"


def make_client(
    emu: Emulator,
    model: str,
    *,
    key: str | None = None,
    policy: RetryPolicy = FAST,
    headers: Mapping[str, str] | None = None,
) -> ChatClient:
    sent = dict(headers or {})
    if key is not None:
        sent["x-emulator-key"] = key
    return ChatClient(emu.base_url, model=model, retry_policy=policy, headers=sent)


def requests_for(emu: Emulator, key: str) -> list[RecordedRequest]:
    return [request for request in emu.state.requests if request.headers.get("x-emulator-key") == key]


def messages_of(request: RecordedRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = request.body["messages"]
    return messages


class Tools:
    """``get_weather`` and ``get_time``, recording their calls.

    With ``rendezvous``, the third ``get_weather`` call (the parallel step's) and ``get_time`` each wait for the
    other to have started: run one after the other, each would time out and return an error result instead.
    """

    def __init__(self, *, with_time: bool = True, rendezvous: bool = True) -> None:
        self.calls: list[tuple[str, str]] = []
        self.weather_started = asyncio.Event()
        self.time_started = asyncio.Event()
        self.met = False
        self.registry = ToolRegistry()
        rendezvous_weather = rendezvous

        async def get_weather(city: str) -> str:
            """Current weather for a city."""
            self.calls.append(("get_weather", city))
            if rendezvous_weather and sum(1 for name, _ in self.calls if name == "get_weather") == 3:
                self.weather_started.set()
                async with asyncio.timeout(PARALLEL_WAIT):
                    await self.time_started.wait()
                self.met = True
            return f"{city}: sunny, 21 C"

        async def get_time(timezone: str) -> str:
            """Current time in a timezone."""
            self.calls.append(("get_time", timezone))
            self.time_started.set()
            async with asyncio.timeout(PARALLEL_WAIT):
                await self.weather_started.wait()
            return f"12:00 in {timezone}"

        self.registry.register(get_weather)
        if with_time:
            self.registry.register(get_time)


def kinds(events: Sequence[TurnEvent]) -> list[str]:
    """The turn events a UI sees, without the chunks."""
    return [event.kind for event in events if event.kind != "chunk"]


def types_of(events: Sequence[SessionEvent]) -> list[str]:
    return [event.type for event in events]


def of_type(events: Sequence[SessionEvent], event_type: str) -> list[Mapping[str, Any]]:
    return [event.data for event in events if event.type == event_type]


def call_ids_in(value: Any) -> Iterator[tuple[str, Any]]:
    """Every call id in a decoded JSON value: ``call_id``, ``tool_call_id`` and the ``id`` of a tool-call block."""
    if isinstance(value, dict):
        for key in ("call_id", "tool_call_id"):
            if key in value:
                yield key, value[key]
        if value.get("type") == "tool-call":
            yield "tool-call id", value.get("id")
        for item in value.values():
            yield from call_ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from call_ids_in(item)


def assert_no_empty_call_id(path: Path) -> int:
    """Scans every line of the log; returns how many call ids it saw (so a vacuous pass is visible)."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for key, value in call_ids_in(json.loads(line)):
            assert isinstance(value, str), f"line {number}: {key} is {value!r}"
            assert value != "", f"line {number}: {key} is empty"
            seen += 1
    return seen


def turn_end(events: Sequence[SessionEvent]) -> Mapping[str, Any]:
    ends = of_type(events, "turn/end")
    assert len(ends) >= 1
    reason: Mapping[str, Any] = ends[-1]["reason"]
    return reason


AGENT_KINDS = [
    "step-start",
    "assistant-message",
    "tool-call",
    "tool-call",
    "tool-result",
    "tool-result",
    "step-end",
    "step-start",
    "attempt-failed",
    "retry",
    "assistant-message",
    "tool-call",
    "tool-call",
    "tool-result",
    "tool-result",
    "step-end",
    "step-start",
    "assistant-message",
    "step-end",
    "turn-end",
]

AGENT_TYPES = [
    "user/message",
    "assistant/message",
    "tool/call",
    "tool/call",
    "tool/result",
    "tool/result",
    "step/end",
    "assistant/attempt",
    "llm/retry",
    "assistant/message",
    "tool/call",
    "tool/call",
    "tool/result",
    "tool/result",
    "step/end",
    "assistant/message",
    "step/end",
    "turn/end",
]


async def run_agent(emu: Emulator, path: Path, tools: Tools, key: str, prompt: str = "Weather?") -> list[TurnEvent]:
    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, tools.registry, prompt)
            assert Session.load(path) == session.events
    return events


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
    stream = [chunk_from_json(chunk) for chunk in attempt[0]["stream"]]
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


# -- cancellation ---------------------------------------------------------------------------------------------------


async def test_cancel_after_the_first_chunk_ends_the_turn_aborted(emu: Emulator, tmp_path: Path) -> None:
    tools = Tools()
    path = tmp_path / "s.jsonl"
    cancel = asyncio.Event()
    seen: list[TurnEvent] = []
    started = time.monotonic()
    async with asyncio.timeout(LIMIT), make_client(emu, "slow-drip", headers={"x-emulator-drip-ms": "200"}) as client:
        with Session.open(path) as session:
            async for event in run_turn(client, session, tools.registry, "Hello?", cancel=cancel):
                seen.append(event)
                if event.kind == "chunk":
                    cancel.set()
    elapsed = time.monotonic() - started

    assert elapsed < 1.0  # the whole stream would take 8 x 200 ms
    assert seen[0].kind == "step-start"
    assert seen[-1].kind == "turn-end"
    chunks = [event.data for event in seen[1:-1]]
    assert all(event.kind == "chunk" for event in seen[1:-1])
    # what had already arrived with the first chunk is delivered, then the aborted finish: the stream stopped
    assert [chunk.text for chunk in chunks if isinstance(chunk, TextDelta)] == ["Hello"]
    assert chunks[-1] == Finish(FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")))
    assert seen[-1].data["kind"] == "aborted"
    assert seen[-1].data["failure"]["code"] == Code.ABORTED
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "turn/end"]
    assert turn_end(loaded)["kind"] == "aborted"
    assert of_type(loaded, "assistant/attempt")[0]["failure"]["code"] == Code.ABORTED


async def test_cancel_during_a_pending_retry_ends_the_turn_aborted_at_once(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    tools = Tools()
    path = tmp_path / "s.jsonl"
    cancel = asyncio.Event()
    policy = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5000)
    seen: list[TurnEvent] = []
    cancelled_at = 0.0
    headers = {"x-emulator-fail-first": "5", "x-emulator-retry-after": "2"}
    client = make_client(emu, "rate-limit", key=key, policy=policy, headers=headers)
    async with asyncio.timeout(LIMIT), client:
        with Session.open(path) as session:
            async for event in run_turn(client, session, tools.registry, "Hello?", cancel=cancel):
                seen.append(event)
                if event.kind == "retry":
                    cancelled_at = time.monotonic()
                    cancel.set()
    elapsed = time.monotonic() - cancelled_at

    retry = next(event for event in seen if event.kind == "retry")
    assert retry.data.delay_ms == 2000  # the provider's Retry-After: the retry was really pending for 2 s
    assert retry.data.failure.code == Code.RATE_LIMIT
    assert elapsed < 0.5
    assert seen[-1].kind == "turn-end"
    assert seen[-1].data["kind"] == "aborted"
    assert len(requests_for(emu, key)) == 1
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/attempt", "llm/retry", "assistant/attempt", "turn/end"]
    assert [data["failure"]["code"] for data in of_type(loaded, "assistant/attempt")] == [Code.RATE_LIMIT, Code.ABORTED]
    assert turn_end(loaded)["kind"] == "aborted"


async def test_cancel_while_tools_run_abandons_them_with_error_results(emu: Emulator, tmp_path: Path) -> None:
    cancel = asyncio.Event()
    finished: list[str] = []
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Never answers on its own: it sets cancel and waits."""
        try:
            cancel.set()
            async with asyncio.timeout(LIMIT):
                await asyncio.Event().wait()
            return "unreachable"
        finally:
            finished.append(city)

    path = tmp_path / "s.jsonl"
    async with asyncio.timeout(LIMIT), make_client(emu, "clean-tool") as client:
        with Session.open(path) as session:
            events = await run_turn_to_end(client, session, registry, "Weather?", cancel=cancel)
        await asyncio.sleep(0)  # let the abandoned tool task see its cancellation

    assert events[-1].data["kind"] == "aborted"
    loaded = Session.load(path)
    assert types_of(loaded) == ["user/message", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end"]
    block = of_type(loaded, "tool/result")[0]["message"]["content"][0]
    assert block["is_error"] is True
    assert block["content"][0]["text"].startswith("cancelled")
    assert finished == ["Paris"]


# -- continuing, crashes, writers -------------------------------------------------------------------------------------


async def test_second_turn_in_a_reopened_session_continues_the_history(emu: Emulator, tmp_path: Path) -> None:
    key = new_key()
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), key)
    with Session.open(path) as reader:
        history = reader.messages()

    async with asyncio.timeout(LIMIT), make_client(emu, "agent", key=key) as client:
        with Session.open(path) as session:
            assert session.next_turn() == 2
            events = await run_turn_to_end(client, session, Tools().registry, "And tomorrow?")

    assert {event.turn for event in events} == {2}
    assert events[-1].data == {"kind": "stop"}
    request = requests_for(emu, key)[-1]
    assert request.profile == "clean"
    assert messages_of(request) == [*history, {"role": "user", "content": "And tomorrow?"}]
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    assert types_of(loaded)[len(AGENT_TYPES) :] == ["user/message", "assistant/message", "step/end", "turn/end"]


async def test_torn_last_line_is_truncated_and_every_complete_event_survives(emu: Emulator, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), new_key())
    complete = path.read_bytes()
    before = Session.load(path)
    with open(path, "ab") as file:  # a crash in the middle of the next append
        file.write(b'{"v":1,"seq":19,"type":"user/message","data":{"id":"msg_x","ro')

    with pytest.warns(SessionTornTailWarning, match="line 19 is torn"):
        session = Session.open(path)
    with session:
        assert session.recovered_torn_tail
        assert session.events == before
        assert session.next_turn() == 2
    assert path.read_bytes() == complete
    assert Session.load(path) == before


async def test_second_writer_is_refused_with_a_clear_error(emu: Emulator, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    await run_agent(emu, path, Tools(), new_key())
    with Session.open(path) as first:
        with pytest.raises(SessionLockedError, match="already open by another writer") as raised:
            Session.open(path)
        assert str(path) in str(raised.value)
        assert "one writer at a time" in str(raised.value)
        assert not first.closed
    with Session.open(path) as again:  # released on close
        assert again.next_turn() == 2


# -- an older writer's log: check and repair --------------------------------------------------------------------------


def older_writer_log(path: Path) -> None:
    """What an older writer left: turn 1 recorded its tool call with an empty id everywhere; turn 2 is fine."""

    def user(message_id: str, text: str) -> tuple[str, dict[str, Any]]:
        return "user/message", {
            "id": message_id,
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": text}],
        }

    def assistant(turn: int, content: list[dict[str, Any]], finish: str) -> tuple[str, dict[str, Any]]:
        message = {
            "id": f"a{turn}",
            "role": "assistant",
            "source": {"kind": "model", "provider": "gateway", "model": "m"},
            "content": content,
            "usage": None,
            "finish": {"kind": finish},
        }
        return "assistant/message", {"turn": turn, "step": 1, "message": message}

    result = {
        "id": "r1",
        "role": "user",
        "source": {"kind": "tool", "call_id": ""},
        "content": [{"type": "tool-result", "tool_call_id": "", "content": [{"type": "text", "text": "sunny"}],
                     "is_error": False}],
    }
    events = [
        user("u1", "Weather in Paris?"),
        assistant(1, [{"type": "tool-call", "id": "", "name": "get_weather", "arguments": '{"city":"Paris"}'}],
                  "tool-calls"),
        ("tool/call", {"turn": 1, "step": 1, "call_id": "", "name": "get_weather", "arguments": '{"city":"Paris"}'}),
        ("tool/result", {"turn": 1, "step": 1, "message": result}),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "stop"}}),
        user("u2", "Thanks"),
        assistant(2, [{"type": "text", "text": "You are welcome."}], "stop"),
        ("step/end", {"turn": 2, "step": 1}),
        ("turn/end", {"turn": 2, "reason": {"kind": "stop"}}),
    ]
    with open(path, "w", encoding="utf-8") as file:
        for seq, (event_type, data) in enumerate(events, 1):
            file.write(json.dumps({"v": 1, "seq": seq, "type": event_type, "data": data}) + "\n")


def assert_repaired(path: Path, original: list[str]) -> None:
    loaded = Session.load(path)
    assert [event.seq for event in loaded] == list(range(1, len(loaded) + 1))
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [2]
    assert [data["id"] for data in of_type(loaded, "user/message")] == ["u1", "u2"]  # the user's words are kept
    assert check(path) == []
    assert assert_no_empty_call_id(path) == 0
    quarantine = path.with_name(path.stem + ".quarantine.jsonl")
    assert quarantine.read_text(encoding="utf-8").splitlines() == original[1:6]  # turn 1, verbatim
    with Session.open(path) as session:
        assert session.next_turn() == 3


def test_repair_recovers_a_log_with_empty_call_ids_and_check_reported_them(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    older_writer_log(path)
    original = path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(SessionCorruptionError, match="line 2, seq 2") as raised:
        Session.load(path)
    assert "non-empty string id" in str(raised.value)

    faults = check(path)
    assert [fault.split(":")[0] for fault in faults] == ["line 2, seq 2", "line 3, seq 3", "line 4, seq 4"]
    assert "non-empty string id, got ''" in faults[0]
    assert "tool/call must have a non-empty string call_id, got ''" in faults[1]
    assert "message must have tool source" in faults[2]

    report = repair(path)
    assert report.problems == faults
    assert report.turns_quarantined == [1]
    assert report.quarantined == 5
    assert report.kept == len(original) - 5
    assert report.quarantine_path == path.with_name("old.quarantine.jsonl")
    assert_repaired(path, original)


def test_session_check_and_repair_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.jsonl"
    older_writer_log(path)
    original = path.read_text(encoding="utf-8").splitlines()

    assert main(["session", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "line 2, seq 2" in out
    assert "line 3, seq 3" in out
    assert "line 4, seq 4" in out
    assert f"{path}: 3 violation(s)" in out

    assert main(["session", "repair", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("fixed: ") == 3
    assert "quarantined 5 (turns 1)" in out
    assert "the log loads" in out

    assert main(["session", "check", str(path)]) == 0
    assert f"{path}: ok, loadable" in capsys.readouterr().out
    assert_repaired(path, original)


# -- the CLI chat with a session and tools ----------------------------------------------------------------------------

TOOLS_MODULE = '''
"""Tools for the CLI test."""


async def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21 C"


async def get_time(timezone: str) -> str:
    """Current time in a timezone."""
    return f"12:00 in {timezone}"


TOOLS = [get_weather, get_time]
'''


def test_cli_chat_with_a_session_and_tools_runs_the_loop_and_continues(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "my_tools.py"
    module.write_text(TOOLS_MODULE, encoding="utf-8")
    path = tmp_path / "chat.jsonl"
    # The CLI sends no x-emulator-key, so the agent's step-2 counter is the default key's. Spend its one refusal
    # here, so the CLI's step 2 needs no retry (the CLI's backoff is the default 500 ms, a real wait).
    httpx.post(
        f"{emu.base_url}/chat/completions",
        json={"model": "agent", "stream": False, "messages": [{"role": "user", "content": "x"},
                                                             {"role": "assistant", "content": "y"}]},
        timeout=5.0,
    ).raise_for_status()
    first_request = len(emu.state.requests)
    argv = ["--session", str(path), "--tools", str(module), "--base-url", emu.base_url, "--model", "agent"]

    assert main(["chat", "Weather?", *argv]) == 0
    out = capsys.readouterr().out
    assert "-- turn 1 ended: stop" in out
    loaded = Session.load(path)
    assert types_of(loaded) == [t for t in AGENT_TYPES if t not in ("assistant/attempt", "llm/retry")]
    texts = [data["message"]["content"][0]["content"][0]["text"] for data in of_type(loaded, "tool/result")]
    assert texts == ["Paris: sunny, 21 C", "Berlin: sunny, 21 C", "Paris: sunny, 21 C", "12:00 in Europe/Paris"]
    assert assert_no_empty_call_id(path) >= 12

    assert main(["chat", "And tomorrow?", *argv]) == 0
    assert "-- turn 2 ended: stop" in capsys.readouterr().out
    again = Session.load(path)
    assert again[: len(loaded)] == loaded
    assert [data["turn"] for data in of_type(again, "turn/end")] == [1, 2]
    last = messages_of(emu.state.requests[-1])
    assert last[0] == {"role": "user", "content": "Weather?"}
    assert last[-1] == {"role": "user", "content": "And tomorrow?"}
    assert len(emu.state.requests) - first_request == 4


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


# -- continuing a session a crash left mid-turn -----------------------------------------------------------------------


async def interrupted_log(emu: Emulator, path: Path, keep: int) -> list[str]:
    """A one-step tool-calling turn, cut after its first ``keep`` lines (a crash between two appends)."""
    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny, 21 C"

    async with asyncio.timeout(LIMIT), make_client(emu, "clean-tool") as client:
        with Session.open(path) as session:
            await run_turn_to_end(client, session, registry, "Weather?", max_steps=1)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [json.loads(line)["type"] for line in lines] == [
        "user/message", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end",
    ]
    path.write_text("".join(lines[:keep]), encoding="utf-8")
    return lines[:keep]


async def test_run_turn_on_an_interrupted_session_recovers_or_refuses_before_writing(
    emu: Emulator, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    kept = await interrupted_log(emu, path, keep=5)  # crash after step/end, before turn/end
    key = new_key()
    async with asyncio.timeout(LIMIT), make_client(emu, "clean", key=key) as client:
        with Session.open(path) as session:
            try:
                events = await run_turn_to_end(client, session, ToolRegistry(), "Again?")
            except SessionError:  # refusing is fine, but then nothing may have happened
                assert path.read_text(encoding="utf-8") == "".join(kept)
                assert requests_for(emu, key) == []
                return
    # or it recovered turn 1 (P3: only the missing closer) and ran turn 2
    assert events[-1].data == {"kind": "stop"}
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    assert turn_end(loaded[:6])["kind"] == "aborted"


async def test_cli_chat_continues_a_session_a_crash_left_mid_turn(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    kept = await interrupted_log(emu, path, keep=3)  # crash after tool/call, before its result
    argv = ["chat", "Again?", "--session", str(path), "--base-url", emu.base_url, "--model", "clean"]
    code = await asyncio.to_thread(main, argv)
    if code == 2:  # a clean refusal
        assert "llm-stream:" in capsys.readouterr().err
        assert path.read_text(encoding="utf-8") == "".join(kept)
        return
    assert code == 0
    loaded = Session.load(path)
    assert [data["turn"] for data in of_type(loaded, "turn/end")] == [1, 2]
    result = of_type(loaded, "tool/result")[0]["message"]["content"][0]
    assert result["is_error"] is True  # the interrupted call's synthesised closer; the tool was not re-run
