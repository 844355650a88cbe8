"""Every command's ``--help`` (issue 35): where a command serves or reads streams, it names the four formats, never
chat completions alone; ``emulate --help`` says the model name picks a fault profile and is not a real model."""

from __future__ import annotations

import pytest

from pipeline.cli import main

COMMANDS = [[], ["replay"], ["demo"], ["emulate"], ["proxy"], ["chat"], ["session"]]
FORMATS = {(): "Gemini", ("replay",): "gemini", ("emulate",): "Gemini", ("proxy",): "Gemini", ("chat",): "gemini"}


def _help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv) or "llm-stream")
def test_no_help_says_chat_completions_alone(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    text = _help(capsys, argv)
    assert "OpenAI-compatible" not in text
    if "chat completions" in text.lower() or tuple(argv) in FORMATS:
        for name in ("messages", "responses", "gemini"):
            assert name in text.lower(), (argv, name)


def test_emulate_help_says_the_model_picks_a_fault_profile(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, ["emulate"])
    assert "model name picks the fault profile, not a real model" in text
    for form in ("emulator/<profile>", "emulator/messages/<profile>", "emulator/responses/<profile>",
                 "emulator-gemini-<profile>", "GET /v1/models", "x-emulator-profile"):
        assert form in text
