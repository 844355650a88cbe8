"""The environment, as the openai SDK reads it (docs/decisions/0020-environment-and-logging.md): arguments, then
``LLM_STREAM_*``, then ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, then the key of the host's provider; and
``OPENAI_API_KEY`` never goes to a host it was not set for."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from pipeline import ChatClient
from pipeline.client import ClientConfig, ConfigError

GATEWAY = "https://gateway.example.com/v1"


def test_openai_base_url_is_the_url_when_nothing_more_specific_is_set() -> None:
    config = ClientConfig.resolve(env={"OPENAI_BASE_URL": GATEWAY + "/", "OPENAI_API_KEY": "oa-key",
                                       "LLM_STREAM_MODEL": "m"})
    assert (config.base_url, config.api_key, config.model) == (GATEWAY, "oa-key", "m")


def test_llm_stream_base_url_wins_over_openai_base_url() -> None:
    env = {"LLM_STREAM_BASE_URL": "https://mine.example.com/v1", "OPENAI_BASE_URL": GATEWAY,
           "LLM_STREAM_API_KEY": "ls-key", "LLM_STREAM_MODEL": "m"}
    assert ClientConfig.resolve(env=env).base_url == "https://mine.example.com/v1"
    assert ClientConfig.resolve(base_url="https://arg.example.com/v1", env=env).base_url == "https://arg.example.com/v1"


def test_llm_stream_api_key_wins_over_openai_api_key() -> None:
    env = {"OPENAI_BASE_URL": GATEWAY, "OPENAI_API_KEY": "oa-key", "LLM_STREAM_API_KEY": "ls-key"}
    assert ClientConfig.resolve(model="m", env=env).api_key == "ls-key"
    assert ClientConfig.resolve(model="m", api_key="arg-key", env=env).api_key == "arg-key"


def test_openai_api_key_goes_to_an_explicit_url_on_openai_base_urls_origin() -> None:
    env = {"OPENAI_BASE_URL": GATEWAY, "OPENAI_API_KEY": "oa-key"}
    config = ClientConfig.resolve(base_url="https://GATEWAY.example.com:443/v2", model="m", env=env)
    assert config.api_key == "oa-key"


def test_openai_api_key_wins_over_the_providers_key_when_openai_base_url_names_the_provider() -> None:
    env = {"OPENAI_BASE_URL": "https://api.deepseek.com/v1", "OPENAI_API_KEY": "oa-key", "DEEPSEEK_API_KEY": "ds"}
    config = ClientConfig.resolve(env=env)
    assert (config.base_url, config.api_key, config.model) == ("https://api.deepseek.com/v1", "oa-key", "deepseek-chat")


@pytest.mark.filterwarnings("ignore::pipeline.InsecureBaseUrlWarning")
@pytest.mark.parametrize(
    ("base_url", "openai_base_url"),
    [
        (GATEWAY, None),  # a gateway named by an argument, OPENAI_BASE_URL unset
        (GATEWAY, "https://other.example.com/v1"),  # OPENAI_BASE_URL names another host
        ("https://gateway.example.com:8443/v1", GATEWAY),  # same host, another port: another origin
        ("http://gateway.example.com/v1", GATEWAY),  # same host, plain http: another origin
    ],
)
def test_openai_api_key_is_not_sent_to_a_host_it_was_not_set_for(base_url: str, openai_base_url: str | None) -> None:
    env = {"OPENAI_API_KEY": "oa-key"} | ({"OPENAI_BASE_URL": openai_base_url} if openai_base_url else {})
    with pytest.raises(ConfigError) as caught:
        ClientConfig.resolve(base_url=base_url, model="m", env=env)
    message = str(caught.value)
    assert "OPENAI_API_KEY is set, but it is sent only to api.openai.com or to OPENAI_BASE_URL's host" in message
    assert "\n" not in message


def test_openai_api_key_does_not_go_to_the_default_provider() -> None:
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY"):
        ClientConfig.resolve(env={"OPENAI_API_KEY": "oa-key"})


def test_openai_api_key_is_not_sent_to_loopback_unless_openai_base_url_says_so() -> None:
    assert ClientConfig.resolve(base_url="http://127.0.0.1:8808/v1", env={"OPENAI_API_KEY": "oa-key"}).api_key is None
    env = {"OPENAI_API_KEY": "oa-key", "OPENAI_BASE_URL": "http://127.0.0.1:8808/v1"}
    assert ClientConfig.resolve(env=env).api_key == "oa-key"


# --------------------------------------------------------------------------------------------------- over HTTP


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.seen.append((self.path, self.headers.get("authorization")))
        body = (b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
                b"data: [DONE]\n\n")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.server
async def test_a_client_from_the_openai_variables_sends_openai_api_key_to_openai_base_url(
    recorder: tuple[str, list[tuple[str, str | None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = recorder
    for name in ("LLM_STREAM_BASE_URL", "LLM_STREAM_API_KEY", "LLM_STREAM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-openai-variable")
    async with ChatClient() as client:
        message = await client.complete([{"role": "user", "content": "hi"}])
    assert message.text == "ok"
    assert seen == [("/v1/chat/completions", "Bearer sk-from-the-openai-variable")]


@pytest.mark.server
async def test_a_loopback_client_sends_no_openai_api_key_when_openai_base_url_is_elsewhere(
    recorder: tuple[str, list[tuple[str, str | None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = recorder
    for name in ("LLM_STREAM_API_KEY", "LLM_STREAM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-openai-variable")
    async with ChatClient(url) as client:
        await client.complete([{"role": "user", "content": "hi"}])
    assert seen == [("/v1/chat/completions", None)]
