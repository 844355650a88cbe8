"""Any split of a body gives the same bytes out of ``MessagesRepair`` and ``ResponsesRepair``, with LF or CRLF line
ends, on the emulator's fault profiles and on streams that pass whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repair_helpers import blocks, body_of, cut_at, repaired

from pipeline.emulator.messages import MESSAGES_PROFILES
from pipeline.emulator.responses import RESPONSES_PROFILES
from pipeline.sanitize import MessagesRepair, ResponsesRepair

CASES = [
    *((MessagesRepair, MESSAGES_PROFILES, p) for p in
      ("seed-bug", "late-block-id", "never-identified", "trailing-done", "drop-mid-stream", "thinking-tool")),
    *((ResponsesRepair, RESPONSES_PROFILES, p) for p in
      ("seed-bug", "late-id", "rotated-ids", "never-identified", "drop-mid-stream", "reasoning-tool")),
]


@settings(max_examples=120, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=12),
       crlf=st.booleans())
def test_any_split_gives_the_same_bytes(case: tuple[type, object, str], cuts: list[int], crlf: bool) -> None:
    make, profiles, profile = case
    raw = body_of(profiles, profile)  # type: ignore[arg-type]
    if crlf:
        raw = raw.replace(b"\n", b"\r\n")
    whole, split = cut_at(make, raw, cuts)
    assert split == whole


_PAYLOADS = [
    b'{"type":"message_start","message":{"content":[{"type":"tool_use"}]}}',
    b'{"type":"message_start","message":null}',
    b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":null,"name":""}}',
    b'{"type":"content_block_start","index":"0","content_block":[]}',
    b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n"}}',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}',
    b'{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":null}',
    b'{"type":"message_delta","delta":"x"}',
    b'{"type":"message_stop"}',
    b'{"type":"error","error":"boom"}',
    b'{"type":"response.created","response":{"id":"r"}}',
    b'{"type":"response.created","response":[]}',
    b'{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"a"}}',
    b'{"type":"response.output_item.added","output_index":"0","item":null}',
    b'{"type":"response.output_text.delta","item_id":"b","output_index":0,"delta":"x"}',
    b'{"type":"response.output_item.done","item":{"type":"function_call","id":"a","call_id":"c","name":"n"}}',
    b'{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":5}}',
    b'{"type":"response.completed","response":{"id":"q","output":[{"id":"b"},7,{"call_id":"c"}]}}',
    b'{"type":"response.incomplete","response":{"incomplete_details":{"reason":7}}}',
    b'{"type":"response.failed","response":{"error":{"code":"server_error"}}}',
    b'{"type":"error","code":null}',
    b"[DONE]",
    b"{not json",
    b"",
]
_EVENTS = st.builds(
    lambda name, payload, end: (b"event: " + name + b"\n" if name else b"") + b"data: " + payload + end,
    st.sampled_from([b"", b"error", b"ping", b"content_block_delta", b"response.output_text.delta"]),
    st.sampled_from(_PAYLOADS),
    st.sampled_from([b"\n\n", b"\r\n\r\n", b"\n", b"\r"]),
)


@settings(max_examples=300, deadline=None)
@given(make=st.sampled_from([MessagesRepair, ResponsesRepair]), events=st.lists(_EVENTS, max_size=14),
       cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=6))
def test_any_mix_of_odd_events_ends_in_bytes_and_a_finish_never_an_exception(
    make: type, events: list[bytes], cuts: list[int]
) -> None:
    body = b"".join(events)
    whole, split = cut_at(make, body, cuts)
    assert split == whole
    repair = make()
    repair.feed(body)
    repair.close()
    assert repair.finish is not None


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0].__name__}-{case[2]}")
def test_one_event_per_read_gives_the_same_bytes_as_one_read(case: tuple[type, object, str]) -> None:
    make, profiles, profile = case
    raw = body_of(profiles, profile)  # type: ignore[arg-type]
    whole, _ = repaired(make, raw, len(raw))
    repair = make()
    out = b"".join(repair.feed(event) for event in blocks(raw)) + repair.close()
    assert out == whole
