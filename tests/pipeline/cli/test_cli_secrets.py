"""``llm-stream chat`` never prints, logs or records the API key, whatever the gateway echoes; and ``chat --tools``
without ``--session`` leaves no file behind. docs/decisions/0015-redaction.md.

Every case of ``leaky_gateway.CASES`` (14) runs in 7 output modes: plain, ``--json``, ``--assembled``, ``--session``
in each of the three, and ``--tools`` (the tool loop on its scratch log). Each run's stdout, stderr and log records
are checked, and the session file of the three ``--session`` runs: 14 x (7 x 3 + 3) = 336 outputs, all without the
key. Before the redaction, 68 of these 98 runs put the key into at least one of their outputs.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest
from leaky_gateway import CASES, FORMAT_CASES, KEY, LeakyGateway

from pipeline.cli import main

R = "[redacted]"
MODES: dict[str, list[str]] = {
    "plain": [],
    "json": ["--json"],
    "assembled": ["--assembled"],
    "session": ["--session"],
    "session-json": ["--session", "--json"],
    "session-assembled": ["--session", "--assembled"],
    "tools": ["--tools"],
}

TOOLS_MODULE = '''
"""One tool, which fails quoting what it was given (so a logged traceback would show a leaked argument)."""


def echo(text: str) -> str:
    """Echoes the text back."""
    raise ValueError(f"refusing to echo {text}")


TOOLS = [echo]
'''


def leaks(text: str) -> bool:
    """The key, any 9 or more of its first characters, in any letter case, or in its code form (``SK_PROJ_...``)."""
    folded = text.lower()
    return KEY[:9].lower() in folded or KEY[:9].lower().replace("-", "_") in folded


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every log record's text, traceback included, except httpcore's DEBUG trace of the raw response headers."""
    formatter = logging.Formatter()
    return "\n".join(formatter.format(r) for r in caplog.records if not r.name.startswith("httpcore"))


@pytest.fixture
def tools_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    module = tmp_path_factory.mktemp("tools") / "secret_tools.py"
    module.write_text(TOOLS_MODULE, encoding="utf-8")
    return module


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_STREAM_API_KEY", KEY)


def _argv(gateway: LeakyGateway, case: str, mode: str, session: Path, tools: Path) -> list[str]:
    argv = ["chat", "hi", "--base-url", gateway.base_url, "--model", case, "--max-retries", "0"]
    for flag in MODES[mode]:
        argv += [flag, str(session)] if flag == "--session" else [flag, str(tools)] if flag == "--tools" else [flag]
    return argv


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_chat_output_carries_no_key_a_gateway_echoes(
    gateway: LeakyGateway,
    case: str,
    mode: str,
    tmp_path: Path,
    tools_module: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    session = tmp_path / "chat.jsonl"
    status = main(_argv(gateway, case, mode, session, tools_module))
    out, err = capsys.readouterr()
    assert status in (0, 1), err  # 1: the echoing response ended in an error finish (chat's documented status)
    assert out
    assert not leaks(out)
    assert not leaks(err)
    assert not leaks(logged(caplog))
    if "--session" in MODES[mode]:
        assert not leaks(session.read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", sorted(mode for mode in MODES if mode != "tools"))
@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
def test_chat_output_carries_no_key_echoed_into_a_reasoning_field(
    gateway: LeakyGateway,
    case: str,
    mode: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Messages thinking ``signature``, a Responses ``encrypted_content`` and reasoning item ``id``, with ``--api``
    (decision 0040): the text renderer, ``--json``, ``--assembled`` and the session file."""
    caplog.set_level(logging.DEBUG)
    session = tmp_path / "chat.jsonl"
    argv = [*_argv(gateway, case, mode, session, tmp_path), "--api", FORMAT_CASES[case][0]]
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert not leaks(out)
    assert not leaks(err)
    assert not leaks(logged(caplog))
    if "--session" in MODES[mode]:
        recorded = session.read_text(encoding="utf-8")
        assert "hmm" in recorded
        assert not leaks(recorded)


def test_incorrect_api_key_provided_is_printed_without_the_key(
    gateway: LeakyGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "hi", "--base-url", gateway.base_url, "--model", "http-401", "--max-retries", "0"]) == 1
    out = capsys.readouterr().out
    assert f"AUTH: Incorrect API key provided: {R}. Check Bearer {R}." in out


def test_a_retried_failure_is_printed_without_the_key(
    gateway: LeakyGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "hi", "--base-url", gateway.base_url, "--model", "request-id", "--max-retries", "1"]) == 1
    out, err = capsys.readouterr()
    assert "↻ retry" in out
    assert not leaks(out + err)


def test_chat_tools_without_a_session_leaves_no_session_file_behind(
    gateway: LeakyGateway,
    tmp_path: Path,
    tools_module: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    argv = ["chat", "hi", "--base-url", gateway.base_url, "--model", "tool-arguments", "--tools", str(tools_module)]
    assert main(argv) == 0
    assert "-- turn 1 ended: stop" in capsys.readouterr().out
    assert list(work.iterdir()) == []
    assert list(temp.iterdir()) == []
