"""The proxy refuses to be an open relay of the operator's key (issue 35 item 4): listening beyond loopback with
``--upstream-key-env`` and no ``--client-key-env`` is refused at start (one line, exit 2, nothing bound) unless
``--allow-open-relay`` (``LLM_STREAM_PROXY_ALLOW_OPEN_RELAY``) says something in front authenticates; then it warns as
it starts. Nothing here listens on anything but 127.0.0.1."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest

import pipeline.proxy
import pipeline.proxy._server as server
from pipeline._serve import bind
from pipeline.cli import main
from pipeline.proxy import ProxyConfig

UPSTREAM = "http://127.0.0.1:9/v1"
BEYOND = ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "proxy.internal", ""]
LOOPBACK = ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_UPSTREAM_KEY", "sk-upstream-relay-test")
    monkeypatch.setenv("RELAY_CLIENT_KEYS", "team-key-relay-test")
    for name in ("HOST", "UPSTREAM_KEY_ENV", "CLIENT_KEY_ENV", "ALLOW_OPEN_RELAY", "UPSTREAM"):
        monkeypatch.delenv(f"LLM_STREAM_PROXY_{name}", raising=False)


@pytest.mark.parametrize("host", BEYOND)
def test_beyond_loopback_with_the_upstream_key_and_no_client_keys_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match="open relay") as refused:
        ProxyConfig(upstream=UPSTREAM, host=host, upstream_key_env="RELAY_UPSTREAM_KEY")
    assert "--client-key-env" in str(refused.value)
    assert "--allow-open-relay" in str(refused.value)
    assert "LLM_STREAM_PROXY_ALLOW_OPEN_RELAY=1" in str(refused.value)


@pytest.mark.parametrize("host", BEYOND)
def test_client_keys_no_upstream_key_or_the_override_start(host: str) -> None:
    with_keys = ProxyConfig(upstream=UPSTREAM, host=host, upstream_key_env="RELAY_UPSTREAM_KEY",
                            client_key_env="RELAY_CLIENT_KEYS")
    assert not with_keys.open_relay()
    assert not ProxyConfig(upstream=UPSTREAM, host=host).open_relay()  # clients bring their own keys
    allowed = ProxyConfig(upstream=UPSTREAM, host=host, upstream_key_env="RELAY_UPSTREAM_KEY", allow_open_relay=True)
    assert allowed.open_relay()


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_with_the_upstream_key_alone_starts(host: str) -> None:
    assert not ProxyConfig(upstream=UPSTREAM, host=host, upstream_key_env="RELAY_UPSTREAM_KEY").open_relay()


@pytest.mark.parametrize("where", ["flags", "variables"])
def test_the_command_refuses_in_one_line_before_it_binds(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[ProxyConfig] = []
    monkeypatch.setattr(pipeline.proxy, "run_proxy", ran.append)
    if where == "flags":
        argv = ["proxy", "--upstream", UPSTREAM, "--host", "0.0.0.0", "--upstream-key-env", "RELAY_UPSTREAM_KEY"]
    else:
        monkeypatch.setenv("LLM_STREAM_PROXY_HOST", "0.0.0.0")
        monkeypatch.setenv("LLM_STREAM_PROXY_UPSTREAM_KEY_ENV", "RELAY_UPSTREAM_KEY")
        argv = ["proxy", "--upstream", UPSTREAM]

    assert main(argv) == 2

    assert ran == []
    (line,) = capsys.readouterr().err.splitlines()
    assert "refusing to listen on 0.0.0.0" in line
    assert "sk-upstream-relay-test" not in line


@pytest.mark.parametrize("where", ["flag", "variable"])
def test_the_override_is_a_flag_and_a_variable(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[ProxyConfig] = []
    monkeypatch.setattr(pipeline.proxy, "run_proxy", ran.append)
    argv = ["proxy", "--upstream", UPSTREAM, "--host", "0.0.0.0", "--upstream-key-env", "RELAY_UPSTREAM_KEY"]
    if where == "flag":
        argv.append("--allow-open-relay")
    else:
        monkeypatch.setenv("LLM_STREAM_PROXY_ALLOW_OPEN_RELAY", "true")

    assert main(argv) == 0

    (config,) = ran
    assert config.allow_open_relay
    assert config.open_relay()


def test_an_override_variable_that_is_not_yes_or_no_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLM_STREAM_PROXY_ALLOW_OPEN_RELAY", "maybe")
    assert main(["proxy", "--upstream", UPSTREAM]) == 2
    assert "LLM_STREAM_PROXY_ALLOW_OPEN_RELAY: must be 1, true" in capsys.readouterr().err


@pytest.mark.server
def test_an_allowed_open_relay_warns_as_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run_proxy`` itself, its socket bound on 127.0.0.1 whatever the config says, and served not at all."""
    bound: list[socket.socket] = []

    def loopback_bind(host: str, port: int) -> socket.socket:
        bound.append(bind("127.0.0.1", 0))
        return bound[-1]

    def no_serve(*args: Any) -> None:
        return None

    monkeypatch.setattr(server, "bind", loopback_bind)
    monkeypatch.setattr(server, "serve", no_serve)
    config = ProxyConfig(upstream=UPSTREAM, host="0.0.0.0", upstream_key_env="RELAY_UPSTREAM_KEY",
                         allow_open_relay=True, log_format="off")
    logger = logging.getLogger(server._log.name)  # run_proxy sends it to stderr: put back as it was afterwards
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    try:
        server.run_proxy(config)
    finally:
        for sock in bound:
            sock.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
    err = capsys.readouterr().err
    assert "WARNING: an open relay: listening on 0.0.0.0" in err
    assert "sk-upstream-relay-test" not in err
