"""The emulator fault profiles the sanitizing transport and the proxy are checked on, with what a correct client
must end up with: the tool calls, the text and the usage the pipeline itself assembles from the same profile."""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import httpx

import pipeline
from operators import UsageChunk

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "weather?"}]


@attrs.frozen
class Case:
    name: str
    profile: str
    text: str | None
    calls: tuple[tuple[str, str], ...]
    """(name, arguments) per tool call, in order."""
    knobs: dict[str, str] = attrs.field(factory=dict)

    @property
    def good_profile(self) -> str:
        """The profile of the attempt that succeeds (the ``then`` profile after a first failure)."""
        return self.knobs.get("x-emulator-then", self.profile)

    def headers(self) -> dict[str, str]:
        """Request headers choosing the profile, with a fresh counter key so fail-first counts per test."""
        return {"x-emulator-profile": self.profile, "x-emulator-key": uuid.uuid4().hex, **self.knobs}


_HELLO = "Hello from the emulator."
_PARIS = ("get_weather", '{"city": "Paris"}')

CASES: tuple[Case, ...] = (
    Case("seed-bug", "seed-bug", None, (_PARIS, ("get_weather", '{"city": "Berlin"}'))),
    Case("ollama-parallel", "ollama-parallel", None, (_PARIS, ("get_time", '{"timezone": "Europe/Paris"}'))),
    Case("late-id", "late-id", None, (_PARIS,)),
    Case(
        "never-identified-then-good",
        "never-identified",
        None,
        (_PARIS,),
        {"x-emulator-fail-first": "1", "x-emulator-then": "clean-tool"},
    ),
    Case("id-after-sse-id", "id-after-sse-id", _HELLO, ()),
    Case("no-done", "no-done", _HELLO, ()),
    Case(
        "rate-limit-then-good",
        "rate-limit",
        _HELLO,
        (),
        {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-retry-after": "0.01"},
    ),
    Case("clean", "clean", _HELLO, ()),
)


def expected_total_tokens(base_url: str, case: Case) -> int:
    """The total the good attempt reports, read by the pipeline itself from a direct request."""
    body = {"model": "m", "messages": MESSAGES, "tools": TOOLS, "stream": True}
    body["stream_options"] = {"include_usage": True}
    response = httpx.post(f"{base_url}/chat/completions", json=body, headers={"x-emulator-profile": case.good_profile})
    usage = [c.usage for c in pipeline.collect(response.content) if isinstance(c, UsageChunk)]
    assert usage
    assert usage[-1].total_tokens is not None
    return usage[-1].total_tokens


def final_completion(client: Any, case: Case) -> Any:
    """``client.chat.completions.stream(...).get_final_completion()`` for ``case`` (a sync openai client)."""
    with client, client.chat.completions.stream(
        model="m",
        messages=MESSAGES,
        tools=TOOLS,
        extra_headers=case.headers(),
        stream_options={"include_usage": True},
    ) as stream:
        return stream.get_final_completion()
