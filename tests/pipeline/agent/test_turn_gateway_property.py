"""run_turn over any mix of tool-call deltas, text, usage and finish reasons a loopback gateway sends: the turn ends
with a classified finish, never an exception, and the session log stays loadable as strict JSON."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators import RetryPolicy
from pipeline import ChatClient, Session, ToolRegistry, TurnEvent, run_turn_to_end

pytestmark = pytest.mark.server  # tests/tiers.py

LIMIT = 10.0
FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=5)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    body = {"id": "x", "object": "chat.completion.chunk", "model": "m"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]  # type: ignore[assignment]
    body.update(extra)
    return json.dumps(body).encode()


def sse(*payloads: bytes) -> bytes:
    return b"".join(b"data: " + payload + b"\n\n" for payload in payloads) + b"data: [DONE]\n\n"


async def gateway(body: bytes) -> AsyncIterator[str]:
    """A loopback gateway answering every request with ``200`` and ``body``; yields its base URL."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    await reader.readexactly(int(line.split(b":")[1]))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


def registry_recording(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry(default_timeout=5)

    def make(name: str) -> Callable[[], str]:
        def tool() -> str:
            ran.append(name)
            return name

        return tool

    for name in ("f", "g"):
        registry.register(make(name), name=name)
    return registry


async def turn(body: bytes, path: Path, registry: ToolRegistry) -> list[TurnEvent]:
    async with asyncio.timeout(LIMIT):
        async for base_url in gateway(body):
            async with ChatClient(base_url, model="m", retry_policy=FAST) as client:
                with Session.open(path) as session:
                    events = await run_turn_to_end(client, session, registry, "hi", max_steps=2)
            return events
    raise AssertionError("unreachable")


def strict_lines(path: Path) -> list[dict[str, Any]]:
    def refuse(constant: str) -> None:
        raise AssertionError(f"the log holds {constant}")

    lines = path.read_bytes().split(b"\n")  # JSONL lines end at "\n" only (text may hold U+0085 or U+2028)
    return [json.loads(line, parse_constant=refuse) for line in lines if line]


def assert_ended_and_loadable(events: list[TurnEvent], path: Path) -> dict[str, Any]:
    assert events[-1].kind == "turn-end"
    reason: dict[str, Any] = events[-1].data
    assert reason["kind"] in {"stop", "error", "max-steps"}
    if reason["kind"] == "error":  # a known code, or an unknown finish_reason as its code (classify_finish)
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", reason["failure"]["code"]), reason
        assert isinstance(reason["failure"]["message"], str)
    loaded = Session.load(path)
    assert loaded[-1].type == "turn/end"
    assert loaded[-1].data["reason"] == reason
    assert len(strict_lines(path)) == len(loaded)
    return reason


TOOL_DELTA = st.fixed_dictionaries(
    {"index": st.integers(0, 2)},
    optional={
        "id": st.sampled_from(["a", "b", ""]),
        "function": st.fixed_dictionaries(
            {}, optional={"name": st.sampled_from(["f", "g", ""]), "arguments": st.sampled_from(["", "{}", "{"])}
        ),
    },
)
NUMBER = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.just(1e308))
USAGE_OBJECT = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": NUMBER,
        "completion_tokens": NUMBER,
        "total_tokens": NUMBER,
        "prompt_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": NUMBER}),
    },
)
PAYLOAD = st.one_of(
    st.builds(lambda deltas: chunk({"tool_calls": deltas}), st.lists(TOOL_DELTA, min_size=1, max_size=3)),
    st.builds(lambda text: chunk({"content": text}), st.text(max_size=5)),
    st.builds(lambda usage: json.dumps({"id": "x", "choices": [], "usage": usage}).encode(), USAGE_OBJECT),
    st.builds(lambda reason: chunk(finish=reason), st.sampled_from(["stop", "tool_calls", "length", "weird"])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(PAYLOAD, max_size=6))
async def test_any_mix_of_tool_calls_and_usage_from_a_gateway_ends_the_turn_classified(
    tmp_path: Path, payloads: list[bytes]
) -> None:
    path = tmp_path / "hypothesis.jsonl"
    path.unlink(missing_ok=True)
    events = await turn(sse(*payloads), path, registry_recording([]))
    assert_ended_and_loadable(events, path)


