"""The composition: byte sources, the batch boundary, and the public chunk stream as the extension point."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex as rx
from reactivex import operators as ops

import pipeline
from operators import Anomaly, BlockStart, Chunk, Code, Finish, TextDelta, ToolCallDelta

TEXT = b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
DEEP = b'data: {"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n\n"  # deeper than the decoder allows
DONE = b"data: [DONE]\n\n"
SEED = pipeline.example_path().read_bytes()


def split(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)]


@pytest.mark.slow
@pytest.mark.parametrize("size", [len(TEXT + DEEP + DONE), len(TEXT) + 10, 4096, 7])
def test_a_payload_that_fails_to_decode_keeps_what_the_same_read_decoded_before_it(size: int) -> None:
    chunks = pipeline.collect(split(TEXT + DEEP + DONE, size))
    assert chunks[:2] == [BlockStart(0, "text"), TextDelta(0, "hi")]
    assert isinstance(chunks[-1], Finish)
    assert chunks[-1].reason.kind == "error"
    assert chunks == pipeline.collect(split(TEXT + DEEP + DONE, 1024))  # the read size never changes the result


def test_collect_inside_a_reactivex_callback_returns_the_chunks() -> None:
    lengths: list[int] = []
    rx.from_iterable([SEED, SEED]).subscribe(lambda data: lengths.append(len(pipeline.collect(data))))
    assert lengths == [len(pipeline.collect(SEED))] * 2


def test_bytes_source_stops_reading_at_done_even_inside_a_reactivex_callback() -> None:
    pulled: list[bytes] = []

    def reads() -> Any:
        for piece in [TEXT, DONE, b"data: never read\n\n", b"data: nor this\n\n"]:
            pulled.append(piece)
            yield piece

    results: list[list[Chunk]] = []
    rx.of(1).subscribe(lambda _: results.append(pipeline.collect(reads())))
    last = results[0][-1]
    assert isinstance(last, Finish)
    assert last.reason.kind == "stop"
    assert pulled == [TEXT, DONE]


def is_streamed_text(chunk: Chunk) -> bool:
    return isinstance(chunk, TextDelta | ToolCallDelta)


def text_of(chunk: Chunk) -> str:
    if isinstance(chunk, TextDelta):
        return chunk.text
    return chunk.arguments_delta if isinstance(chunk, ToolCallDelta) else ""


def test_ordinary_reactivex_operators_compose_after_translate() -> None:
    texts: list[str] = []
    pipeline.translate(SEED).pipe(
        ops.filter(is_streamed_text),
        ops.map(text_of),
        ops.take_while(lambda text: text != "never"),
    ).subscribe(on_next=texts.append)
    expected = [c for c in pipeline.collect(SEED) if isinstance(c, TextDelta | ToolCallDelta)]
    assert texts == [c.text if isinstance(c, TextDelta) else c.arguments_delta for c in expected]


def test_state_after_translate_lives_in_rx_defer_so_each_subscription_starts_fresh() -> None:
    def numbered() -> rx.Observable[tuple[int, Chunk]]:
        counter = iter(range(1_000_000))

        def number(chunk: Chunk) -> tuple[int, Chunk]:
            return next(counter), chunk

        return pipeline.translate(SEED).pipe(ops.map(number))

    deferred = rx.defer(lambda _: numbered())
    first: list[tuple[int, Chunk]] = []
    second: list[tuple[int, Chunk]] = []
    deferred.subscribe(on_next=first.append)
    deferred.subscribe(on_next=second.append)
    assert first == second
    assert first[0][0] == 0


def test_take_while_after_translate_stops_at_the_finish() -> None:
    kinds: list[str] = []
    pipeline.translate(SEED, anomalies=True).pipe(
        ops.take_while(lambda chunk: not isinstance(chunk, Finish), inclusive=True),
        ops.filter(lambda chunk: not isinstance(chunk, Anomaly)),
    ).subscribe(on_next=lambda chunk: kinds.append(type(chunk).__name__))
    assert kinds[-1] == "Finish"
    assert kinds == [type(c).__name__ for c in pipeline.collect(SEED)]


def test_a_value_that_is_not_a_batch_between_rules_ends_with_an_error_naming_it() -> None:
    rules = pipeline.protocol_rules()
    rules.insert(1, ops.map(lambda batch: batch[0]))  # type: ignore[arg-type, return-value]  # refused by the types
    chunks = pipeline.collect(SEED, rules=rules)
    assert len(chunks) == 1
    assert isinstance(chunks[0], Finish)
    failure = chunks[0].reason.failure
    assert failure is not None
    assert failure.code == Code.UNKNOWN
    assert "not a batch" in failure.message
    assert "pipeline.translate()" in failure.message
