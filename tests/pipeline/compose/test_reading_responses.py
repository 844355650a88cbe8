"""``collect``/``translate``/``stream`` given an HTTP response the caller already has, and what a ``str`` or a missing
file now does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import httpx
import openai
import pytest

import pipeline
from operators import Finish, TextDelta, ToolCallBlock
from pipeline import AssistantMessage
from pipeline.emulator import Emulator

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def _finish(chunks: Sequence[object]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def _send(emu: Emulator, profile: str, http: httpx.Client) -> httpx.Response:
    headers = {"x-emulator-profile": profile}
    request = http.build_request("POST", f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
    return http.send(request, stream=True)


async def _asend(emu: Emulator, profile: str, http: httpx.AsyncClient) -> httpx.Response:
    headers = {"x-emulator-profile": profile}
    request = http.build_request("POST", f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
    return await http.send(request, stream=True)


def test_a_streamed_httpx_response_is_read_as_its_event_stream(emu: Emulator) -> None:
    with httpx.Client() as http:
        chunks = pipeline.collect(_send(emu, "seed-bug", http))
    message = pipeline.assemble(chunks)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Berlin"}'),
    ]


def test_a_429_response_is_rate_limit_with_retry_after_not_a_closed_stream(emu: Emulator) -> None:
    with httpx.Client() as http:
        finish = _finish(pipeline.collect(_send(emu, "rate-limit", http)))
    assert finish.reason.failure is not None
    assert finish.reason.failure.code == "RATE_LIMIT"
    assert finish.reason.failure.retry_after_ms == 2000
    assert finish.reason.failure.status == 429


def test_an_html_200_response_is_malformed_response(emu: Emulator) -> None:
    with httpx.Client() as http:
        finish = _finish(pipeline.collect(_send(emu, "html-200", http)))
    assert finish.reason.code == "MALFORMED_RESPONSE"


def test_an_already_read_response_is_classified_from_its_content(emu: Emulator) -> None:
    read = httpx.post(f"{emu.base_url}/chat/completions", json=BODY, headers={"x-emulator-profile": "quota"})
    assert _finish(pipeline.collect(read)).reason.code == "QUOTA"
    good = httpx.post(f"{emu.base_url}/chat/completions", json=BODY, headers={"x-emulator-profile": "clean"})
    assert pipeline.assemble(pipeline.collect(good)).text == "Hello from the emulator."


async def test_stream_reads_an_async_clients_response_at_the_callers_pace(emu: Emulator) -> None:
    async with httpx.AsyncClient() as http:
        response = await _asend(emu, "clean", http)
        texts = [c.text async for c in pipeline.stream(response) if isinstance(c, TextDelta)]
    assert "".join(texts) == "Hello from the emulator."
    assert response.is_closed


async def test_stream_classifies_an_async_503(emu: Emulator) -> None:
    async with httpx.AsyncClient() as http:
        chunks = [c async for c in pipeline.stream(await _asend(emu, "unavailable", http))]
    assert _finish(chunks).reason.code == "SERVER"


def test_an_async_response_given_to_collect_is_refused_with_a_pointer_to_stream(emu: Emulator) -> None:
    async def get() -> httpx.Response:
        async with httpx.AsyncClient() as http:
            return await http.send(http.build_request("GET", f"{emu.base_url}/models"), stream=True)

    response = asyncio.run(get())
    with pytest.raises(TypeError, match=r"pipeline\.stream\(\)"):
        pipeline.collect(response)


def test_the_openai_sdks_streaming_response_is_read_from_its_http_response(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.base_url, api_key="sk-test", max_retries=0)
    with client.chat.completions.with_streaming_response.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        extra_headers={"x-emulator-profile": "ollama-parallel"},
    ) as response:
        message: AssistantMessage = pipeline.assemble(pipeline.collect(response))
    assert [c.name for c in message.tool_calls] == ["get_weather", "get_time"]
    assert all(isinstance(c, ToolCallBlock) for c in message.tool_calls)


def test_the_openai_sdks_iter_bytes_is_an_iterable_of_bytes(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.base_url, api_key="sk-test", max_retries=0)
    with client.chat.completions.with_streaming_response.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        extra_headers={"x-emulator-profile": "seed-bug"},
    ) as response:
        message = pipeline.assemble(pipeline.collect(response.iter_bytes()))
    assert len(message.tool_calls) == 2


def test_a_str_is_refused_with_a_type_error_saying_what_to_pass() -> None:
    with pytest.raises(TypeError, match=r"pathlib\.Path.*text\.encode\(\)"):
        pipeline.collect("response.sse")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"text\.encode\(\)"):
        pipeline.collect("data: [DONE]\n\n")  # type: ignore[arg-type]


async def test_stream_refuses_a_str_too() -> None:
    with pytest.raises(TypeError, match="not a byte source"):
        async for _ in pipeline.stream("response.sse"):  # type: ignore[arg-type]
            pass


def test_a_missing_file_raises_file_not_found_instead_of_an_error_finish(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        pipeline.collect(tmp_path / "missing.sse")
    with pytest.raises(IsADirectoryError):
        pipeline.collect(tmp_path)
