"""``llm-stream``: replay (readable, --json, --assembled, stdin), exit statuses, chat against the emulator, and demo."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import pipeline
from operators import Anomaly, Code
from pipeline import example_path
from pipeline.cli import main
from pipeline.emulator import Emulator

SEED_BUG = example_path("seed-bug")
ENV_VARS = (
    "LLM_STREAM_BASE_URL",
    "LLM_STREAM_API_KEY",
    "LLM_STREAM_MODEL",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
)

# A response cut before any finish_reason and before [DONE]: it ends in an error finish (STREAM_CLOSED).
CUT_STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"half an ans"}}]}\n\n'
)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def lines(text: str) -> list[str]:
    return text.splitlines()


# --------------------------------------------------------------------------------------------------- replay


def test_the_bundled_example_exists() -> None:
    assert SEED_BUG.is_file()


def test_replay_prints_readable_lines_with_anomalies_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(SEED_BUG)]) == 0

    out = capsys.readouterr().out
    chunks = pipeline.collect(SEED_BUG, anomalies=True)
    anomalies = sum(isinstance(chunk, Anomaly) and chunk.kind != "comment" for chunk in chunks)
    comments = sum(isinstance(chunk, Anomaly) and chunk.kind == "comment" for chunk in chunks)
    assert anomalies > 0
    assert comments == 1
    assert sum("! anomaly" in line for line in lines(out)) == anomalies
    assert sum(": comment" in line for line in lines(out)) == comments
    assert "empty-identity" in out
    assert "▶ start" in out
    assert "■ end" in out
    assert "tool-call call_00_glob Glob" in out
    summary = f"{len(chunks)} chunks, 3 blocks, {anomalies} anomalies, 1 comment, 0 retries; finish: tool-calls"
    assert summary in out
    assert '  tool call call_00_glob Glob({"pattern": "**/*.py"})' in lines(out)
    assert '  tool call call_01_read Read({"path": "README.md"})' in lines(out)
    assert "\x1b[" not in out  # no colour when not a terminal


def test_replay_example_flag_is_the_same_as_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(SEED_BUG)]) == 0
    from_file = capsys.readouterr().out
    assert main(["replay", "--example", "seed-bug"]) == 0

    assert capsys.readouterr().out == from_file


@pytest.mark.parametrize("anomalies", [False, True])
def test_replay_json_prints_exactly_to_json_per_line(capsys: pytest.CaptureFixture[str], anomalies: bool) -> None:
    argv = ["replay", str(SEED_BUG), "--json", *(["--anomalies"] if anomalies else [])]
    assert main(argv) == 0

    out = lines(capsys.readouterr().out)
    expected = [chunk.to_dict() for chunk in pipeline.collect(SEED_BUG, anomalies=anomalies)]
    assert [json.loads(line) for line in out] == expected
    assert any(chunk["type"] == "anomaly" for chunk in expected) is anomalies


def test_replay_assembled_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(SEED_BUG), "--assembled"]) == 0

    out = capsys.readouterr().out
    assert len(lines(out)) == 1
    message = json.loads(out)
    assert set(message) == {"text", "reasoning", "tool_calls", "usage", "finish"}
    expected = pipeline.assemble(pipeline.collect(SEED_BUG)).to_dict()
    expected["finish"]["message"] = None
    assert message == expected
    assert message["text"] == "Let me look for the files."
    assert message["tool_calls"] == [
        {"id": "call_00_glob", "name": "Glob", "arguments": '{"pattern": "**/*.py"}'},
        {"id": "call_01_read", "name": "Read", "arguments": '{"path": "README.md"}'},
    ]
    assert message["finish"] == {"kind": "tool-calls", "code": None, "message": None}
    assert message["usage"]["output_tokens"] == 41


def test_json_and_assembled_are_mutually_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["replay", str(SEED_BUG), "--json", "--assembled"])

    assert caught.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_replay_dash_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(SEED_BUG.read_bytes())))

    assert main(["replay", "-", "--json"]) == 0

    out = lines(capsys.readouterr().out)
    assert [json.loads(line) for line in out] == [chunk.to_dict() for chunk in pipeline.collect(SEED_BUG)]


def test_replay_a_missing_file_exits_2_with_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope.sse"

    assert main(["replay", str(missing)]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    err = lines(captured.err)
    assert len(err) == 1
    assert err[0].startswith("llm-stream: ")
    assert str(missing) in err[0]


def test_replay_without_a_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay"]) == 2

    assert len(lines(capsys.readouterr().err)) == 1


def test_a_directory_is_an_unreadable_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["replay", str(tmp_path)]) == 2

    assert len(lines(capsys.readouterr().err)) == 1


def test_a_stream_ending_in_an_error_finish_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes(CUT_STREAM)

    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"finish: error {Code.STREAM_CLOSED}" in out

    assert main(["replay", str(path), "--assembled"]) == 0
    message = json.loads(capsys.readouterr().out)
    assert message["finish"]["kind"] == "error"
    assert message["finish"]["code"] == Code.STREAM_CLOSED
    assert message["finish"]["message"]  # the failure's message, not only its code
    assert message["text"] == "half an ans"


def test_an_empty_file_ends_in_an_error_finish_and_says_it_holds_no_sse_event(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "empty.sse"
    path.write_bytes(b"")

    assert main(["replay", str(path), "--json"]) == 2

    captured = capsys.readouterr()
    (line,) = lines(captured.out)
    finish = json.loads(line)
    assert finish["type"] == "finish"
    assert finish["reason"]["kind"] == "error"
    assert "holds no SSE event" in captured.err


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)) * 300, b"<html><body>Bad gateway</body></html>\n", b"metadata: x\n\n: data: x\n\n"],
    ids=["binary", "html", "no-data-field"],
)
def test_replay_of_bytes_with_no_sse_event_exits_2_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "not-sse.bin"
    path.write_bytes(content)

    assert main(["replay", str(path)]) == 2

    (error,) = lines(capsys.readouterr().err)
    assert error.startswith(f"llm-stream: {path} holds no SSE event")


def test_a_data_field_split_across_two_reads_is_seen(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "late.sse"
    path.write_bytes(b": " + b"x" * (pipeline.compose.READ_SIZE - 5) + b"\nda" + b'ta: {"choices": []}\n\n')

    assert main(["replay", str(path)]) == 0
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------------------------------- session


def test_session_check_of_a_torn_last_line_exits_1_naming_the_line_as_repairable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "session.jsonl"
    with pipeline.Session.open(log, fsync=False) as session:
        session.append("user/message", {"id": "u1", "role": "user", "source": {"kind": "user"},
                                        "content": [{"type": "text", "text": "hello"}]})
    with log.open("ab") as file:
        file.write(b'{"v":1,"seq":2,"ty')

    assert main(["session", "check", str(log)]) == 1

    out = capsys.readouterr().out
    assert "line 2, seq unknown: torn last line" in out
    assert f"repairable: llm-stream session repair {log}" in out
    assert main(["session", "repair", str(log)]) == 0
    capsys.readouterr()
    assert main(["session", "check", str(log)]) == 0
    assert "ok, loadable" in capsys.readouterr().out


@pytest.mark.server
def test_replay_in_a_real_subprocess() -> None:
    script = Path(sys.executable).parent / "llm-stream"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "pipeline.cli"]
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [*command, "replay", "--example", "seed-bug"],
        capture_output=True,
        text=True,
        timeout=20,
        env=env,
        cwd=Path(__file__).resolve().parents[3],
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "! anomaly" in done.stdout
    assert "finish: tool-calls" in done.stdout
    assert "tool call call_00_glob Glob" in done.stdout


# --------------------------------------------------------------------------------------------------- chat


@pytest.mark.usefixtures("no_env")
def test_chat_against_the_emulator_prints_the_assembled_message(
    capsys: pytest.CaptureFixture[str], emu: Emulator
) -> None:
    code = main(["chat", "Weather?", "--base-url", emu.base_url, "--model", "seed-bug", "--assembled"])

    assert code == 0
    out = capsys.readouterr().out
    assert len(lines(out)) == 1
    message = json.loads(out)
    assert message["finish"] == {"kind": "tool-calls", "code": None, "message": None}
    calls = message["tool_calls"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Berlin"}),
    ]
    assert [c["id"][: len("call_emuN_")] for c in calls] == ["call_emu0_", "call_emu1_"]
    assert all(len(c["id"]) > len("call_emuN_") for c in calls)


@pytest.mark.usefixtures("no_env")
def test_chat_readable_output_shows_anomalies(capsys: pytest.CaptureFixture[str], emu: Emulator) -> None:
    assert main(["chat", "Weather?", "--base-url", emu.base_url, "--model", "seed-bug"]) == 0

    out = capsys.readouterr().out
    assert "! anomaly" in out
    assert "finish: tool-calls" in out


@pytest.mark.usefixtures("no_env")
def test_chat_with_an_error_response_exits_1(capsys: pytest.CaptureFixture[str], emu: Emulator) -> None:
    assert main(["chat", "hi", "--base-url", emu.base_url, "--model", "auth", "--json"]) == 1

    (line,) = lines(capsys.readouterr().out)
    assert json.loads(line)["reason"]["failure"]["code"] == "AUTH"


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize("base_url", ["https://gateway.example.com/v1", None])
def test_chat_with_a_remote_url_and_no_key_exits_2(capsys: pytest.CaptureFixture[str], base_url: str | None) -> None:
    argv = ["chat", "hi", "--model", "m", *(["--base-url", base_url] if base_url else [])]

    assert main(argv) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    err = lines(captured.err)
    assert len(err) == 1
    assert err[0].startswith("llm-stream: ")
    assert "LLM_STREAM_API_KEY" in err[0]


@pytest.mark.usefixtures("no_env")
def test_chat_with_an_unreadable_tools_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text("{not json")

    assert main(["chat", "hi", "--base-url", "http://127.0.0.1:9/v1", "--tools", str(tools)]) == 2

    err = lines(capsys.readouterr().err)
    assert len(err) == 1
    assert str(tools) in err[0]


@pytest.mark.usefixtures("no_env")
def test_chat_offers_the_tools_file_to_the_model(
    capsys: pytest.CaptureFixture[str], emu: Emulator, tmp_path: Path
) -> None:
    schema = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(schema))
    before = len(emu.state.requests)

    assert main(["chat", "hi", "--base-url", emu.base_url, "--model", "clean-tool", "--tools", str(tools)]) == 0

    (recorded,) = emu.state.requests[before:]
    assert recorded.body["tools"] == schema
    assert "get_weather" in capsys.readouterr().out


@pytest.mark.usefixtures("no_env")
def test_chat_with_a_negative_max_retries_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "hi", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "-1"]) == 2

    err = lines(capsys.readouterr().err)
    assert len(err) == 1
    assert "max_retries" in err[0] or "max-retries" in err[0]


# --------------------------------------------------------------------------------------------------- demo


@pytest.mark.server
def test_demo_runs_and_shows_the_naive_assembler_and_a_retry(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()

    assert main(["demo"]) == 0

    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert "Globnull" in out  # the concatenating naive assembler
    assert "retry" in out
    assert "↻ retry" in out
    assert "call_00_glob" in out
    assert elapsed < 10
