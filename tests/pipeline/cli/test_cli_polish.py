"""``llm-stream`` polish: one line and exit 2 (never a traceback) for every bad input, chat's exit 1 on an error finish,
``--version``, plurals, ``--color`` and ``FORCE_COLOR``, comments counted apart, ``--assembled`` with the failure
message, and Ctrl-C printing the partial summary (exit 130)."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pipeline import example_path
from pipeline.cli import main
from pipeline.cli._render import plural, use_color
from pipeline.emulator import Emulator

ROOT = Path(__file__).resolve().parents[3]
ENV_VARS = ("LLM_STREAM_BASE_URL", "LLM_STREAM_API_KEY", "LLM_STREAM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY",
            "DEEPSEEK_API_KEY", "FORCE_COLOR", "NO_COLOR")
COMMENTED = (
    b": keepalive\n\n"
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b": OPENROUTER PROCESSING\n\n"
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def busy_port() -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def run(argv: Sequence[str]) -> int:
    """``main(argv)``'s exit status, whether it returns it or argparse raises ``SystemExit``."""
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.sse").write_bytes(b"")
    (tmp_path / "binary.sse").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "dir").mkdir()
    return {
        "missing": str(tmp_path / "missing.sse"),
        "dir": str(tmp_path / "dir"),
        "empty": str(tmp_path / "empty.sse"),
        "binary": str(tmp_path / "binary.sse"),
    }


