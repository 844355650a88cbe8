"""The fuzz oracle's usage check covers Messages (issue 21: "usage never decreases to an invalid value"): each count
of the merged usage is the last valid one sent, whatever came after it; and the parser now holds to it for a later
string, list or object, which used to erase the earlier count."""

from __future__ import annotations

import json
from typing import Any

import pytest

import operators.messages._stage as parse_messages
from operators import Chunk, Finish, FinishReason, Limits, Usage, UsageChunk
from scripts import fuzz, fuzz_reference


def checked(data: bytes) -> list[Chunk]:
    """The pipeline's chunks for ``data`` (Messages, default limits), held against the input by the oracle; the
    response must succeed, or the oracle would have nothing to check."""
    out = fuzz.run_translate(data, Limits(), "messages")
    finish = out[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.failure is None
    fuzz_reference.check_reference(data, out, "messages")
    return out


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def messages(later: object) -> bytes:
    """A text answer whose ``message_start`` counts 10 in and 5 out, then a ``message_delta`` counting ``later``."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "c",
               "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 4}}
    return b"".join([
        _event("message_start", {"type": "message_start", "message": message}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
        _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": "hi"}}),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                 "usage": {"input_tokens": later, "output_tokens": later,
                                           "cache_read_input_tokens": later}}),
        _event("message_stop", {"type": "message_stop"}),
    ])


@pytest.mark.parametrize("later", ["x", [1], {"n": 1}, -3, 1.5, 1e30, None, True])
def test_a_later_invalid_messages_count_keeps_every_earlier_valid_one(later: object) -> None:
    data = messages(later)

    assert fuzz_reference.last_counts(data, "messages") == {"input_tokens": 10, "output_tokens": 5,
                                                            "cache_read_tokens": 4}
    (usage,) = [chunk.usage for chunk in checked(data) if isinstance(chunk, UsageChunk)]
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (10, 5, 4)
    fuzz.check_messages(data)  # and the target as the fuzzer runs it


def test_a_later_valid_messages_count_replaces_the_earlier_one() -> None:
    assert fuzz_reference.last_counts(messages(7), "messages") == {"input_tokens": 7, "output_tokens": 7,
                                                                   "cache_read_tokens": 7}
    checked(messages(7))


def test_the_oracle_refuses_a_messages_usage_that_lost_a_valid_count() -> None:
    erased: list[Chunk] = [UsageChunk(Usage(input_tokens=10, output_tokens=None, cache_read_tokens=4)),
                           Finish(FinishReason("stop"))]

    with pytest.raises(fuzz.OracleFailure, match="output_tokens=None, not the last valid count sent"):
        fuzz_reference.check_reference(messages("x"), erased, "messages")


def test_the_oracle_catches_the_old_merge_that_let_a_string_erase_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    def old_merge(merged: dict[str, Any], usage: object) -> bool:  # before issue 21's fix: numbers only were checked
        if not isinstance(usage, dict):
            return False
        for key, value in usage.items():
            if value is None or (isinstance(value, int | float) and not fuzz_reference.count(value)
                                 and fuzz_reference.count(merged.get(key)) is not None):
                continue
            merged[key] = value
        return True

    monkeypatch.setattr(parse_messages, "merge_into", old_merge)
    with pytest.raises(fuzz.OracleFailure, match="no usage came out"):
        checked(messages("x"))
    with pytest.raises(fuzz.OracleFailure, match="output_tokens=None, not the last valid count sent"):
        checked(messages("x").replace(b'"input_tokens": "x"', b'"input_tokens": 3'))


def test_the_responses_oracle_holds_the_terminal_output_count() -> None:
    answered = []
    for seed in fuzz.seed_files("responses"):
        data = seed.read_bytes()
        out = fuzz.run_translate(data, Limits(), "responses")
        if fuzz_reference.last_counts(data, "responses") and isinstance(out[-1], Finish) and not out[-1].reason.failure:
            answered.append((data, out))
    assert len(answered) >= 10  # the recorded Responses streams that finish with a usage
    for data, out in answered:
        fuzz_reference.check_reference(data, out, "responses")
        erased = [UsageChunk(Usage(input_tokens=1, output_tokens=None)), out[-1]]
        with pytest.raises(fuzz.OracleFailure, match="not the last valid count sent"):
            fuzz_reference.check_reference(data, erased, "responses")
