"""The SDKs' own client factories take ``SanitizingTransport`` (issue 35 item 1): ``anthropic.DefaultHttpxClient`` /
``DefaultAsyncHttpxClient`` (which refuse a transport with an httpx class in its MRO), ``openai.DefaultHttpxClient`` /
``DefaultAsyncHttpxClient``, and google-genai's ``HttpOptions(client_args=..., async_client_args=...)``, sync and
async, each against the loopback emulator on a profile the plain SDK gets wrong; the factory's own defaults stay."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
import openai
import pytest

from pipeline import SanitizingTransport
from pipeline.emulator import Emulator

httpx2 = pytest.importorskip("httpx2")
from google import genai  # noqa: E402
from google.genai import errors, types  # noqa: E402

TOOLS: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
ASK: Any = [{"role": "user", "content": "weather?"}]


def _chat_calls(completion: Any) -> list[tuple[str, str]]:
    calls = completion.choices[0].message.tool_calls or []
    assert all(call.id for call in calls)
    assert len({call.id for call in calls}) == len(calls)
    return [(call.function.name, call.function.arguments) for call in calls]


def _tool_uses(message: Any) -> list[str]:
    uses = [block for block in message.content if block.type == "tool_use"]
    assert all(block.id for block in uses)
    assert len({block.id for block in uses}) == len(uses)
    return [block.name for block in uses]


def test_the_factories_take_the_transport_and_keep_their_defaults() -> None:
    for factory, sdk in ((anthropic.DefaultHttpxClient, anthropic), (anthropic.DefaultAsyncHttpxClient, anthropic),
                         (openai.DefaultHttpxClient, openai), (openai.DefaultAsyncHttpxClient, openai)):
        client = factory(transport=SanitizingTransport())
        assert client.timeout == httpx2.Timeout(sdk.DEFAULT_TIMEOUT)  # the SDK's, not httpx2's 5 s
        assert client.follow_redirects


def test_the_transport_is_an_httpx2_transport_and_still_serves_httpx_clients(emu: Emulator) -> None:
    transport = SanitizingTransport()
    assert isinstance(transport, httpx2.BaseTransport)
    assert isinstance(transport, httpx2.AsyncBaseTransport)
    with httpx.Client(transport=transport) as client:  # httpx's clients never check a transport's class
        response = client.post(f"{emu.base_url}/chat/completions", json={"model": "seed-bug", "messages": ASK,
                                                                          "stream": True})
        assert response.status_code == 200
        assert response.text.endswith("data: [DONE]\n\n")


def test_anthropic_default_httpx_client(emu: Emulator) -> None:
    client = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-x", max_retries=0,
                                 http_client=anthropic.DefaultHttpxClient(transport=SanitizingTransport()))
    with client, client.messages.stream(model="seed-bug", max_tokens=64, messages=ASK) as stream:
        names = _tool_uses(stream.get_final_message())
    assert names
    assert all(names)


async def test_anthropic_default_async_httpx_client(emu: Emulator) -> None:
    http = anthropic.DefaultAsyncHttpxClient(transport=SanitizingTransport())
    client = anthropic.AsyncAnthropic(base_url=emu.url, api_key="sk-ant-x", max_retries=0, http_client=http)
    async with client, client.messages.stream(model="seed-bug", max_tokens=64, messages=ASK) as stream:
        names = _tool_uses(await stream.get_final_message())
    assert names
    assert all(names)


def test_the_plain_anthropic_sdk_gets_the_seed_bug_wrong(emu: Emulator) -> None:
    """What the two tests above need the transport for."""
    client = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-x", max_retries=0)
    with client, client.messages.stream(model="seed-bug", max_tokens=64, messages=ASK) as stream:
        uses = [block for block in stream.get_final_message().content if block.type == "tool_use"]
    assert not all(block.id for block in uses) or len({block.id for block in uses}) < len(uses)


def test_openai_default_httpx_client(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.base_url, api_key="sk-x", max_retries=0,
                           http_client=openai.DefaultHttpxClient(transport=SanitizingTransport()))
    with client, client.chat.completions.stream(model="seed-bug", messages=ASK, tools=TOOLS) as stream:
        calls = _chat_calls(stream.get_final_completion())  # the plain SDK: AssertionError
    assert calls
    assert all(name for name, _ in calls)


async def test_openai_default_async_httpx_client(emu: Emulator) -> None:
    http = openai.DefaultAsyncHttpxClient(transport=SanitizingTransport())
    client = openai.AsyncOpenAI(base_url=emu.base_url, api_key="sk-x", max_retries=0, http_client=http)
    async with client, client.chat.completions.stream(model="seed-bug", messages=ASK, tools=TOOLS) as stream:
        calls = _chat_calls(await stream.get_final_completion())
    assert calls
    assert all(name for name, _ in calls)


def _genai(emu: Emulator) -> genai.Client:
    """google-genai building its own clients (its SSL context, its timeouts) around the transport."""
    transport = SanitizingTransport()
    return genai.Client(api_key="AIza-x", http_options=types.HttpOptions(
        base_url=emu.url, client_args={"transport": transport}, async_client_args={"transport": transport}))


def test_google_genai_client_args(emu: Emulator) -> None:
    client = _genai(emu)
    assert isinstance(client._api_client._httpx_client, httpx2.Client)  # the backend it picked from the transport
    with pytest.raises(errors.APIError, match="STREAM_CLOSED"):  # the plain SDK returns the cut answer as whole
        for _ in client.models.generate_content_stream(model="no-finish", contents="hi"):
            pass


def test_google_genai_async_client_args(emu: Emulator) -> None:
    async def read() -> None:
        stream = await _genai(emu).aio.models.generate_content_stream(model="no-finish", contents="hi")
        async for _ in stream:
            pass

    with pytest.raises(errors.APIError, match="STREAM_CLOSED"):
        asyncio.run(read())