CHAT = ["chat", "hi", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
BAD_INPUTS: dict[str, list[str]] = {
    "replay-missing": ["replay", "{missing}"],
    "replay-dir": ["replay", "{dir}"],
    "session-check-dir": ["session", "check", "{dir}"],
    "session-repair-dir": ["session", "repair", "{dir}"],
    "session-check-missing": ["session", "check", "{missing}"],
    "session-check-binary": ["session", "check", "{binary}"],
    "emulate-port-too-big": ["emulate", "--port", "99999"],
    "emulate-port-negative": ["emulate", "--port", "-1"],
    "emulate-port-not-a-number": ["emulate", "--port", "x"],
    "emulate-unknown-host": ["emulate", "--host", "999.1.1.1", "--port", "0"],
    "chat-ftp-url": ["chat", "hi", "--base-url", "ftp://example.com/v1"],
    "chat-url-without-scheme": ["chat", "hi", "--base-url", "localhost:8808"],
    "chat-url-without-host": ["chat", "hi", "--base-url", "http://"],
    "chat-url-bad-ipv6": ["chat", "hi", "--base-url", "http://[::1"],
    "chat-url-bad-port": ["chat", "hi", "--base-url", "http://127.0.0.1:x/v1"],
    "chat-max-steps-0": [*CHAT, "--max-steps", "0"],
    "chat-max-steps-0-session": [*CHAT, "--max-steps", "0", "--session", "{empty}"],
    "chat-negative-idle-timeout": [*CHAT, "--idle-timeout", "-1"],
    "chat-negative-total-timeout": [*CHAT, "--total-timeout", "-0.5"],
    "chat-nan-timeout": [*CHAT, "--idle-timeout", "nan"],
    "chat-negative-retries": [*CHAT, "--max-retries", "-1"],
    "chat-zero-limit": [*CHAT, "--max-event-bytes", "0"],
    "chat-tools-dir": [*CHAT, "--tools", "{dir}"],
    "chat-tools-missing-json": [*CHAT, "--tools", "{missing}.json"],
    "chat-tools-binary": [*CHAT, "--tools", "{binary}"],
    "chat-session-dir": [*CHAT, "--session", "{dir}"],
    "chat-session-binary": [*CHAT, "--session", "{binary}"],
    "bad-color": ["replay", "{empty}", "--color", "sometimes"],
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_on_stderr_and_exit_2_without_a_traceback(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = files(tmp_path)
    argv = [arg.format(**paths) for arg in BAD_INPUTS[case]]

    assert run(argv) == 2

    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out == ""
    assert len([line for line in captured.err.splitlines() if line.startswith("llm-stream")]) == 1
    assert captured.err.splitlines()[-1].startswith("llm-stream")


def test_a_url_without_a_scheme_suggests_http(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["chat", "hi", "--base-url", "localhost:8808"]) == 2

    assert "did you mean 'http://localhost:8808'?" in capsys.readouterr().err


def test_a_bad_base_url_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://example.com/v1")

    assert run(["chat", "hi"]) == 2

    assert "OPENAI_BASE_URL must be an http(s) URL" in capsys.readouterr().err


@pytest.mark.server
def test_emulate_on_a_busy_port_is_one_line_and_exit_2(busy_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "emulate", "--port", str(busy_port)],
        capture_output=True, text=True, timeout=30, cwd=ROOT, check=False,
    )

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"llm-stream: cannot listen on 127.0.0.1:{busy_port}: Address already in use; pick another --port "
        "(0 picks a free one)"
    ]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert run(["--version"]) == 0

    assert capsys.readouterr().out == f"llm-stream {version('llm-stream-pipeline')}\n"


# ------------------------------------------------------------------------------------------------ exit statuses


def test_chat_exits_1_when_the_response_ends_in_an_error_finish(
    emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["chat", "hi", "--base-url", emu.base_url, "--model", "auth"]) == 1
    assert "finish: error AUTH" in capsys.readouterr().out

    assert run(["chat", "hi", "--base-url", emu.base_url, "--model", "clean"]) == 0


def test_chat_exits_1_when_the_turn_ends_in_an_error_finish(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "s.jsonl"

    assert run(["chat", "hi", "--base-url", emu.base_url, "--model", "auth", "--session", str(session)]) == 1
    assert "-- turn 1 ended: error" in capsys.readouterr().out


def test_replay_keeps_exit_0_for_an_error_finish(tmp_path: Path) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes(b'data: {"choices": [{"index": 0, "delta": {"content": "half"}}]}\n\n')

    assert run(["replay", str(path)]) == 0


def test_assembled_includes_the_failure_message(emu: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["chat", "hi", "--base-url", emu.base_url, "--model", "auth", "--assembled"]) == 1

    finish = json.loads(capsys.readouterr().out)["finish"]
    assert finish["kind"] == "error"
    assert finish["code"] == "AUTH"
    assert isinstance(finish["message"], str)
    assert finish["message"]


# ------------------------------------------------------------------------------------------------ summaries


@pytest.mark.parametrize(
    ("count", "word", "many", "expected"),
    [(0, "chunk", None, "0 chunks"), (1, "chunk", None, "1 chunk"), (2, "chunk", None, "2 chunks"),
     (1, "anomaly", "anomalies", "1 anomaly"), (3, "anomaly", "anomalies", "3 anomalies"),
     (1, "retry", "retries", "1 retry"), (0, "retry", "retries", "0 retries")],
)
def test_plural_agrees_with_the_count(count: int, word: str, many: str | None, expected: str) -> None:
    assert plural(count, word, many) == expected


def test_a_one_chunk_summary_is_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.sse"
    path.write_bytes(b"")

    assert run(["replay", str(path)]) == 2  # and says, on stderr, that the file holds no SSE event

    assert "1 chunk, 0 blocks, 0 anomalies, 0 retries; finish: error STREAM_CLOSED" in capsys.readouterr().out


def test_comment_lines_are_counted_apart_from_anomalies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "commented.sse"
    path.write_bytes(COMMENTED)

    assert run(["replay", str(path)]) == 0

    out = capsys.readouterr().out
    assert "! anomaly" not in out
    assert sum(": comment" in line for line in out.splitlines()) == 2
    assert ", 0 anomalies, 2 comments, 0 retries; finish: stop" in out


# ------------------------------------------------------------------------------------------------ colour


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("choice", "env", "tty", "expected"),
    [
        ("always", {"NO_COLOR": "1"}, False, True),
        ("never", {"FORCE_COLOR": "1"}, True, False),
        ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": "", "NO_COLOR": "1"}, True, False),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {}, True, True),
        ("auto", {}, False, False),
        ("auto", {"TERM": "dumb"}, True, False),
        ("auto", {"FORCE_COLOR": "1", "TERM": "dumb"}, False, True),
    ],
)
def test_color_precedence_is_flag_then_force_color_then_no_color_then_terminal(
    choice: str, env: dict[str, str], tty: bool, expected: bool
) -> None:
    out = _Terminal() if tty else io.StringIO()

    assert use_color(choice, out, env) is expected


@pytest.mark.parametrize(("argv", "env", "coloured"), [
    (["--color", "always"], {}, True),
    (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ([], {"FORCE_COLOR": "1"}, True),
    ([], {"NO_COLOR": "1"}, False),
    ([], {}, False),  # captured output is not a terminal
])
def test_replay_colours_as_the_flag_and_environment_say(
    argv: list[str], env: dict[str, str], coloured: bool,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert run(["replay", str(example_path("seed-bug")), *argv]) == 0

    assert ("\x1b[" in capsys.readouterr().out) is coloured


# ------------------------------------------------------------------------------------------------ Ctrl-C


def _sigint_as_default() -> None:
    """In the child before exec: SIGINT back to its default, so Python there installs its KeyboardInterrupt handler
    even when this test runs under a shell or runner that ignores SIGINT (a background job inherits SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_after(process: subprocess.Popen[str], marker: str) -> tuple[str, str]:
    """Reads stdout until ``marker`` shows, then sends SIGINT; returns all of stdout and stderr."""
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + 20
    while marker not in seen and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
    assert marker in seen, seen
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    return seen + out, err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_during_chat_prints_the_partial_summary_and_exits_130(emu: Emulator) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "chat", "hi", "--base-url", emu.base_url, "--model", "stall"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, preexec_fn=_sigint_as_default,
    )
    try:
        out, err = _interrupt_after(process, "text")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "; finish: interrupted (Ctrl-C) before the finish" in out
    assert "0 retries" in out


def wait_until_read(pipe: int, *, within: float = 60.0) -> None:
    """Until the reader has taken everything written to ``pipe`` (so it is past its imports, reading): on Linux the
    pipe's unread byte count (FIONREAD works on either end), elsewhere a fixed head start. A start-up that takes more
    than a second on a loaded machine must not turn the Ctrl-C into an interrupted import."""
    try:
        import fcntl
        import termios
    except ImportError:
        time.sleep(2.0)
        return
    deadline = time.monotonic() + within
    unread = bytearray(4)
    while time.monotonic() < deadline:
        try:
            fcntl.ioctl(pipe, termios.FIONREAD, unread)
        except OSError:
            time.sleep(2.0)
            return
        if int.from_bytes(unread, sys.byteorder) == 0:
            return
        time.sleep(0.02)


@pytest.mark.server
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_during_replay_from_stdin_prints_the_partial_summary_and_exits_130() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "replay", "-", "--assembled"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        preexec_fn=_sigint_as_default,
    )
    assert process.stdin is not None
    process.stdin.write('data: {"choices":[{"index":0,"delta":{"content":"half"}}]}\n\n')
    process.stdin.flush()
    wait_until_read(process.stdin.fileno())
    time.sleep(0.3)  # let it translate the first event (not a speed assertion: only a head start)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)

    assert process.returncode == 130, err
    assert "Traceback" not in err
    message = json.loads(out)
    assert message["text"] == "half"
    interrupted = "interrupted (Ctrl-C) before the finish"
    assert message["finish"] == {"kind": "aborted", "code": "ABORTED", "message": interrupted}
