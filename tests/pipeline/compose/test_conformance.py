"""Conformance over the real recorded streams of the corpus' ``sse/real/`` (``corpus.py``).

For each stream the assembled text, reasoning and tool calls must equal its ``.expected.json``, and the wire-level
``finish_reason`` and ``usage`` must agree with our finish and usage through the mapping rules (map_finish_reason,
map_usage). Where the expectation records a mid-stream error or a refusal, our finish must be an error finish carrying
the provider's message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from corpus import REAL_STREAMS

import pipeline
from operators._classify_finish import map_finish_reason
from operators._usage import map_usage
from operators.wire import WireUsage

FIXTURES = REAL_STREAMS
STREAMS = sorted(FIXTURES.glob("*.sse"))

# Expectations we believe are wrong; none so far. Keys are file names, values the reason.
EXPECTED_FAILURES: dict[str, str] = {}

# In CI the corpus is always beside the clone: a missing corpus there is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    not STREAMS and not os.environ.get("CI"), reason=f"no recorded streams under {FIXTURES}"
)


def _expected(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text())
    return data


def _params() -> list[Any]:
    return [
        pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(reason=EXPECTED_FAILURES[p.name], strict=True)])
        if p.name in EXPECTED_FAILURES
        else pytest.param(p, id=p.stem)
        for p in STREAMS
    ]


@pytest.mark.parametrize("path", _params())
def test_assembled_message_matches_expected(path: Path) -> None:
    expected = _expected(path)
    message = pipeline.assemble(pipeline.collect(path))

    assert message.text == expected["text"]
    assert message.reasoning == expected["reasoning"]
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]


@pytest.mark.parametrize("path", _params())
def test_finish_and_usage_agree_with_the_wire(path: Path) -> None:
    expected = _expected(path)
    message = pipeline.assemble(pipeline.collect(path))

    error = expected.get("error")
    if error:
        assert message.finish.kind == "error"
        assert message.finish.failure is not None
        provider_message = error.get("message") if isinstance(error, dict) else str(error)
        assert provider_message
        assert provider_message[:100] in message.finish.failure.message
    elif expected.get("refusal"):
        assert message.finish.code == "REFUSAL"
        assert message.refusal == expected["refusal"]
    else:
        assert message.finish == map_finish_reason(expected["finish_reason"])

    if expected["usage"] is None:
        assert message.usage is None
    else:
        wire = msgspec.convert(expected["usage"], WireUsage)
        assert message.usage == map_usage(wire)


def test_every_stream_has_an_expectation() -> None:
    assert len(STREAMS) >= 36
    for path in STREAMS:
        assert path.with_suffix(".expected.json").exists(), path.name
