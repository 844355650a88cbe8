"""Conformance over the 40 Messages API streams of the corpus' ``messages/`` (``corpus.py``).

For each stream the chain ``parse_messages_sse -> protocol_rules -> to_chunks`` is composed here and assembled; the
text, reasoning and tool calls must equal its ``.expected.json``, and its wire-level ``stop_reason``, merged ``usage``
and in-band ``error`` must agree with our finish and usage through the mapping of docs/formats/messages.md (written
out independently below, not borrowed from the parser).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from corpus import MESSAGES_STREAMS

from operators import Chunk, FinishReason, Usage
from operators._provider_errors import classify_inband_error
from operators.messages import parse_messages_sse
from pipeline.compose import AssistantMessage, apply, assemble, bytes_source, protocol_rules, to_chunks

FIXTURES = MESSAGES_STREAMS
STREAMS = sorted(FIXTURES.glob("*.sse"))

# Expectations we believe are wrong; none so far. Keys are file names, values the reason.
EXPECTED_FAILURES: dict[str, str] = {}

# In CI the corpus is always beside the clone: a missing corpus there is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    not STREAMS and not os.environ.get("CI"), reason=f"no Messages streams under {FIXTURES}"
)

# stop_reason -> (finish kind, error code)
FINISHES: dict[str, tuple[str, str | None]] = {
    "end_turn": ("stop", None),
    "stop_sequence": ("stop", None),
    "tool_use": ("tool-calls", None),
    "max_tokens": ("max-tokens", None),
    "refusal": ("error", "REFUSAL"),
    "pause_turn": ("error", "PAUSE_TURN"),
}


def _expected(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text())
    return data


def _chunks(pieces: list[bytes]) -> list[Chunk]:
    out: list[Chunk] = []
    to_chunks()(apply(parse_messages_sse()(bytes_source(pieces)), protocol_rules())).subscribe(out.append)
    return out


def _assembled(path: Path) -> AssistantMessage:
    return assemble(_chunks([path.read_bytes()]))


def _usage(merged: dict[str, Any] | None) -> Usage | None:
    """The merged Messages usage as disjoint counts: its input_tokens already exclude the cache."""
    if not merged:
        return None
    uncached, output = merged.get("input_tokens") or 0, merged.get("output_tokens") or 0
    reads, writes = merged.get("cache_read_input_tokens"), merged.get("cache_creation_input_tokens")
    details = merged.get("output_tokens_details") or {}
    return Usage(
        input_tokens=uncached,
        output_tokens=output,
        total_tokens=uncached + (reads or 0) + (writes or 0) + output,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        reasoning_tokens=details.get("thinking_tokens"),
    )


def _finish(expected: dict[str, Any]) -> tuple[str, str | None]:
    if expected["error"] is not None:
        error = expected["error"]
        return "error", classify_inband_error(error.get("error", error)).code
    return FINISHES[expected["stop_reason"]]


def _cases() -> list[Any]:
    return [
        pytest.param(path, id=path.stem, marks=pytest.mark.xfail(strict=True, reason=EXPECTED_FAILURES[path.name]))
        if path.name in EXPECTED_FAILURES
        else pytest.param(path, id=path.stem)
        for path in STREAMS
    ]


def test_the_corpus_holds_the_forty_streams_of_the_manifest() -> None:
    assert len(STREAMS) == 40


@pytest.mark.parametrize("path", _cases())
def test_text_reasoning_and_tool_calls_agree_with_the_expectation(path: Path) -> None:
    expected, message = _expected(path), _assembled(path)
    assert message.text == expected["text"]
    assert message.reasoning == expected["reasoning"]
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    assert calls == [{k: call[k] for k in ("id", "name", "arguments")} for call in expected["tool_calls"]]


@pytest.mark.parametrize("path", _cases())
def test_finish_and_usage_agree_through_the_mapping(path: Path) -> None:
    expected, message = _expected(path), _assembled(path)
    finish: FinishReason = message.finish
    assert (finish.kind, finish.code) == _finish(expected)
    assert message.usage == _usage(expected["usage"]["merged"])


@pytest.mark.parametrize("path", _cases())
def test_any_read_size_gives_the_same_chunks(path: Path) -> None:
    data = path.read_bytes()
    whole = _chunks([data])
    for size in (1, 7, 4096):
        assert _chunks([data[i : i + size] for i in range(0, len(data), size)]) == whole
