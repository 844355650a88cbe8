"""``llm-stream`` and Gemini: ``chat --api gemini`` against the emulator on loopback (a text answer, a tool loop with a
session log, an error finish, a ``?key=`` base URL), its key from ``GOOGLE_API_KEY`` else ``GEMINI_API_KEY`` and its
default base URL (Google's, answered here by an ``httpx.MockTransport``: never contacted), ``replay --format gemini``,
``emulate`` serving Gemini, and the help texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipeline import _secrets
from pipeline.cli import main
from pipeline.client import GEMINI_BASE_URL
from pipeline.emulator import Emulator
from pipeline.emulator._script import ScriptOptions
from pipeline.emulator.gemini import GEMINI_PROFILES
from pipeline.emulator.gemini._sent_back import SIGNATURE

ROOT = Path(__file__).resolve().parents[3]
ENV_VARS = ("LLM_STREAM_BASE_URL", "LLM_STREAM_API_KEY", "LLM_STREAM_MODEL", "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
            "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY")
KEY = "AIzaSyCliGem-Wq4Tz7Mk2Lp9Hx"
TOOLS = '''
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"sunny in {city}"


TOOLS = [get_weather]
'''


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    saved = dict(_secrets._patterns)  # a ?key= URL registers its key with the log filter: forgotten after the test
    yield
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


def chat(emu: Emulator, model: str, *argv: str) -> int:
    return main(["chat", "Weather in Paris?", "--api", "gemini", "--base-url", emu.base_url, "--model", model, *argv])


def requests_for(emu: Emulator, model: str) -> list[Any]:
    return [r for r in emu.state.requests if f"/models/{model}:" in r.path]


# ------------------------------------------------------------------------------------------- chat --api gemini


def test_chat_api_gemini_streams_a_signed_answer_from_the_emulator(
    capsys: pytest.CaptureFixture[str], emu: Emulator
) -> None:
    assert chat(emu, "emulator-gemini-thinking-signatures", "--assembled") == 0

    message = json.loads(capsys.readouterr().out)
    assert message["text"] == "Hello from the emulator."
    assert message["reasoning"].startswith("**Checking the weather**")
    assert message["finish"]["kind"] == "stop"
    (request,) = requests_for(emu, "emulator-gemini-thinking-signatures")
    assert request.path == "/v1/models/emulator-gemini-thinking-signatures:streamGenerateContent"
    assert request.body == {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}


def test_chat_api_gemini_runs_the_tool_loop_and_sends_the_signature_back(
    capsys: pytest.CaptureFixture[str], emu: Emulator, tmp_path: Path
) -> None:
    tools = tmp_path / "weather_tools.py"
    tools.write_text(TOOLS)
    log = tmp_path / "s.jsonl"

    assert chat(emu, "emulator-gemini-thinking-tool", "--tools", str(tools), "--session", str(log)) == 0

    out = capsys.readouterr().out
    assert "tool result  get_weather gemini-made-0: sunny in Paris" in out
    assert "turn 1 ended: stop" in out
    first, follow_up = requests_for(emu, "emulator-gemini-thinking-tool")
    assert [r.profile for r in (first, follow_up)] == ["thinking-tool", "clean"]  # a 400 without the signature
    assert follow_up.body["contents"][1]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert "gemini-made" not in json.dumps(follow_up.body)
    assert '"call_id":"gemini-made-0"' in log.read_text()


def test_chat_api_gemini_exits_1_on_a_blocked_prompt(capsys: pytest.CaptureFixture[str], emu: Emulator) -> None:
    assert chat(emu, "emulator-gemini-prompt-blocked", "--json") == 1

    finish = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert finish["reason"]["failure"]["code"] == "CONTENT_FILTER"


def test_chat_api_gemini_moves_a_url_key_to_the_header_and_prints_it_nowhere(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, emu: Emulator
) -> None:
    argv = ["chat", "hi", "--api", "gemini", "--base-url", f"{emu.base_url}?key={KEY}", "--model",
            "emulator-gemini-error-midstream", "--max-retries", "0", "--anomalies"]
    caplog.set_level("DEBUG")

    assert main(argv) == 1

    out, err = capsys.readouterr()
    log = "\n".join(record.getMessage() for record in caplog.records)
    assert "finish: error SERVER" in out
    assert "/models/emulator-gemini-error-midstream:streamGenerateContent?alt=sse" in log  # httpx's request line
    for text in (out, err, log):
        assert KEY[:12] not in text


def test_openai_base_url_does_not_steer_or_stop_chat_api_gemini(
    capsys: pytest.CaptureFixture[str], emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://not-a-gemini-endpoint")
    monkeypatch.setenv("LLM_STREAM_BASE_URL", emu.base_url)

    assert main(["chat", "hi", "--api", "gemini", "--model", "emulator-gemini-clean", "--assembled"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "Hello from the emulator."
    monkeypatch.delenv("LLM_STREAM_BASE_URL")
    assert main(["chat", "hi", "--model", "m"]) == 2  # chat still reads OPENAI_BASE_URL, and refuses ftp://
    assert "OPENAI_BASE_URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "sent"),
    [
        ({"GEMINI_API_KEY": "AIza-gemini-env"}, "AIza-gemini-env"),
        ({"GOOGLE_API_KEY": "AIza-google-env"}, "AIza-google-env"),
        ({"GOOGLE_API_KEY": "AIza-google-env", "GEMINI_API_KEY": "AIza-gemini-env"}, "AIza-google-env"),
    ],
)
def test_chat_api_gemini_defaults_to_googles_base_with_the_key_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str], sent: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b'data: {"candidates":[{"content":{"parts":[{"text":"Bonjour"}]},"finishReason":"STOP"}]}\r\n\r\n'
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=httpx.ByteStream(body))

    real = httpx.AsyncClient
    monkeypatch.setattr(httpx, "AsyncClient", lambda **kwargs: real(transport=httpx.MockTransport(answer), **kwargs))

    assert main(["chat", "hi", "--api", "gemini", "--assembled"]) == 0

    assert json.loads(capsys.readouterr().out)["text"] == "Bonjour"
    (request,) = seen
    assert str(request.url) == f"{GEMINI_BASE_URL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == sent
    assert "authorization" not in request.headers


def test_chat_api_gemini_without_a_key_names_the_variables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "hi", "--api", "gemini"]) == 2
    assert "set LLM_STREAM_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- replay, emulate, help


def test_replay_format_gemini_reads_a_gemini_stream_as_detection_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stream = tmp_path / "thinking-tool.sse"
    stream.write_bytes(GEMINI_PROFILES["thinking-tool"].build(ScriptOptions(model="gemini-3-pro-preview")).body)

    outputs = []
    for argv in (["--format", "gemini"], []):
        assert main(["replay", "--json", *argv, str(stream)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    chunks = [json.loads(line) for line in outputs[0].splitlines()]
    (call,) = [c["block"] for c in chunks if c["type"] == "block-end" and c["block"]["type"] == "tool-call"]
    assert call == {"type": "tool-call", "id": "gemini-made-0", "name": "get_weather",
                    "arguments": '{"city":"Paris"}', "signature": SIGNATURE}
    assert chunks[-1]["reason"]["kind"] == "tool-calls"


@pytest.mark.server
def test_emulate_serves_gemini_to_chat_api_gemini(capsys: pytest.CaptureFixture[str]) -> None:
    command = [sys.executable, "-m", "pipeline.cli", "emulate", "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        base_url = line.split("base_url ", 1)[1].split(" ", 1)[0]
        code = main(["chat", "hi", "--api", "gemini", "--base-url", base_url, "--model", "emulator-gemini-clean-tool",
                     "--assembled"])
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert f"{len(GEMINI_PROFILES)} Gemini profiles" in line
    assert code == 0
    (call,) = json.loads(capsys.readouterr().out)["tool_calls"]
    assert (call["id"], call["name"]) == ("gemini-made-0", "get_weather")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--help"], ["Gemini"]),
        (["chat", "--help"], ["gemini", "GOOGLE_API_KEY", "GEMINI_API_KEY", GEMINI_BASE_URL, "streamGenerateContent"]),
        (["replay", "--help"], ["gemini"]),
    ],
)
def test_the_help_mentions_gemini(capsys: pytest.CaptureFixture[str], argv: list[str], said: list[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for words in said:
        assert words in text
