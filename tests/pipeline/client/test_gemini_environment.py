"""``api="gemini"`` and the environment (``ClientConfig.resolve``): Google's documented base URL by default, the key
from ``GOOGLE_API_KEY`` else ``GEMINI_API_KEY`` (google-genai's order, ``get_env_api_key``), sent only to Google's
host; ``OPENAI_BASE_URL`` names an OpenAI-compatible endpoint, so a Gemini client does not take it. No request here
leaves the process: the one that would go to Google is answered by an ``httpx.MockTransport``."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from pipeline import ChatClient
from pipeline.client import GEMINI_BASE_URL, ClientConfig, ConfigError

GOOGLE_KEY = "AIza-google-Kq3Zt8Wm"
GEMINI_KEY = "AIza-gemini-Rv5Lp2Xn"


def test_the_default_base_url_of_a_gemini_client_is_googles_with_its_key_and_model() -> None:
    config = ClientConfig.resolve(api="gemini", env={"GEMINI_API_KEY": GEMINI_KEY})

    assert GEMINI_BASE_URL == "https://generativelanguage.googleapis.com/v1beta"
    assert (config.base_url, config.api_key, config.model) == (GEMINI_BASE_URL, GEMINI_KEY, "gemini-2.5-flash")
    assert config.url == f"{GEMINI_BASE_URL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def test_google_api_key_wins_over_gemini_api_key_as_in_google_genai() -> None:
    both = {"GOOGLE_API_KEY": GOOGLE_KEY, "GEMINI_API_KEY": GEMINI_KEY}
    assert ClientConfig.resolve(api="gemini", env=both).api_key == GOOGLE_KEY
    assert ClientConfig.resolve(api="gemini", env={"GOOGLE_API_KEY": GOOGLE_KEY}).api_key == GOOGLE_KEY
    # an empty GOOGLE_API_KEY is no key: the SDK's `google or gemini` falls through to GEMINI_API_KEY
    assert ClientConfig.resolve(api="gemini", env={**both, "GOOGLE_API_KEY": ""}).api_key == GEMINI_KEY


def test_the_librarys_own_variables_and_arguments_win_over_googles() -> None:
    env = {"GOOGLE_API_KEY": GOOGLE_KEY, "LLM_STREAM_API_KEY": "ls-key", "LLM_STREAM_MODEL": "gemini-3-pro-preview"}
    config = ClientConfig.resolve(api="gemini", env=env)
    assert (config.api_key, config.model) == ("ls-key", "gemini-3-pro-preview")
    assert ClientConfig.resolve(api="gemini", api_key="arg-key", env=env).api_key == "arg-key"
    assert ClientConfig.resolve(api="gemini", base_url=f"{GEMINI_BASE_URL}?key=url-key", env=env).api_key == "url-key"


def test_openai_base_url_is_not_a_gemini_clients_url_but_llm_stream_base_url_is() -> None:
    env = {"OPENAI_BASE_URL": "https://gateway.example.com/v1", "OPENAI_API_KEY": "oa-key",
           "GEMINI_API_KEY": GEMINI_KEY}
    assert ClientConfig.resolve(api="gemini", env=env).base_url == GEMINI_BASE_URL
    assert ClientConfig.resolve(env=env, model="m").base_url == "https://gateway.example.com/v1"  # chat takes it
    mine = ClientConfig.resolve(
        api="gemini", env={**env, "LLM_STREAM_BASE_URL": "https://vertex.example.com/v1beta"}, model="m",
        api_key="k",
    )
    assert mine.base_url == "https://vertex.example.com/v1beta"


def test_googles_key_is_not_sent_to_loopback_or_a_gateway() -> None:
    env = {"GOOGLE_API_KEY": GOOGLE_KEY, "GEMINI_API_KEY": GEMINI_KEY}
    assert ClientConfig.resolve(api="gemini", base_url="http://127.0.0.1:8808/v1beta", env=env).api_key is None
    with pytest.raises(ConfigError, match=r"set LLM_STREAM_API_KEY$") as refused:
        ClientConfig.resolve(api="gemini", base_url="https://gateway.example.com/v1beta", model="m", env=env)
    assert GOOGLE_KEY not in str(refused.value)


def test_no_key_for_google_names_the_three_variables_that_give_one() -> None:
    with pytest.raises(ConfigError, match="set LLM_STREAM_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY"):
        ClientConfig.resolve(api="gemini", env={})


def test_googles_key_also_serves_googles_openai_compatible_endpoint() -> None:
    config = ClientConfig.resolve(base_url=f"{GEMINI_BASE_URL}/openai", env={"GEMINI_API_KEY": GEMINI_KEY})
    assert (config.api, config.api_key, config.model) == ("chat", GEMINI_KEY, "gemini-2.5-flash")


def test_a_gemini_client_from_the_environment_posts_to_google_with_the_key_in_its_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("LLM_STREAM_BASE_URL", "LLM_STREAM_API_KEY", "LLM_STREAM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}\r\n\r\n'
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=httpx.ByteStream(body))

    async def run() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
            client = ChatClient(api="gemini", http_client=http)
            return (await client.complete([{"role": "user", "content": "hi"}])).text

    assert asyncio.run(run()) == "hi"
    (request,) = seen
    assert str(request.url) == f"{GEMINI_BASE_URL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == GOOGLE_KEY
    assert "authorization" not in request.headers
