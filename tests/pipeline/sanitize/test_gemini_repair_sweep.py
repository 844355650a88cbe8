"""Every Gemini peer stream (tests/corpus/gemini-peers) through ``GeminiRepair``: one that ends with a finishReason or a
prompt block (and has no nameless call: none does) passes byte for byte at every read size, and so does one that ends
with the upstream's own in-band error; one that ends before any finish gets STREAM_CLOSED's in-band error after its
own bytes. The finish is the one the corpus expects. The slow case cuts each small stream at every byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import GEMINI_PEER_STREAMS
from repair_helpers import SPLITS, repaired

from operators import Code
from operators.extend import classify_inband_error
from pipeline.sanitize import GeminiRepair
from pipeline.sanitize._event_repair import EventRepair

STREAMS = sorted(GEMINI_PEER_STREAMS.glob("*.sse"))


def expected(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return found


def ends_in_its_own_error(body: bytes) -> bool:
    return b'data: {"error"' in body or b'data:{"error"' in body


OUTCOMES = (Code.EMPTY_RESPONSE, Code.UNSUPPORTED_OUTPUT)
"""The library's outcome for a STOP it carries nothing of (decision 0071: an empty answer, an answer of only files);
the SDK reads those bytes itself, so the repairer forwards them and reads a ``stop`` (the strict policy aside)."""


def check(path: Path, body: bytes, out: bytes, repair: EventRepair) -> None:
    finish = expected(path)["finish"]
    assert repair.finish is not None
    if finish["code"] in OUTCOMES:
        assert (repair.finish.reason.kind, out) == ("stop", body)
        return
    assert repair.finish.reason.kind == finish["kind"]
    if ends_in_its_own_error(body):  # classified as the library classifies it (by status once Google's is read)
        error = json.loads(body.rstrip().rsplit(b"\n", 1)[-1].removeprefix(b"data:"))["error"]
        assert repair.failure == classify_inband_error(error)
    elif finish["code"] is not None:
        assert repair.finish.reason.code == finish["code"]
    if finish["code"] == Code.STREAM_CLOSED:
        assert out.startswith(body)
        last = json.loads(out[len(body) :].strip().removeprefix(b"data: "))
        assert last["error"]["message"].startswith("STREAM_CLOSED: ")
        assert repair.failure is not None
    else:
        assert out == body  # the SDK reads these right: nothing changes
        assert (repair.failure is not None) == ends_in_its_own_error(body)  # a finish the SDK reports is no failure


def test_the_corpus_is_there() -> None:
    assert len(STREAMS) >= 79


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("path", STREAMS, ids=lambda path: path.name[:2])
def test_a_peer_stream_passes_byte_for_byte_or_ends_with_the_cut_error(path: Path, size: int) -> None:
    body = path.read_bytes()
    out, repair = repaired(GeminiRepair, body, size)
    check(path, body, out, repair)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in STREAMS if p.stat().st_size < 8192], ids=lambda path: path.name[:2])
def test_a_peer_stream_cut_into_two_reads_anywhere_gives_the_same_bytes(path: Path) -> None:
    body = path.read_bytes()
    whole, _ = repaired(GeminiRepair, body, len(body))
    for cut in range(1, len(body)):
        repair = GeminiRepair()
        assert repair.feed(body[:cut]) + repair.feed(body[cut:]) + repair.close() == whole, cut
        check(path, body, whole, repair)
