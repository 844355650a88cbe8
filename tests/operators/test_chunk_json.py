"""A chunk's JSON methods say what they return: ``to_dict()`` the JSON-ready dict, ``to_json()`` strict JSON text;
``chunk_from_dict`` and ``chunk_from_json`` read each back (a dict given to ``chunk_from_json`` warns)."""

from __future__ import annotations

import json

import pytest

import pipeline
from operators import Chunk, Failure, Finish, FinishReason, Retry, chunk_from_dict, chunk_from_json

CHUNKS: list[Chunk] = [
    *pipeline.collect(pipeline.example_path("seed-bug"), anomalies=True),
    Retry(1, 3, 250.0, Failure("RATE_LIMIT", "slow down", status=429, retry_after_ms=1500.4, should_retry=True)),
    Finish(FinishReason.error("SERVER", "über \u2028 ✓", status=503)),
]


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda chunk: chunk.type)
def test_to_json_is_the_dict_as_strict_json_text_and_reads_back(chunk: Chunk) -> None:
    text = chunk.to_json()

    assert isinstance(text, str)
    assert "\n" not in text
    assert json.loads(text) == chunk.to_dict()
    assert chunk_from_json(text) == chunk_from_dict(chunk.to_dict()) == chunk


def test_a_wait_is_whole_milliseconds_rounded_up() -> None:
    failure = Failure("RATE_LIMIT", "slow down", retry_after_ms=1500.4)

    assert failure.retry_after_ms == 1501
    assert failure.to_dict()["retry_after_ms"] == 1501
    assert Failure("RATE_LIMIT", "x", retry_after_ms=float("inf")).retry_after_ms is None
    with pytest.raises(TypeError):
        Failure("RATE_LIMIT", "x", retry_after_ms=True)


def test_chunk_from_json_given_a_dict_still_reads_it_with_a_deprecation_warning() -> None:
    chunk = CHUNKS[0]

    with pytest.warns(DeprecationWarning, match="chunk_from_dict"):
        assert chunk_from_json(chunk.to_dict()) == chunk  # type: ignore[arg-type]


def test_text_that_is_not_a_chunk_object_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a chunk"):
        chunk_from_json("[1, 2]")
