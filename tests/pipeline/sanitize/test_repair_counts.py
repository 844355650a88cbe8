"""The Messages and Responses repairers count what they repaired, by kind, as the chat repairer does: the proxy's
access log and ``llm_stream_proxy_repairs_total{kind}`` read ``repairs`` (docs/proxy.md). A stream the SDK reads
right counts nothing; the counts do not depend on how the body is split."""

from __future__ import annotations

import pytest
from repair_helpers import SPLITS, body_of, repaired

from pipeline.emulator.messages import MESSAGES_PROFILES
from pipeline.emulator.responses import RESPONSES_PROFILES
from pipeline.sanitize import MessagesRepair, ResponsesRepair

KEY = "sk-test-counted-key-123456"


def _messages(name: str) -> bytes:
    return body_of(MESSAGES_PROFILES, name)


def _responses(name: str) -> bytes:
    return body_of(RESPONSES_PROFILES, name)


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize(("make", "body"), [
    (MessagesRepair, _messages("clean-tool")),
    (MessagesRepair, _messages("thinking-tool")),
    (ResponsesRepair, _responses("clean-tool")),
    (ResponsesRepair, _responses("reasoning-tool")),
])
def test_a_stream_read_right_counts_no_repair(make: type, body: bytes, size: int) -> None:
    _, repair = repaired(make, body, size)
    assert repair.repairs == {}


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize(("make", "body", "expected"), [
    (MessagesRepair, _messages("seed-bug"), {"block-restarted": 2}),
    (MessagesRepair, _messages("late-block-id"), {"block-restarted": 1, "tool-call-identity": 1}),
    (MessagesRepair, _messages("trailing-done"), {"done-dropped": 1}),
    (ResponsesRepair, _responses("late-id"), {"tool-call-identity": 1}),
])
def test_each_repair_is_counted_by_kind_whatever_the_split(make: type, body: bytes, expected: dict[str, int],
                                                            size: int) -> None:
    _, repair = repaired(make, body, size)
    assert dict(repair.repairs) == expected


def test_a_data_only_messages_stream_counts_each_event_it_named() -> None:
    named = _messages("clean")
    data_only = b"".join(line + b"\n" for line in named.split(b"\n")[:-1] if not line.startswith(b"event:"))
    _, repair = repaired(MessagesRepair, data_only, 64)
    assert repair.repairs["framing"] == named.count(b"\nevent: ") + named.startswith(b"event: ")


def test_rotated_responses_item_ids_are_counted_as_item_identity() -> None:
    _, repair = repaired(ResponsesRepair, _responses("rotated-ids"), 64)
    assert repair.repairs["item-identity"] > 0
    assert set(repair.repairs) <= {"item-identity", "response-identity"}


def test_a_changed_response_id_is_counted_as_response_identity() -> None:
    raw = _responses("clean")
    at = raw.index(b"event: response.completed")
    _, repair = repaired(ResponsesRepair, raw[:at] + raw[at:].replace(b'"id":"resp_emu', b'"id":"resp_other', 1), 64)
    assert dict(repair.repairs) == {"response-identity": 1}


@pytest.mark.parametrize(("make", "body"), [(MessagesRepair, _messages("clean")),
                                            (ResponsesRepair, _responses("clean"))])
def test_an_echoed_key_is_counted_as_key_redacted(make: type, body: bytes) -> None:
    echoed = body.replace(b"Paris", KEY.encode(), 1) if b"Paris" in body else body.replace(b"Hello", KEY.encode(), 1)
    assert KEY.encode() in echoed
    out, repair = repaired(lambda: make(api_key=KEY), echoed, 64)
    assert KEY.encode() not in out
    assert repair.repairs["key-redacted"] >= 1
