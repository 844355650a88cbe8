"""``ChatClient(api="messages" | "responses")`` against the emulator's endpoints for those formats, over loopback:
every fault profile ends as the chat-completions one does, and a refusal is retried into the good attempt."""

from __future__ import annotations

import uuid

import pytest

from operators import RetryPolicy
from pipeline import AssistantMessage, ChatClient
from pipeline.emulator import Emulator

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
PARIS = [("get_weather", '{"city": "Paris"}')]
HELLO = "Hello from the emulator."

# (api, profile, text, calls, finish kind, finish code)
CASES = [
    (api, profile, text, calls, kind, code)
    for api in ("messages", "responses")
    for profile, text, calls, kind, code in [
        ("clean", HELLO, [], "stop", None),
        ("clean-tool", "", PARIS, "tool-calls", None),
        ("seed-bug", "", PARIS, "tool-calls", None),
        ("never-identified", "", [], "error", "MALFORMED_TOOL_CALL"),
        ("error-midstream", "Hello from", [], "error", "SERVER"),
        ("drop-mid-stream", "Hello from", [], "error", "TRANSPORT"),
        ("rate-limit", "", [], "error", "RATE_LIMIT"),
    ]
] + [
    ("responses", "late-id", "", PARIS, "tool-calls", None),
    ("responses", "rotated-ids", HELLO, PARIS, "tool-calls", None),
]


async def complete(emu: Emulator, api: str, profile: str, **headers: str) -> AssistantMessage:
    policy = RetryPolicy(max_retries=1 if headers else 0, initial_delay_ms=1)
    async with ChatClient(emu.base_url, model=profile, api=api, retry_policy=policy, headers=headers) as client:  # type: ignore[arg-type]
        return await client.complete([{"role": "user", "content": "weather?"}], tools=TOOLS)


@pytest.mark.parametrize(
    ("api", "profile", "text", "calls", "kind", "code"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
async def test_each_format_profile_ends_as_the_chat_completions_profile_does(
    emu: Emulator, api: str, profile: str, text: str, calls: list[tuple[str, str]], kind: str, code: str | None
) -> None:
    message = await complete(emu, api, profile)
    assert message.text == text
    assert [(c.name, c.arguments) for c in message.tool_calls] == calls
    assert all(c.id for c in message.tool_calls)
    assert (message.finish.kind, message.finish.code) == (kind, code)


@pytest.mark.parametrize("api", ["messages", "responses"])
async def test_usage_of_each_format_comes_out_disjoint(emu: Emulator, api: str) -> None:
    usage = (await complete(emu, api, "clean")).usage
    assert usage is not None
    assert usage.input_tokens is not None
    assert usage.output_tokens is not None
    assert usage.cache_read_tokens == 16
    if api == "messages":
        assert usage.cache_write_tokens == 8
        assert usage.total_tokens == usage.input_tokens + 16 + 8 + usage.output_tokens
    else:
        assert usage.reasoning_tokens == 4
        assert usage.total_tokens == usage.input_tokens + 16 + usage.output_tokens


@pytest.mark.parametrize("api", ["messages", "responses"])
async def test_a_never_identified_call_is_retried_into_the_good_attempt(emu: Emulator, api: str) -> None:
    message = await complete(
        emu,
        api,
        "never-identified",
        **{"x-emulator-fail-first": "1", "x-emulator-then": "clean-tool", "x-emulator-key": uuid.uuid4().hex},
    )
    assert [(c.name, c.arguments) for c in message.tool_calls] == PARIS
    assert message.retries == 1
    assert message.finish.kind == "tool-calls"
