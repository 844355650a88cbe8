"""Conformance over the 79 Gemini streams of ``tests/corpus/gemini-peers/`` (``corpus.GEMINI_PEER_STREAMS``).

Each stream is replayed as the README says, through the command line a user runs (``llm-stream replay --format
gemini --assembled`` and ``--json``), and compared with its ``.expected.json``, in the style of
``test_peer_formats_conformance.py``:

- ``finish``: the kind, and the code unless it is null (any error code passes);
- ``text``, ``reasoning``, ``tool_calls``: on the assembled message, or on the deltas of ``--json`` where
  ``check_deltas`` is set; a call's id is the wire id exactly where the expectation gives one, else present, starting
  ``gemini-made-``, and distinct within the response; arguments as parsed JSON;
- ``usage`` (only where given): the keys given;
- ``signatures`` (where given): each ``thoughtSignature`` on the part it came on (a call's on its call, a thought
  part's on its reasoning, a text part's on a reasoning block of its own), from the parser's signals and, where the
  response completes, from its block-ends.

Beside the expectations: ``pipeline.collect(..., format="gemini")`` gives the same chunks at every read size, and
detection agrees with the named format.

Every expectation is our rule (decision 0071); where a peer asserts otherwise, its ``peer_asserts`` says what.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from corpus import GEMINI_PEER_STREAMS

import pipeline
from operators import parse_stream
from operators.extend import ReasoningEnd, ToolCallSignature
from pipeline.cli import main
from pipeline.compose import bytes_source

STREAMS = sorted(GEMINI_PEER_STREAMS.glob("*.sse"))

pytestmark = pytest.mark.skipif(
    not STREAMS and not os.environ.get("CI"), reason=f"no streams under {GEMINI_PEER_STREAMS}"
)


def _expected(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    return found


def _replay(capsys: pytest.CaptureFixture[str], path: Path, *mode: str) -> str:
    capsys.readouterr()
    assert main(["replay", "--format", "gemini", *mode, str(path)]) == 0
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


def _cases() -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in STREAMS]


def _signature_matches(given: str | None, want: dict[str, Any]) -> bool:
    if "thoughtSignature" in want:
        return bool(given == want["thoughtSignature"])
    if given is None:
        return False
    if "thoughtSignature_prefix" in want:
        return given.startswith(want["thoughtSignature_prefix"])
    digest = hashlib.sha256(given.encode()).hexdigest()
    return bool(len(given) == want["thoughtSignature_length"] and digest == want["thoughtSignature_sha256"])


def test_the_corpus_holds_the_seventy_nine_streams_of_its_readme() -> None:
    assert len(STREAMS) == 79


@pytest.mark.parametrize("path", _cases())
def test_replay_agrees_with_the_expectation(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = _expected(path)
    message = json.loads(_replay(capsys, path, "--assembled"))
    lines = [json.loads(line) for line in _replay(capsys, path, "--json").splitlines() if line]

    finish = message["finish"]
    kind, code = expected["finish"]["kind"], expected["finish"]["code"]
    assert finish["kind"] == kind, finish
    if code is not None:
        assert finish["code"] == code, finish

    if "usage" in expected:
        usage = message["usage"]
        if expected["usage"] is None:
            assert usage is None
        else:
            assert usage is not None
            assert {key: usage.get(key) for key in expected["usage"]} == expected["usage"]

    if kind == "error" and not expected.get("check_deltas"):
        return
    content = _from_deltas(lines) if expected.get("check_deltas") else message
    assert content["text"] == expected["text"]
    assert content["reasoning"] == expected["reasoning"]
    got, want = content["tool_calls"], expected["tool_calls"]
    assert [(c["name"], json.loads(c["arguments"])) for c in got] == [(w["name"], w["arguments"]) for w in want]
    for call, wanted in zip(got, want, strict=True):
        if wanted["id"] is not None:
            assert call["id"] == wanted["id"]
        else:
            assert call["id"].startswith("gemini-made-"), call
    assert len({call["id"] for call in got}) == len(got)


@pytest.mark.parametrize("path", [p for p in STREAMS if "signatures" in _expected(p)], ids=lambda p: p.stem)
def test_each_signature_stays_with_the_part_it_came_on(path: Path) -> None:
    wanted = _expected(path)["signatures"]
    signals: list[Any] = []
    parse_stream("gemini")(bytes_source([path.read_bytes()])).subscribe(signals.extend)
    on_calls = {s.wire_index: s.signature for s in signals if isinstance(s, ToolCallSignature)}
    names = [
        c.function.name
        for s in signals
        for ch in getattr(s, "choices", None) or []
        if ch.delta and ch.delta.tool_calls
        for c in ch.delta.tool_calls
    ]
    on_reasoning = [s.signature for s in signals if isinstance(s, ReasoningEnd) and s.signature is not None]
    taken: set[int] = set()
    for want in wanted:
        part = want["part"]
        if part.startswith("functionCall"):
            name = part.split()[1]
            position = next(i for i, n in enumerate(names) if n == name and i not in taken)
            taken.add(position)
            given = on_calls.get(position)
            assert (given is None) if want.get("thoughtSignature", "") is None else _signature_matches(given, want)
        else:
            assert on_reasoning, part
            assert _signature_matches(on_reasoning.pop(0), want), part
    assert on_reasoning == []

    chunks = [c.to_dict() for c in pipeline.collect([path.read_bytes()], format="gemini")]
    if chunks[-1]["reason"]["kind"] == "error":
        return  # a cut stream ends no block: the signals above are what carries them
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    signed = [b for b in ends if b.get("signature") is not None]
    assert len(signed) == sum(1 for w in wanted if w.get("thoughtSignature", "") is not None)
    for block in signed:
        if block["type"] == "reasoning" and block["text"] == "":
            assert any(not w["part"].startswith(("functionCall", "thought")) for w in wanted)


def _collect(pieces: list[bytes], fmt: Any) -> list[Any]:
    return [chunk.to_dict() for chunk in pipeline.collect(pieces, format=fmt, anomalies=True)]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_any_read_size_gives_the_same_chunks(path: Path) -> None:
    data = path.read_bytes()
    whole = _collect([data], "gemini")
    for size in (1, 7, 64, 4096):
        assert _collect([data[i : i + size] for i in range(0, len(data), size)], "gemini") == whole


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_detection_reads_each_stream_as_gemini(path: Path) -> None:
    """The first event of every stream is Gemini's, but one that opens with an in-band error: such a payload has no
    telling key and detection reads it as chat, whose parser classifies the error the same way."""
    data = path.read_bytes()
    detected, named = _collect([data], None), _collect([data], "gemini")
    if detected != named:
        assert data.startswith(b'data: {"error"')
        assert detected[-1]["reason"]["kind"] == named[-1]["reason"]["kind"] == "error"
