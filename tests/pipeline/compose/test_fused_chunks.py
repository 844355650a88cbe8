"""``to_chunks`` right after the default chain takes the chunks straight from its reads (``FusedChain.chunks``,
docs/decisions/0050-fast-path.md, issue 34): the same chunks and the same ends as ``to_chunks`` over the chain's
batches. The oracle is the same chain with an ordinary operator between it and ``to_chunks`` (no fusion)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
import reactivex
from corpus import (
    CLIENT_CALL_STREAMS,
    GEMINI_PEER_STREAMS,
    MESSAGES_STREAMS,
    PEER_FORMAT_STREAMS,
    PEER_STREAMS,
    REAL_STREAMS,
    RESPONSES_STREAMS,
)
from reactivex import operators as ops

import pipeline
from operators import Chunk, Code, Failure, Rule
from operators.extend import FusedChain, StreamFailure, default_chain
from scripts.fuzz_fast_path import event_reads

STREAMS = sorted(path for folder in (REAL_STREAMS, MESSAGES_STREAMS, RESPONSES_STREAMS)
                 for path in folder.rglob("*.sse"))[::9]


def run(source: Any, *, fused: bool, anomalies: bool = True, take: int | None = None) -> tuple[list[Any], str]:
    """The chunks, and how the stream ended ("completed" or the error's type)."""
    batches = pipeline.translate_batches(source)
    assert isinstance(batches, FusedChain)
    if not fused:
        batches = batches.pipe(ops.map(lambda batch: batch))
    chunks = pipeline.to_chunks(anomalies=anomalies)(batches)
    if take is not None:
        chunks = chunks.pipe(ops.take(take))
    out: list[Any] = []
    ended: list[str] = []
    chunks.subscribe(out.append, lambda error: ended.append(type(error).__name__), lambda: ended.append("completed"))
    return out, ended[0] if ended else "open"


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("path", STREAMS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_the_fused_chunks_are_to_chunks_over_the_batches(path: Any) -> None:
    data = path.read_bytes()
    for size in (5, 64, 4096):
        for anomalies in (False, True):
            pieces = cut(data, size)
            assert run(pieces, fused=True, anomalies=anomalies) == run(pieces, fused=False, anomalies=anomalies)


EVERY_STREAM = sorted(path for folder in (REAL_STREAMS, PEER_STREAMS, MESSAGES_STREAMS, RESPONSES_STREAMS,
                                         PEER_FORMAT_STREAMS, GEMINI_PEER_STREAMS, CLIENT_CALL_STREAMS)
                      for path in folder.rglob("*.sse"))


@pytest.mark.slow
@pytest.mark.parametrize("path", EVERY_STREAM, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_collect_without_anomalies_keeps_exactly_the_rule_chains_chunks(path: Any) -> None:
    """``collect`` hands a read the fast path took whole to ``list.extend`` unfiltered (its delta chunks only): it
    must keep exactly what the rule chain's ``to_chunks`` keeps, no anomaly and nothing after the finish."""
    data = path.read_bytes()
    for pieces in (cut(data, 64), cut(data, 4096), event_reads(data)):
        fast = pipeline.collect(pieces)
        general = pipeline.collect(pieces, rules=pipeline.protocol_rules())
        assert fast == general


def failing(pieces: list[bytes], error: Exception) -> Iterator[bytes]:
    yield from pieces
    raise error


@pytest.mark.parametrize("error", [StreamFailure(Failure(Code.ABORTED, "cut")), RuntimeError("the transport broke")])
def test_a_source_failing_mid_stream_ends_as_to_chunks_ends_it(error: Exception) -> None:
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    pieces = cut(data, 64)[:3]
    fused = run(failing(pieces, error), fused=True)
    assert fused == run(failing(pieces, error), fused=False)
    assert fused[1] == "completed"
    assert fused[0][-1].type == "finish"


def test_an_observable_source_ending_without_a_finish_ends_as_to_chunks_ends_it() -> None:
    data = sorted(MESSAGES_STREAMS.rglob("*.sse"))[0].read_bytes()
    pieces = cut(data, 64)[:2]
    for fused in (True, False):
        out, ended = run(reactivex.from_iterable(pieces), fused=fused)
        assert ended == "completed", fused
        assert out[-1].type == "finish", fused
    assert run(reactivex.from_iterable(pieces), fused=True) == run(reactivex.from_iterable(pieces), fused=False)


def test_an_operator_after_the_fused_chunks_may_stop_the_stream_early() -> None:
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    for size in (1, 64):
        fused = run(cut(data, size), fused=True, take=2)
        assert fused == run(cut(data, size), fused=False, take=2)
        assert len(fused[0]) == 2
        assert fused[1] == "completed"


def test_a_custom_chain_is_not_fused_and_keeps_its_rules() -> None:
    seen: list[int] = []
    counted: Rule = ops.do_action(lambda batch: seen.append(len(batch)))
    rules = [*pipeline.protocol_rules(), counted]
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    batches = pipeline.translate_batches(cut(data, 64), rules=rules)
    assert not isinstance(batches, FusedChain)
    chunks: list[Chunk] = pipeline.collect(cut(data, 64), rules=rules)
    assert seen
    assert chunks == pipeline.collect(cut(data, 64))


def test_the_default_chain_still_gives_batches_to_any_other_operator() -> None:
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    batches: list[Any] = []
    default_chain("chat")(reactivex.from_iterable(cut(data, 64))).subscribe(batches.append)
    assert batches
    assert all(isinstance(batch, list) for batch in batches)


def test_a_rule_raising_after_close_on_done_ends_as_to_chunks_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from operators._classify_finish import _ClassifyFinish

    calls: list[int] = []

    def broken(self: Any, batch: Any, out: list[Any]) -> None:
        calls.append(1)
        if len(calls) % 3 == 0:  # the third batch of each run
            raise RuntimeError("a rule broke")
        out.extend(batch)

    monkeypatch.setattr(_ClassifyFinish, "on_batch", broken)
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    fused = run(cut(data, 64), fused=True)
    assert fused == run(cut(data, 64), fused=False)
    assert fused[1] == "completed"
    assert "a rule broke" in fused[0][-1].reason.failure.message


class _Unreadable:
    def __iter__(self) -> Iterator[bytes]:
        raise OSError("the source cannot be read")


def _endless(data: bytes, closed: list[bool]) -> Iterator[bytes]:
    try:
        yield from cut(data, 64)
        while True:
            yield b": more\n\n"
    finally:
        closed.append(True)


def test_collect_and_translate_over_a_byte_source_end_as_the_observable_chain_ends() -> None:
    """``collect`` sends the chunks straight to its list and the default chain runs ``bytes_source`` with plain
    callbacks (``PieceSource.feed``): the same chunks as the rule chain's through reactivex's observers,
    for a source failing mid-way, one that cannot be read at all, and an endless one (stopped at the finish,
    closed)."""
    data = sorted(REAL_STREAMS.glob("*.sse"))[0].read_bytes()
    sources: dict[str, Callable[[], Iterable[bytes]]] = {
        "failing": lambda: failing(cut(data, 64)[:3], RuntimeError("the transport broke")),
        "unreadable": _Unreadable,
        "whole": lambda: cut(data, 64),
    }
    for name, make in sources.items():
        expected = pipeline.collect(make(), anomalies=True, rules=pipeline.protocol_rules())  # reactivex throughout
        assert run(make(), fused=False) == (expected, "completed"), name
        assert pipeline.collect(make(), anomalies=True) == expected, name
        translated: list[Chunk] = []
        pipeline.translate(make(), anomalies=True).subscribe(translated.append)
        assert translated == expected, name
    closed: list[bool] = []
    chunks = pipeline.collect(_endless(data, closed))
    assert chunks == pipeline.collect(cut(data, 64))
    assert closed == [True]
