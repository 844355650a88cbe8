"""Any split of a body gives the same bytes out of ``MessagesRepair`` and ``ResponsesRepair``, with LF or CRLF line
ends, on the emulator's fault profiles and on streams that pass whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from repair_helpers import body_of, cut_at

from pipeline.emulator._messages_profiles import MESSAGES_PROFILES
from pipeline.emulator._responses_profiles import RESPONSES_PROFILES
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
