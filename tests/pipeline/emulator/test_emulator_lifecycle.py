"""The emulator's lifecycle (start, stop, restart, async use, disconnects) and the official openai SDK consuming
the well-formed profiles."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import openai
import pytest
from emulator_helpers import CLEAN, REAL, TIMEOUT, client, post, request_body, text_of
from openai.lib.streaming.chat import ChatCompletionStreamState

from pipeline.emulator import Emulator, EmulatorConfig, create_app

pytestmark = pytest.mark.server  # tests/tiers.py


@pytest.fixture(scope="module")
def emulator_config() -> EmulatorConfig:
    return EmulatorConfig(replay_dirs=[REAL] if REAL.is_dir() else [])


# --------------------------------------------------------------------------------------------------- lifecycle


def test_a_client_leaving_slow_drip_is_counted_as_a_disconnect() -> None:
    with Emulator() as emu, client(emu.base_url) as http:
        headers = {"x-emulator-profile": "slow-drip", "x-emulator-drip-ms": "100"}
        with http.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response:
            assert next(response.iter_bytes()).startswith(b"data: ")
        assert emu.state.wait_for_disconnects(1, timeout=2.0)
        assert emu.state.disconnects == 1


def test_a_completed_stream_is_not_a_disconnect() -> None:
    with Emulator() as emu, client(emu.base_url) as http:
        for _ in range(3):
            http.post("/chat/completions", json=request_body())
        time.sleep(0.05)
        assert emu.state.disconnects == 0
        assert len(emu.state.requests) == 3


def test_stop_is_quick_even_with_a_stalled_stream_open() -> None:
    emu = Emulator().start()
    assert emu.base_url == f"http://127.0.0.1:{emu.port}/v1"
    with client(emu.base_url) as http:
        headers = {"x-emulator-profile": "stall"}
        with http.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response:
            pieces = response.iter_bytes()
            next(pieces)
            started = time.monotonic()
            emu.stop()
            assert time.monotonic() - started < 3.0  # cut, not drained: stop() gives up on a stream only at 5 s
            with pytest.raises(httpx.RemoteProtocolError):
                list(pieces)
    assert not emu.running


def test_an_emulator_can_be_started_again_after_stop() -> None:
    emu = Emulator()
    for _ in range(2):
        with emu, client(emu.base_url) as http:
            assert post(http, "stall", {"x-emulator-stall-s": "0.01"}).status_code == 200
    assert [r.profile for r in emu.state.requests] == ["stall", "stall"]


async def test_async_context_manager_serves_from_the_background_thread() -> None:
    async with Emulator() as emu, httpx.AsyncClient(base_url=emu.base_url, timeout=TIMEOUT) as ac:
        response = await ac.post("/chat/completions", json=request_body(model="clean"))
        assert text_of(response.content) == CLEAN
    assert not emu.running


def test_create_app_is_a_plain_asgi_app() -> None:
    app = create_app()
    assert app.state.emulator_state.requests == []


# --------------------------------------------------------------------------------------------------- openai SDK

SDK_CASES = [
    ("clean", CLEAN, []),
    ("clean-tool", None, [("get_weather", '{"city": "Paris"}')]),
    ("parallel", None, [("get_weather", '{"city": "Paris"}'), ("get_time", '{"timezone": "Europe/Paris"}')]),
    ("usage-trailer", CLEAN, []),
    ("keepalive", CLEAN, []),
    ("crlf", CLEAN, []),
]


@pytest.fixture(scope="module")
def sdk(emu: Emulator) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=emu.base_url, api_key="test", timeout=5.0, max_retries=0) as sdk_client:
        yield sdk_client


@pytest.mark.parametrize(("profile", "text", "calls"), SDK_CASES)
def test_openai_sdk_consumes_the_stream(
    sdk: openai.OpenAI, profile: str, text: str | None, calls: list[tuple[str, str]]
) -> None:
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    stream = sdk.chat.completions.create(
        model=f"emulator/{profile}",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    with stream:
        for chunk in stream:
            state.handle_chunk(chunk)
    completion = state.get_final_completion()
    message = completion.choices[0].message
    assert message.content == text
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls or []] == calls
    assert all(c.id.startswith("call_") for c in message.tool_calls or [])
    assert completion.choices[0].finish_reason == ("tool_calls" if calls else "stop")
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
