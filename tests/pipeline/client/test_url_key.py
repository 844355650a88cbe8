"""A key in the base URL (``?key=...``, Google's documented style; issue 32 item 2): ``ClientConfig`` moves it out of
the URL into ``api_key`` (so it travels in the key header), and no log line or error message shows it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pipeline import _secrets
from pipeline._logging import get_logger
from pipeline._secrets import redact_url_keys, split_url_key
from pipeline.client import ClientConfig, ConfigError

GOOGLE = "https://generativelanguage.googleapis.com/v1beta"
KEY = "AIzaSyD-Qx7Vb3Zq8uLw4Jk9Tn2Hc"


@pytest.fixture(autouse=True)
def _forget_keys() -> Iterator[None]:
    """The keys registered here are forgotten after each test (a registered key's 8-character cuts are redacted from
    every later record)."""
    saved = dict(_secrets._patterns)
    yield
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


def test_a_url_key_becomes_the_api_key_and_leaves_the_url() -> None:
    config = ClientConfig(base_url=f"{GOOGLE}?key={KEY}", model="gemini-2.5-flash")
    assert (config.base_url, config.api_key) == (GOOGLE, KEY)
    assert KEY not in config.url
    assert KEY not in repr(config)


def test_resolve_moves_the_url_key_before_the_trailing_slash_is_cut() -> None:
    config = ClientConfig.resolve(base_url=f"{GOOGLE}/?key={KEY}", model="gemini-2.5-flash", env={})
    assert (config.base_url, config.api_key) == (GOOGLE, KEY)


def test_the_url_key_wins_over_a_key_from_the_environment() -> None:
    config = ClientConfig.resolve(
        base_url=f"{GOOGLE}?key={KEY}", model="m", env={"LLM_STREAM_API_KEY": "sk-from-the-environment"}
    )
    assert config.api_key == KEY


def test_a_url_key_from_the_environment_is_moved_too() -> None:
    config = ClientConfig.resolve(model="m", env={"LLM_STREAM_BASE_URL": f"{GOOGLE}?key={KEY}"})
    assert (config.base_url, config.api_key) == (GOOGLE, KEY)


def test_the_same_key_in_the_url_and_as_api_key_is_accepted() -> None:
    assert ClientConfig(base_url=f"{GOOGLE}?key={KEY}", model="m", api_key=KEY).api_key == KEY


def test_a_url_key_that_differs_from_api_key_is_refused_without_quoting_either() -> None:
    with pytest.raises(ConfigError, match="differs from api_key") as made:
        ClientConfig(base_url=f"{GOOGLE}?key={KEY}", model="m", api_key="sk-another-key-123")
    with pytest.raises(ConfigError, match="differs from api_key") as resolved:
        ClientConfig.resolve(base_url=f"{GOOGLE}?key={KEY}", model="m", api_key="sk-another-key-123", env={})
    for raised in (made, resolved):
        assert KEY not in str(raised.value)
        assert "sk-another" not in str(raised.value)


def test_two_different_url_keys_are_refused_without_quoting_them() -> None:
    with pytest.raises(ConfigError, match="two different keys") as raised:
        ClientConfig(base_url=f"{GOOGLE}?key={KEY}&api_key=AIzaSyOtherKey123", model="m")
    assert KEY not in str(raised.value)
    assert "AIzaSyOther" not in str(raised.value)


def test_a_missing_model_error_does_not_quote_the_url_key() -> None:
    with pytest.raises(ConfigError, match="no model") as raised:  # Google's own host has a default model
        ClientConfig.resolve(base_url=f"https://gateway.example.com/v1beta?key={KEY}", env={})
    assert KEY not in str(raised.value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{GOOGLE}?key={KEY}&x=1", (f"{GOOGLE}?x=1", KEY)),
        (f"{GOOGLE}?x=1&KEY={KEY}#top", (f"{GOOGLE}?x=1#top", KEY)),
        (f"{GOOGLE}?api_key=AIza%2Bslash%2F", (GOOGLE, "AIza+slash/")),
        (f"{GOOGLE}?key=", (GOOGLE, None)),
        (f"{GOOGLE}?monkey=1&turkey=2", (f"{GOOGLE}?monkey=1&turkey=2", None)),
        (GOOGLE, (GOOGLE, None)),
    ],
)
def test_split_url_key_takes_only_the_key_parameters(url: str, expected: tuple[str, str | None]) -> None:
    assert split_url_key(url) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"POST {GOOGLE}/models/g:streamGenerateContent?alt=sse&key={KEY} 429",
            f"POST {GOOGLE}/models/g:streamGenerateContent?alt=sse&key=[redacted] 429",
        ),
        (f"'url': '{GOOGLE}?Key={KEY}'", f"'url': '{GOOGLE}?Key=[redacted]'"),
        ("https://h/v1?apikey=abc&api-key=def", "https://h/v1?apikey=[redacted]&api-key=[redacted]"),
        ("https://h/v1?monkey=banana", "https://h/v1?monkey=banana"),
    ],
)
def test_a_url_key_parameter_is_redacted_registered_or_not(text: str, expected: str) -> None:
    assert redact_url_keys(text) == expected


def test_a_log_line_quoting_a_url_with_a_key_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    other = "AIzaSyZt5Hq1Nc9Kw3Dv7Gp2Fs4Mr"
    get_logger("transport").info("POST %s failed", f"{GOOGLE}/models/g:streamGenerateContent?alt=sse&key={other}")
    get_logger("transport").warning(f"request to {GOOGLE}?key={other} failed")
    text = caplog.text
    assert other not in text
    assert text.count("key=[redacted]") == 2


def test_a_config_with_a_url_key_registers_it_with_the_log_filter(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    key = "AIzaSyPq4Wd8Rf2Yg6Lk0Mv3Xn7Bj"
    ClientConfig(base_url=f"{GOOGLE}?key={key}", model="m")
    get_logger("client").info("the provider said: bad key %s", key)
    assert key not in caplog.text
