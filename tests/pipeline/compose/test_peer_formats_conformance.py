"""Conformance over the 65 peer-suite streams of the corpus' ``peers-formats/`` (``corpus.py``).

Each stream is replayed as its README says, through the command line a user runs: ``llm-stream replay --format F
--assembled`` for the assembled message and ``--json`` for the chunks, and compared with its ``.expected.json``:

- ``finish``: the kind, and the code unless the expectation's code is null (any error code passes);
- ``text``, ``reasoning``, ``tool_calls``: on the assembled message, or on the deltas of ``--json`` where
  ``check_deltas`` is set (a stream that fails before its end assembles nothing by design); arguments as strings, or
  as parsed JSON where the expectation holds parsed input. An error finish is compared on its finish only, unless
  ``check_deltas`` or ``compare_content`` (an error classified after a normal end keeps its blocks) is set;
- ``usage`` (only where given): the keys given; ``null`` means no usage is reported;
- ``reasoning_blocks`` (only where given): ``signature`` / ``encrypted`` / ``item_id`` of each reasoning block-end.

Beside the expectations: detection and the named format agree (or the named read refuses the stream naming the
format it is), and any read size gives the same chunks.

Every expectation records this library's current rule (``responses/18`` records decision 0045's finish since the
corpus was updated), so no case is exempted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from corpus import PEER_FORMAT_STREAMS

import pipeline
from operators import detect_format
from pipeline.cli import main

FIXTURES = PEER_FORMAT_STREAMS
STREAMS = sorted(FIXTURES.glob("*/*.sse"))

pytestmark = pytest.mark.skipif(not STREAMS and not os.environ.get("CI"), reason=f"no streams under {FIXTURES}")


def _replay(capsys: pytest.CaptureFixture[str], path: Path, fmt: str, *mode: str) -> str:
    capsys.readouterr()
    assert main(["replay", "--format", fmt, *mode, str(path)]) == 0
    return capsys.readouterr().out


def _from_deltas(lines: list[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(c["text"] for c in lines if c["type"] == "text-delta")
    reasoning = "".join(c["text"] for c in lines if c["type"] == "reasoning-delta")
    calls: dict[int, dict[str, Any]] = {}
    for chunk in lines:
        if chunk["type"] == "tool-call-delta":
            call = calls.setdefault(chunk["index"], {"id": None, "name": None, "arguments": ""})
            call["id"] = chunk.get("id") or call["id"]
            call["name"] = chunk.get("name") or call["name"]
            call["arguments"] += chunk.get("arguments_delta") or ""
    return {"text": text, "reasoning": reasoning, "tool_calls": [calls[i] for i in sorted(calls)]}


def _arguments(value: Any, like: Any) -> Any:
    return value if isinstance(like, str) else json.loads(value)


def _cases() -> list[Any]:
    return [pytest.param(path, id=f"{path.parent.name}/{path.stem}") for path in STREAMS]


def test_the_corpus_holds_the_sixty_five_streams_of_its_readme() -> None:
    assert len(STREAMS) == 65
    assert len([p for p in STREAMS if p.parent.name == "messages"]) == 32


@pytest.mark.parametrize("path", _cases())
def test_replay_agrees_with_what_the_peer_suite_asserts(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected: dict[str, Any] = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    fmt = expected["format"]
    message = json.loads(_replay(capsys, path, fmt, "--assembled"))
    lines = [json.loads(line) for line in _replay(capsys, path, fmt, "--json").splitlines() if line]

    want = expected["finish"]
    finish = message["finish"]
    assert finish["kind"] == want["kind"], finish
    if want["code"] is not None:
        assert finish["code"] == want["code"], finish

    if "usage" in expected:
        usage = message["usage"]
        if expected["usage"] is None:
            assert usage is None
        else:
            assert usage is not None
            assert {key: usage.get(key) for key in expected["usage"]} == expected["usage"]

    if "reasoning_blocks" in expected:
        ends = [c["block"] for c in lines if c["type"] == "block-end" and c["block"]["type"] == "reasoning"]
        keys = ("signature", "encrypted", "item_id")
        assert [{k: b[k] for k in keys if b.get(k) is not None} for b in ends] == expected["reasoning_blocks"]

    if want["kind"] == "error" and not expected.get("check_deltas") and not expected.get("compare_content"):
        return
    content = _from_deltas(lines) if expected.get("check_deltas") else message
    assert content["text"] == expected["text"]
    assert content["reasoning"] == expected["reasoning"]
    got_calls = [
        {"id": c["id"], "name": c["name"], "arguments": _arguments(c["arguments"], w["arguments"])}
        for c, w in zip(content["tool_calls"], expected["tool_calls"], strict=False)
    ]
    assert len(content["tool_calls"]) == len(expected["tool_calls"])
    assert got_calls == [{k: w[k] for k in ("id", "name", "arguments")} for w in expected["tool_calls"]]


def _collect(pieces: list[bytes], fmt: Any) -> list[Any]:
    return [chunk.to_dict() for chunk in pipeline.collect(pieces, format=fmt, anomalies=True)]


@pytest.mark.parametrize("path", _cases())
def test_detection_and_the_named_format_agree(path: Path) -> None:
    """Detected, each stream is read as the format it is; named, as its expectation names it. The two agree, or the
    named read refuses the stream in one line naming the format detection found (not retried)."""
    fmt = json.loads(path.with_name(path.stem + ".expected.json").read_text())["format"]
    data = path.read_bytes()
    detected, named = _collect([data], None), _collect([data], fmt)
    if detected != named:
        failure = named[-1]["reason"]["failure"]
        assert failure["code"] == "MALFORMED_RESPONSE"
        assert f"format={detect_format(data)!r}" in failure["message"]


@pytest.mark.parametrize("path", _cases())
def test_any_read_size_gives_the_same_chunks(path: Path) -> None:
    fmt = json.loads(path.with_name(path.stem + ".expected.json").read_text())["format"]
    data = path.read_bytes()
    whole = _collect([data], fmt)
    for size in (1, 7, 4096):
        assert _collect([data[i : i + size] for i in range(0, len(data), size)], fmt) == whole
