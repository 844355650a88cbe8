"""``SseSplitter`` (the event repairers' framing, ``pipeline/sanitize/_sse_events.py``): the events it cuts a body into
read the same whatever the reads, CRs included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sanitize._sse_events import SseSplitter, event_parts

EVENT = b'data: {"a":1}'


def split(body: bytes, sizes: list[int]) -> tuple[list[bytes], bytes]:
    """The whole events and the tail of ``body`` read in pieces of ``sizes`` (cycled)."""
    splitter, events, start, turn = SseSplitter(), [], 0, 0
    while start < len(body):
        size = sizes[turn % len(sizes)]
        events += splitter.feed(body[start : start + size])
        start, turn = start + size, turn + 1
    return events, splitter.tail()


def read(events: list[bytes], tail: bytes) -> tuple[list[tuple[bytes, bytes | None]], bytes]:
    """What a reader makes of them: each event's name and data (blank lines left out), and the tail after blank lines
    (which event a stray blank line is cut with changes nothing)."""
    return [event_parts(raw) for raw in events if event_parts(raw) != (b"", None)], tail.lstrip(b"\r\n")


def test_a_cr_held_back_is_released_by_a_next_read_without_a_line_end() -> None:
    # the CR may begin a CRLF, so the event waits for the next byte: a "d" shows it was a line end of its own
    for ending in (b"\n\r", b"\r\r"):
        events, tail = split(EVENT + ending + b"data: {", [1])
        assert (events, tail) == ([EVENT + ending], b"data: {")


@settings(max_examples=400)
@given(
    st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b"data:", b"data: {}", b":", b"a", b"event: x"]), max_size=24),
    st.lists(st.integers(1, 6), min_size=1, max_size=5),
)
def test_the_events_read_the_same_at_any_split(pieces: list[bytes], sizes: list[int]) -> None:
    body = b"".join(pieces)
    events, tail = split(body, sizes)
    assert b"".join(events) + tail == body
    assert read(events, tail) == read(*split(body, [max(1, len(body))]))
