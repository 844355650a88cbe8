"""Structure of the Gemini peer corpus (tests/corpus/gemini-peers): pairs, provenance, SSE framing.

No replay: the library cannot read Gemini yet; these checks keep the folder usable for the later conformance test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import GEMINI_PEER_STREAMS

CORPUS = GEMINI_PEER_STREAMS
STREAMS = sorted(CORPUS.glob("*.sse"))
FINISH_KINDS = {"stop", "tool-calls", "max-tokens", "error"}


def _expected(sse: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(sse.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return loaded


def _data_payloads(raw: str) -> list[str]:
    """The `data:` payloads of a data-only SSE body (events split on a blank line, LF or CRLF)."""
    payloads: list[str] = []
    for event in raw.replace("\r\n", "\n").split("\n\n"):
        if not event.strip():
            continue
        lines = event.split("\n")
        assert all(line.startswith("data:") for line in lines), f"not a data-only event: {event[:80]!r}"
        payloads.append("\n".join(line[5:].removeprefix(" ") for line in lines))
    return payloads


def test_the_corpus_holds_streams() -> None:
    assert len(STREAMS) >= 3


def test_every_expectation_has_its_stream() -> None:
    for expected in CORPUS.glob("*.expected.json"):
        assert expected.with_name(expected.name.removesuffix(".expected.json") + ".sse").is_file(), expected.name


@pytest.mark.parametrize("sse", STREAMS, ids=lambda p: p.stem)
def test_each_stream_has_a_gemini_expectation_with_a_finish_and_a_source(sse: Path) -> None:
    assert sse.name[:2].isdigit(), sse.name
    assert sse.name[2] == "-", sse.name
    expected = _expected(sse)
    assert expected["format"] == "gemini"
    assert expected["finish"]["kind"] in FINISH_KINDS
    assert "code" in expected["finish"]
    source = expected["source"]
    for key in ("repo", "commit", "test", "path", "reconstructed", "peer_assertion"):
        assert isinstance(source.get(key), str), key
        assert source[key], key
    assert len(source["commit"]) == 40
    assert int(source["commit"], 16) >= 0
    for call in expected.get("tool_calls", []):
        assert call["name"], call
        if call["id"] is None:
            assert "id made by the library" in expected.get("note", ""), sse.name


@pytest.mark.parametrize("sse", STREAMS, ids=lambda p: p.stem)
def test_each_stream_is_data_lines_of_json_objects(sse: Path) -> None:
    payloads = _data_payloads(sse.read_bytes().decode("utf-8"))
    assert payloads
    for payload in payloads:
        assert isinstance(json.loads(payload), dict), payload[:80]


def test_a_non_data_line_fails_the_framing_check() -> None:
    with pytest.raises(AssertionError):
        _data_payloads('event: x\ndata: {"a": 1}\n\n')
