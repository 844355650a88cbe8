"""Detection and format mismatch for Gemini (decision 0071, decision 0026, decision 0045): a first payload with
``candidates``, ``promptFeedback`` or ``usageMetadata`` and no ``type`` / ``choices`` / ``object`` is Gemini's; a
Gemini payload read as another format, and another format's read as Gemini, fail naming the format seen."""

from __future__ import annotations

import json
from typing import Any

import pytest
from corpus import FIXTURES, GEMINI_PEER_STREAMS

from operators import Code, detect_format, parse_stream
from operators.extend import Halt
from pipeline.compose import bytes_source

GEMINI = b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}\r\n\r\n'


def signals(fmt: Any, data: bytes) -> list[Any]:
    out: list[Any] = []
    parse_stream(fmt)(bytes_source([data])).subscribe(out.extend)
    return out


@pytest.mark.parametrize(
    "first",
    [
        {"candidates": [{"content": {"parts": [{"text": "x"}]}}]},
        {"promptFeedback": {"blockReason": "SAFETY"}},
        {"usageMetadata": {"promptTokenCount": 3}},
    ],
)
def test_a_gemini_first_event_is_detected_as_gemini(first: dict[str, Any]) -> None:
    assert detect_format(b"data: " + json.dumps(first).encode() + b"\r\n\r\n") == "gemini"


@pytest.mark.parametrize(
    "first",
    [
        {"choices": [{"index": 0, "delta": {"content": "x"}}], "usageMetadata": {"promptTokenCount": 1}},
        {"object": "chat.completion.chunk", "candidates": []},
        {"type": "message_start", "candidates": []},
        {"usage": {"prompt_tokens": 1}},
        {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}},
    ],
)
def test_a_payload_with_another_formats_marks_is_not_detected_as_gemini(first: dict[str, Any]) -> None:
    assert detect_format(b"data: " + json.dumps(first).encode() + b"\n\n") != "gemini"


def test_the_chat_streams_of_the_corpus_are_never_detected_as_gemini() -> None:
    streams = sorted((FIXTURES / "sse" / "real").glob("*.sse"))
    assert streams
    assert all(detect_format(path.read_bytes()) == "chat" for path in streams)


def test_every_gemini_stream_of_the_corpus_that_opens_with_a_response_is_detected_as_gemini() -> None:
    streams = [p for p in sorted(GEMINI_PEER_STREAMS.glob("*.sse")) if not p.read_bytes().startswith(b'data: {"error"')]
    assert len(streams) > 70
    assert [p.name for p in streams if detect_format(p.read_bytes()) != "gemini"] == []


@pytest.mark.parametrize(
    ("fmt", "name"), [("chat", "chat completions"), ("messages", "Messages"), ("responses", "Responses")]
)
def test_a_gemini_stream_read_as_another_format_is_refused_naming_gemini(fmt: str, name: str) -> None:
    halts = [s for s in signals(fmt, GEMINI) if isinstance(s, Halt)]
    assert len(halts) == 1
    failure = halts[0].failure
    assert failure.code == Code.MALFORMED_RESPONSE
    assert f"a Gemini stream read as {name}" in failure.message
    assert "format='gemini'" in failure.message


def test_a_chat_stream_read_as_gemini_is_refused_naming_chat() -> None:
    chat = sorted((FIXTURES / "sse" / "real").glob("*.sse"))[0].read_bytes()
    halts = [s for s in signals("gemini", chat) if isinstance(s, Halt)]
    assert len(halts) == 1
    assert "format='chat'" in halts[0].failure.message
