"""``ClientConfig.resolve`` reads its settings in order (arguments, ``LLM_STREAM_*``, the provider's own key), a
remote URL needs a key and a model, and ``is_loopback`` knows loopback from a look-alike DNS name.
"""

from __future__ import annotations

import pytest

from pipeline.client import ClientConfig, ConfigError, is_loopback

# --------------------------------------------------------------------------------------------------- configuration


def test_resolve_arguments_win_over_the_environment() -> None:
    env = {
        "LLM_STREAM_BASE_URL": "https://env.example.com/v1",
        "LLM_STREAM_API_KEY": "env-key",
        "LLM_STREAM_MODEL": "env-model",
    }
    config = ClientConfig.resolve(base_url="https://arg.example.com/v1/", model="arg-model", api_key="arg-key", env=env)

    assert (config.base_url, config.model, config.api_key) == ("https://arg.example.com/v1", "arg-model", "arg-key")


def test_resolve_reads_the_llm_stream_variables() -> None:
    env = {
        "LLM_STREAM_BASE_URL": "https://env.example.com/v1",
        "LLM_STREAM_API_KEY": "env-key",
        "LLM_STREAM_MODEL": "env-model",
    }
    config = ClientConfig.resolve(env=env)

    assert (config.base_url, config.model, config.api_key) == ("https://env.example.com/v1", "env-model", "env-key")


def test_resolve_defaults_to_deepseek_with_its_key() -> None:
    config = ClientConfig.resolve(env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"})

    assert (config.base_url, config.model, config.api_key) == ("https://api.deepseek.com/v1", "deepseek-chat", "ds-key")


def test_resolve_uses_the_openai_key_for_openai() -> None:
    config = ClientConfig.resolve(
        base_url="https://api.openai.com/v1", env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"}
    )

    assert (config.model, config.api_key) == ("gpt-4o-mini", "oa-key")


def test_resolve_prefers_llm_stream_api_key_over_the_providers_key() -> None:
    config = ClientConfig.resolve(env={"DEEPSEEK_API_KEY": "ds-key", "LLM_STREAM_API_KEY": "generic"})

    assert config.api_key == "generic"


def test_resolve_does_not_send_a_providers_key_elsewhere() -> None:
    with pytest.raises(ConfigError):
        ClientConfig.resolve(
            base_url="https://gateway.example.com/v1",
            model="m",
            env={"DEEPSEEK_API_KEY": "ds-key", "OPENAI_API_KEY": "oa-key"},
        )


@pytest.mark.parametrize(
    ("base_url", "hint"),
    [
        (None, "DEEPSEEK_API_KEY"),
        ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        ("https://api.openai.com/v1", "OPENAI_API_KEY"),
        ("https://gateway.example.com/v1", "LLM_STREAM_API_KEY"),
    ],
)
def test_a_missing_key_for_a_remote_url_is_a_one_line_config_error(base_url: str | None, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig.resolve(base_url=base_url, model="m", env={})

    message = str(caught.value)
    assert "\n" not in message
    assert "LLM_STREAM_API_KEY" in message
    assert hint in message


def test_a_remote_url_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="LLM_STREAM_MODEL"):
        ClientConfig.resolve(base_url="https://gateway.example.com/v1", api_key="k", env={})


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8808/v1", "http://localhost:1234/v1", "http://[::1]:8808/v1", "http://127.1.2.3/v1"]
)
def test_loopback_needs_no_key(base_url: str) -> None:
    config = ClientConfig.resolve(base_url=base_url, env={})

    assert config.api_key is None
    assert config.model == "clean"
    assert is_loopback(base_url)


def test_an_empty_key_counts_as_missing() -> None:
    with pytest.raises(ConfigError):
        ClientConfig.resolve(base_url="https://gateway.example.com/v1", model="m", env={"LLM_STREAM_API_KEY": ""})


def test_the_resolved_idle_timeout() -> None:
    assert ClientConfig.resolve(base_url="http://127.0.0.1/v1", env={}).idle_timeout == 300
    assert ClientConfig.resolve(base_url="http://127.0.0.1/v1", idle_timeout=0.5, env={}).idle_timeout == 0.5


@pytest.mark.parametrize("base_url", ["https://api.deepseek.com/v1", "http://10.0.0.1/v1", "http://0.0.0.0:8808/v1"])
def test_remote_urls_are_not_loopback(base_url: str) -> None:
    assert not is_loopback(base_url)


def test_a_dns_name_starting_with_127_is_not_loopback() -> None:
    assert not is_loopback("https://127.example.com/v1")
