"""``--json`` prints strict JSON whatever numbers a gateway sends: no NaN, no Infinity, no exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import pytest
from builders import F, delta, finish, sse, tool, tools

from pipeline.cli import main


def _no_constants(name: str) -> NoReturn:
    raise AssertionError(f"{name} printed: not strict JSON")


HOSTILE_USAGE = [
    '{"choices": [], "usage": {"prompt_tokens": -1.7e308, "completion_tokens": 1,'
    ' "prompt_tokens_details": {"cached_tokens": 1.7e308, "cache_write_tokens": 1.7e308}}}',
    '{"choices": [], "usage": {"prompt_tokens": -5, "completion_tokens": 1.5, "total_tokens": -3}}',
    '{"choices": [], "usage": {"prompt_tokens": 99999999999999999999999, "completion_tokens": 1e300}}',
    '{"choices": [], "usage": {"prompt_tokens": 1e400}}',
]


@pytest.mark.parametrize("trailing", HOSTILE_USAGE, ids=["overflow-to-minus-infinity", "negative", "huge", "inf"])
@pytest.mark.parametrize("mode", ["--json", "--assembled"])
def test_every_json_line_is_strict_json_for_hostile_usage(
    trailing: str, mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostile.sse"
    path.write_bytes(sse(F, delta(content="x"), tools(tool(0, id="a", name="f", arguments="{}")),
                         finish("tool_calls"), trailing))

    assert main(["replay", str(path), mode, "--anomalies"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines
    for line in lines:
        json.loads(line, parse_constant=_no_constants)
