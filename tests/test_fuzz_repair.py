"""The ``repair`` fuzz target (``scripts/fuzz_repair.py``, issue 30): its oracle catches a repairer whose bytes the
library reads differently, its mutator produces the malformations it names, and a held-out run over mutated shared
streams (the shared ones and the Gemini peer corpus) finds no disagreement in any format."""

from __future__ import annotations

import random

import pytest

from scripts import fuzz_repair
from scripts.fuzz import TARGETS
from scripts.fuzz_reference import OracleFailure
from scripts.fuzz_repair import check_repair, survey
from scripts.fuzz_repair_mutate import MUTATIONS, _events

TEXT = (b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')


def test_the_target_is_wired_into_fuzz_py() -> None:
    assert TARGETS["repair"] is check_repair


def test_the_oracle_holds_on_a_sound_stream_and_on_a_cut_one() -> None:
    check_repair(TEXT + b"data: [DONE]\n\n")
    check_repair(TEXT + b'data: {"choices":[],"usage":{"prompt_t')


def test_the_oracle_catches_a_repairer_that_completes_a_cut_event(monkeypatch: pytest.MonkeyPatch) -> None:
    def completing(body: bytes, format: str, sizes: list[int]) -> bytes:
        return body + b"\n\ndata: [DONE]\n\n"  # the defect: the fragment completed by the added terminator

    monkeypatch.setattr(fuzz_repair, "transported", completing)
    with pytest.raises(OracleFailure, match="MALFORMED_RESPONSE"):
        check_repair(TEXT + b'data: {"choices":[],"usage":{"prompt_t')


def test_the_oracle_catches_a_masked_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_repair, "transported", lambda body, format, sizes: TEXT + b"data: [DONE]\n\n")
    with pytest.raises(OracleFailure, match="STREAM_CLOSED"):
        check_repair(TEXT[: TEXT.index(b"\n\n") + 2])  # no finish, no [DONE]: the library says STREAM_CLOSED


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_changes_a_stream(name: str) -> None:
    body = (TEXT.replace(b'"index":0', b'"index":0,"id":"c1"') + b"data: [DONE]\n\n")
    changed = {MUTATIONS[name](random.Random(seed), body) != body for seed in range(20)}
    assert True in changed


def test_events_are_cut_after_each_blank_line_the_unterminated_rest_last() -> None:
    body = b"data: 1\n\ndata: 2\r\n\r\ndata: 3\r\rdata: 4" + b"A" * 65536  # a long rest: cut in one pass

    assert _events(body) == [b"data: 1\n\n", b"data: 2\r\n\r\n", b"data: 3\r\r", b"data: 4" + b"A" * 65536]
    assert _events(b"data: 1\n\n") == [b"data: 1\n\n"]
    assert _events(b"") == []


@pytest.mark.parametrize("format", ["chat", "messages", "responses", "gemini"])
def test_mutated_shared_streams_read_the_same_through_the_repairer(format: str) -> None:
    runs, _seconds, found = survey(format, 100, seed=30, out=None)
    assert runs == 100
    assert dict(found) == {}
