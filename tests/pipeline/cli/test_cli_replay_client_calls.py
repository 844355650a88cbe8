"""``llm-stream replay`` of the held-out Responses streams whose items the client runs (``tests/corpus/client-calls``,
decision 0072): each gives the calls, kinds, arguments and finish its expectation names, detected or named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import CLIENT_CALL_STREAMS

from pipeline.cli import main

STREAMS = sorted(CLIENT_CALL_STREAMS.glob("*.sse"))


def _expected(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return data


def test_the_held_out_set_holds_each_case_of_the_issue() -> None:
    names = [path.stem for path in STREAMS]
    assert len(names) == 10
    for case in ("parallel-custom-calls-interleaved-input", "identity-blanked-on-done", "cut-inside-input",
                 "never-identified", "local-shell-call"):
        assert any(case in name for name in names), case
    assert [p.name for p in STREAMS if not p.with_suffix(".expected.json").is_file()] == []


@pytest.mark.parametrize("path", STREAMS, ids=lambda path: path.stem)
@pytest.mark.parametrize("named", [False, True], ids=["detected", "named"])
def test_replay_gives_each_streams_calls_arguments_and_finish(
    path: Path, named: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _expected(path)
    argv = ["replay", "--assembled", *(["--format", "responses"] if named else []), str(path)]

    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)

    assert got["text"] == expected["text"]
    assert got["tool_calls"] == expected["tool_calls"]
    assert {"kind": got["finish"]["kind"], "code": got["finish"]["code"]} == expected["finish"]


def test_replay_json_carries_the_kind_on_every_fragment_and_block_end_of_a_custom_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = CLIENT_CALL_STREAMS / "01-parallel-custom-calls-interleaved-input.sse"

    assert main(["replay", "--json", str(path)]) == 0
    chunks = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    deltas = [c for c in chunks if c["type"] == "tool-call-delta"]
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert deltas
    assert all(c["kind"] == "custom" for c in deltas)
    assert [(b["id"], b["kind"]) for b in ends] == [("call_sql_a", "custom"), ("call_py_b", "custom")]
    assert "".join(c["arguments_delta"] for c in deltas if c["index"] == 1) == "print(sum(range(10)))\n"


def test_replay_text_names_the_kind_of_a_call_that_is_not_a_function(capsys: pytest.CaptureFixture[str]) -> None:
    path = CLIENT_CALL_STREAMS / "05-local-shell-call.sse"

    assert main(["replay", "--color", "never", str(path)]) == 0
    out = capsys.readouterr().out

    assert "tool call call_ls_5 local_shell(" in out
    assert out.rstrip().splitlines()[-2].endswith("· local_shell")
