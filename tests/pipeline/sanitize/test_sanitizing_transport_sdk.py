"""The unmodified openai SDK and LangChain's ChatOpenAI, given ``SanitizingTransport`` as their http client's
transport, against the loopback emulator's fault profiles: exactly the right tool calls, text and usage."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

import httpx
import openai
import pytest
from sdk_cases import CASES, MESSAGES, TOOLS, Case, expected_total_tokens, final_completion

from operators import RetryPolicy
from pipeline import SanitizingTransport
from pipeline.emulator import Emulator

FAST = RetryPolicy(initial_delay_ms=1, max_delay_ms=50)


def sync_sdk(emu: Emulator, http: httpx.Client) -> openai.OpenAI:
    # openai>=3 types http_client as an httpx2 client and accepts an httpx one as well ("legacy httpx")
    return openai.OpenAI(base_url=emu.base_url, api_key="sk-test", http_client=http, max_retries=0)  # type: ignore[arg-type,unused-ignore]


def async_sdk(emu: Emulator, http: httpx.AsyncClient) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=emu.base_url, api_key="sk-test", http_client=http, max_retries=0)  # type: ignore[arg-type,unused-ignore]


def _calls(message: Any) -> tuple[tuple[str, str], ...]:
    return tuple((call.function.name, call.function.arguments) for call in message.tool_calls or ())


def _check(emu: Emulator, case: Case, completion: Any) -> None:
    message = completion.choices[0].message
    assert _calls(message) == case.calls
    assert all(call.id and call.type == "function" for call in message.tool_calls or ())
    assert len({call.id for call in message.tool_calls or ()}) == len(case.calls)
    assert (message.content or None) == case.text
    assert completion.choices[0].finish_reason == ("tool_calls" if case.calls else "stop")
    assert completion.usage is not None
    assert completion.usage.total_tokens == expected_total_tokens(emu.base_url, case)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_openai_sdk_through_the_transport_gets_the_right_completion(emu: Emulator, case: Case) -> None:
    http = httpx.Client(transport=SanitizingTransport(retry_policy=FAST))
    completion = final_completion(sync_sdk(emu, http), case)
    _check(emu, case, completion)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_async_openai_sdk_through_the_transport_gets_the_right_completion(emu: Emulator, case: Case) -> None:
    http = httpx.AsyncClient(transport=SanitizingTransport(retry_policy=FAST))
    client = async_sdk(emu, http)
    async with client, client.chat.completions.stream(
        model="m",
        messages=MESSAGES,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        extra_headers=case.headers(),
        stream_options={"include_usage": True},
    ) as stream:
        completion = await stream.get_final_completion()
    _check(emu, case, completion)


def test_the_plain_sdk_crashes_on_the_seed_bug_and_merges_ollamas_parallel_calls(emu: Emulator) -> None:
    """What the transport fixes: the same two profiles without it."""
    with openai.OpenAI(base_url=emu.base_url, api_key="sk-test", max_retries=0) as client:
        with pytest.raises(AssertionError), client.chat.completions.stream(
            model="m", messages=MESSAGES, tools=TOOLS, extra_headers={"x-emulator-profile": "seed-bug"}  # type: ignore[arg-type]
        ) as stream:
            stream.get_final_completion()
        with client.chat.completions.stream(
            model="m", messages=MESSAGES, tools=TOOLS, extra_headers={"x-emulator-profile": "ollama-parallel"}  # type: ignore[arg-type]
        ) as stream:
            merged = stream.get_final_completion().choices[0].message.tool_calls or []
    assert [call.function.name for call in merged] == ["get_weatherget_time"]


@pytest.mark.parametrize(("profile", "code"), [("event-error", "INVALID_REQUEST"), ("error-midstream", "SERVER")])
def test_a_failure_after_text_was_forwarded_is_raised_by_the_sdk_as_api_error(
    emu: Emulator, profile: str, code: str
) -> None:
    http = httpx.Client(transport=SanitizingTransport(retry_policy=FAST))
    with sync_sdk(emu, http) as client:
        stream = client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, extra_headers={"x-emulator-profile": profile}  # type: ignore[arg-type]
        )
        seen: list[str] = []

        def read_all() -> None:
            for chunk in cast(Iterable[Any], stream):
                seen.extend(choice.delta.content or "" for choice in chunk.choices)

        with pytest.raises(openai.APIError) as raised:
            read_all()
    assert "".join(seen)  # text came first, then the in-band error
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == "llm_stream_error"
    assert raised.value.body["code"] == code


def test_a_final_http_error_reaches_the_sdk_as_its_own_exception(emu: Emulator) -> None:
    http = httpx.Client(transport=SanitizingTransport(retry_policy=FAST))
    with sync_sdk(emu, http) as client:
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(
                model="m", messages=MESSAGES, stream=True, extra_headers={"x-emulator-profile": "auth"}  # type: ignore[arg-type]
            )
        with pytest.raises(openai.RateLimitError) as raised:
            client.chat.completions.create(
                model="m", messages=MESSAGES, stream=True, extra_headers={"x-emulator-profile": "quota"}  # type: ignore[arg-type]
            )
    assert raised.value.status_code == 429


def test_a_non_streaming_request_passes_through_untouched(emu: Emulator) -> None:
    body = {"model": "m", "messages": MESSAGES, "stream": False}
    headers = {"x-emulator-profile": "clean-tool"}
    direct = httpx.post(f"{emu.base_url}/chat/completions", json=body, headers=headers)
    with httpx.Client(transport=SanitizingTransport()) as http:
        through = http.post(f"{emu.base_url}/chat/completions", json=body, headers=headers)
        models = http.get(f"{emu.base_url}/models")
    assert through.status_code == direct.status_code == 200
    assert through.headers["content-type"] == direct.headers["content-type"] == "application/json"
    mine, theirs = through.json(), direct.json()
    assert mine["usage"] == theirs["usage"]
    calls = [[c["function"] for c in r["choices"][0]["message"]["tool_calls"]] for r in (mine, theirs)]
    assert calls[0] == calls[1] == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert models.json() == httpx.get(f"{emu.base_url}/models").json()


async def test_langchain_chat_openai_astream_with_tools_gets_the_right_calls(emu: Emulator) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    transport = SanitizingTransport(retry_policy=FAST)
    for case in CASES:
        model = langchain_openai.ChatOpenAI(
            model="m",
            base_url=emu.base_url,
            api_key="sk-test",
            max_retries=0,
            stream_usage=True,
            http_client=httpx.Client(transport=transport),
            http_async_client=httpx.AsyncClient(transport=transport),
            default_headers=case.headers(),
        ).bind_tools(TOOLS)
        merged: Any = None
        async for piece in model.astream(MESSAGES):
            merged = piece if merged is None else merged + piece
        assert merged is not None, case.name
        calls = tuple((call["name"], _compact(call["args"])) for call in merged.tool_calls)
        assert calls == tuple((name, _compact_text(arguments)) for name, arguments in case.calls), case.name
        assert all(call["id"] for call in merged.tool_calls), case.name
        assert (merged.content or None) == case.text, case.name
        assert merged.usage_metadata["total_tokens"] == expected_total_tokens(emu.base_url, case), case.name


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _compact_text(arguments: str) -> str:
    return _compact(json.loads(arguments))
