"""``plain_events`` (the repairer's fast path, decision 0073) proves the same blocks plain as the test it replaced,
which counted ``\\n\\n`` and refused any ``[DONE]``: one ``\\n`` count suffices, and ``[DONE]`` inside a
``data: {`` line is text; ``plain_prefix`` stops before the first event a rule may read, and the repair's bytes
do not change."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.sanitize import ChatRepair
from pipeline.sanitize._chat_fast import plain_events, plain_prefix


def _before(block: bytes, key: bytes | None) -> int:
    """The fast path's test before 0073 (less its ``[DONE]`` clause), with its event count."""
    events = block.count(b"\n\n")
    plain = (
        block.startswith(b"data: {")
        and block.endswith(b"\n\n")
        and block.count(b"\n") == 2 * events
        and block.count(b"\n\ndata: {") == events - 1
        and b'"tool_calls"' not in block
        and b'"error"' not in block
        and block.count(b'"finish_reason"')
        == block.count(b'"finish_reason":null') + block.count(b'"finish_reason": null')
        and (key is None or key not in block)
    )
    return events if plain else 0


DELTA = b'data: {"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}\n\n'
PARTS = [DELTA % b"hi", DELTA % b"[DONE]", b"data: {\n\n", b"\n", b"\n\n", b"data: [DONE]\n\n", b": keep-alive\n\n",
         b"event: x\n", b'data: {"error":{}}\n\n', b'data: {"choices":[{"finish_reason":"stop"}]}\n\n',
         b'data: {"finish_reason": null}\n\n', b'data: {"tool_calls":[]}\n\n', b"data: {sk-secret-key}\n\n",
         b"data: {\ndata: {\n\n", b"x"]


@given(st.lists(st.sampled_from(PARTS), min_size=1, max_size=8), st.sampled_from([None, b"sk-secret-key"]))
def test_the_same_blocks_are_plain_as_before(parts: list[bytes], key: bytes | None) -> None:
    block = b"".join(parts)
    assert plain_events(block, key) == _before(block, key)


def test_done_as_text_is_plain_and_the_done_event_is_not() -> None:
    assert plain_events(DELTA % b"[DONE]", None) == 1
    assert plain_events(DELTA % b"a" + b"data: [DONE]\n\n", None) == 0


def test_the_events_before_a_finish_in_the_same_read_are_found() -> None:
    finish = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    buf = DELTA % b"a" * 3 + finish + b"data: [DONE]\n\n"
    assert plain_prefix(buf, 0, len(buf), None) == len(DELTA % b"a") * 3
    assert plain_prefix(finish + DELTA % b"a", 0, len(finish) + len(DELTA % b"a"), None) == 0
    assert plain_prefix(DELTA % b"a", 0, len(DELTA % b"a"), None) == 0  # nothing a rule reads: no cut


@given(st.integers(min_value=1, max_value=200), st.integers(min_value=1, max_value=5000))
def test_a_finish_after_many_deltas_in_one_read_repairs_as_one_event_per_read(deltas: int, size: int) -> None:
    finish = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    stream = b"".join(DELTA % b"t%d" % n for n in range(deltas)) + finish + b"data: [DONE]\n\n"
    whole, per_event = ChatRepair(), ChatRepair()
    by_reads = b"".join(whole.feed(stream[i:i + size]) for i in range(0, len(stream), size)) + whole.close()
    events = [e + b"\n\n" for e in stream.split(b"\n\n") if e]
    one_by_one = b"".join(per_event.feed(e) for e in events) + per_event.close()
    assert by_reads == one_by_one == stream
    assert whole.finish == per_event.finish
