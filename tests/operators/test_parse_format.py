"""``parse_stream`` / ``detect_format``: the format named by the first event, and detection never changing what the
chat parser emits."""

from __future__ import annotations

from pathlib import Path

import pytest
import reactivex as rx
from corpus import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from operators import detect_format, parse_sse, parse_stream

SHARED = FIXTURES
CHAT = sorted((SHARED / "sse" / "real").glob("*.sse"))
MESSAGES = sorted((SHARED / "messages").glob("*.sse"))
RESPONSES = sorted((SHARED / "responses").glob("*.sse"))


def signals(operator: object, pieces: list[bytes]) -> list[object]:
    out: list[object] = []
    rx.from_iterable(pieces).pipe(operator).subscribe(on_next=out.extend)  # type: ignore[call-overload]
    return out


@pytest.mark.parametrize("path", CHAT, ids=[p.stem for p in CHAT])
def test_every_real_chat_completions_stream_is_detected_as_chat(path: Path) -> None:
    assert detect_format(path.read_bytes()) == "chat"


@pytest.mark.parametrize("path", MESSAGES, ids=[p.stem for p in MESSAGES])
def test_every_messages_stream_is_detected_as_messages(path: Path) -> None:
    assert detect_format(path.read_bytes()) == "messages"


@pytest.mark.parametrize("path", RESPONSES, ids=[p.stem for p in RESPONSES])
def test_every_responses_stream_is_detected_as_responses(path: Path) -> None:
    assert detect_format(path.read_bytes()) == "responses"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"event: message_start\n", "messages"),
        (b'data:{"type":"content_block_delta","index":0}\n', "messages"),
        (b"event: response.created\n", "responses"),
        (b'data: {"type":"response.output_text.delta"}\n', "responses"),
        (b'data: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n', "messages"),
        (b'data: {"type":"error","code":"server_error","message":"busy"}\n', "responses"),
        (b'data: {"error":{"message":"no"}}\n', "chat"),
        (b'event: error\ndata: {"error":{"message":"no"}}\n', "chat"),
        (b'data: {"id":"x","choices":[]}\n', "chat"),
        (b"data: [DONE]\n", "chat"),
        (b"data: {not json\n", "chat"),
        (b": keepalive\n\n", None),
        (b"event: message_sta", None),  # an incomplete line says nothing yet
        (b"", None),
    ],
)
def test_the_first_telling_line_names_the_format(head: bytes, expected: str | None) -> None:
    assert detect_format(head) == expected


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(CHAT), st.lists(st.integers(1, 300), max_size=30))
def test_detection_emits_exactly_what_parse_sse_emits_for_any_split_of_a_chat_stream(
    path: Path, sizes: list[int]
) -> None:
    data = path.read_bytes()
    pieces, start = [], 0
    for size in sizes:
        pieces.append(data[start : start + size])
        start += size
    pieces.append(data[start:])
    assert signals(parse_stream(), pieces) == signals(parse_sse(), pieces)


def test_a_stream_that_never_names_its_format_is_read_as_chat() -> None:
    assert signals(parse_stream(), [b": only comments\n\n"]) == signals(parse_sse(), [b": only comments\n\n"])


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="format is one of"):
        parse_stream("bedrock")  # type: ignore[arg-type]
