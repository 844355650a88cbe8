"""``llm-stream replay --format chat`` of a chunk whose usage is in other keys than OpenAI's (decision 0046): the
counts it can read, never a false 0/0; none, with the anomaly named, for keys it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main

HEAD = 'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


def _file(tmp_path: Path, usage: str) -> Path:
    path = tmp_path / "usage.sse"
    tail = '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":' + usage + "}"
    path.write_text(f"{HEAD}data: {tail}\n\ndata: [DONE]\n\n")
    return path


def test_anthropic_keys_in_a_chat_chunk_are_the_counts_they_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--format", "chat", "--assembled", str(_file(tmp_path, '{"input_tokens": 12, '
                                                                        '"output_tokens": 34}'))]) == 0
    message = json.loads(capsys.readouterr().out)

    assert message["usage"] == {"input_tokens": 12, "output_tokens": 34, "total_tokens": 46}


def test_unknown_usage_keys_report_no_counts_and_name_the_anomaly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, '{"tokens": 46}')
    assert main(["replay", "--format", "chat", "--assembled", str(path)]) == 0
    message = json.loads(capsys.readouterr().out)
    assert main(["replay", "--format", "chat", "--color", "never", str(path)]) == 0
    shown = capsys.readouterr().out

    assert message["usage"] is None
    assert "unknown-usage usage keys tokens hold no count" in shown
    assert "usage " not in shown.split("finish")[-1]  # the summary shows no usage line, not "usage 0 0"
    assert "input 0" not in shown


def test_a_usage_with_one_count_is_rendered_with_that_count_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, '{"output_tokens": 34}')
    assert main(["replay", "--format", "chat", "--color", "never", str(path)]) == 0
    shown = capsys.readouterr().out

    assert "usage        output 34" in shown
    assert 'usage {"output_tokens": 34}' in shown
    assert "input" not in shown
