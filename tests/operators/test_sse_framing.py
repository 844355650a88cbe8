"""The linear SSE framing: an open line is kept as pieces and joined once when it ends, whatever the read sizes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import pipeline
from operators import Limits, TextDelta

LIMITS = Limits(max_event_bytes=4 * 1024 * 1024)


def texts(pieces: list[bytes]) -> list[str]:
    return [c.text for c in pipeline.collect(pieces, limits=LIMITS) if isinstance(c, TextDelta)]


def body(content: str, eol: bytes = b"\n", *, comment: bool = False) -> bytes:
    payload = json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}).encode()
    head = b"\xef\xbb\xbf" + (b": comment" + eol if comment else b"")
    return head + b"data: " + payload + eol + eol + b"data: [DONE]" + eol + eol


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_long_line_split_into_many_reads_is_one_event() -> None:
    content = "x" * 3_000_000
    assert texts(split(body(content), 65536)) == [content]


def test_a_crlf_split_at_a_read_boundary_of_a_long_line_is_one_line_end() -> None:
    data = body("y" * 200_000, b"\r\n")
    cut = data.index(b"\r\n") + 1
    assert texts([data[:cut], data[cut:]]) == ["y" * 200_000]


def test_a_bom_split_over_single_byte_reads_is_dropped() -> None:
    assert texts(split(body("hi", b"\r"), 1)) == ["hi"]


@settings(max_examples=60, deadline=None)
@given(
    content=st.text(min_size=1, max_size=400),
    eol=st.sampled_from([b"\n", b"\r", b"\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_any_split_of_a_stream_gives_the_chunks_of_one_read(content: str, eol: bytes, cuts: list[int]) -> None:
    data = body(content, eol, comment=True)
    points = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    whole: list[Any] = pipeline.collect([data], anomalies=True, limits=LIMITS)
    assert pipeline.collect(pieces, anomalies=True, limits=LIMITS) == whole
    assert "".join(c.text for c in whole if isinstance(c, TextDelta)) == content
