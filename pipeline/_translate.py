"""The composition: sources of bytes, the operator chain, and the facades ``translate`` and ``stream``.

``translate(source)`` returns an Observable of chunks. For bytes, a path or a plain iterable, subscribing runs
synchronously to completion on the caller's thread (no scheduler thread is involved), so
``translate(data).subscribe(on_next=out.append)`` has every chunk in ``out`` when it returns.

``stream(source)`` is the same as an async iterator. It bridges async to Rx without any scheduler: an async generator
owns a Subject, pushes each awaited read into the chain, and yields what the chain produced before it awaits the next
read, so the caller's ``async for`` paces the reads (backpressure) and leaving the loop early closes the source.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeAlias

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.subject import Subject

from operators import (
    Code,
    accumulate_arguments,
    classify_finish,
    close_on_done,
    coalesce_identity,
    parse_sse,
)
from operators._chunks import CHUNK_TYPES, Anomaly, Chunk, Finish, FinishReason
from operators._stage import Operator

__all__ = [
    "READ_SIZE",
    "ByteSource",
    "apply",
    "bytes_source",
    "collect",
    "protocol_operators",
    "stream",
    "to_chunks",
    "translate",
    "translate_batches",
]

READ_SIZE = 64 * 1024
"""Bytes per read when the source is bytes in memory or a file."""

ByteSource: TypeAlias = bytes | bytearray | memoryview | str | os.PathLike[str] | Iterable[bytes]


def protocol_operators() -> list[Operator]:
    """The rules in order: ``parse_sse -> coalesce_identity -> accumulate_arguments -> close_on_done ->
    classify_finish``. Insert a custom operator anywhere; each passes on what it does not understand."""
    return [parse_sse(), coalesce_identity(), accumulate_arguments(), close_on_done(), classify_finish()]


def _pieces(source: ByteSource) -> Callable[[], Iterator[bytes]]:
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        return lambda: (data[start : start + READ_SIZE] for start in range(0, len(data), READ_SIZE))
    if isinstance(source, str | os.PathLike):
        path = Path(source)

        def read_file() -> Iterator[bytes]:
            with path.open("rb") as handle:
                while piece := handle.read(READ_SIZE):
                    yield piece

        return read_file
    if isinstance(source, Iterable):
        iterable = source
        return lambda: iter(iterable)
    raise TypeError(
        f"translate() takes bytes, a path, or an iterable of bytes; got {type(source).__name__}. "
        "For an async iterable use pipeline.stream()."
    )


def bytes_source(source: ByteSource) -> Observable[bytes]:
    """A cold Observable of byte pieces that runs synchronously on subscribe and stops reading when disposed.

    The reading loop runs on the current thread's trampoline, so it starts only once the whole chain has subscribed:
    a stage that finishes early (``parse_sse`` at ``[DONE]``) can then dispose it, and no further piece is read.
    ``subscribe()`` still returns only when the source is exhausted or disposed.
    """
    make = _pieces(source)

    def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        disposed = False

        def stop() -> None:
            nonlocal disposed
            disposed = True

        def run(*_: Any) -> None:
            pieces = make()
            try:
                for piece in pieces:
                    observer.on_next(piece)
                    if disposed:  # checked before the next read is pulled
                        return
            except Exception as exc:  # a failing file or iterator ends the response, it does not escape
                if not disposed:
                    observer.on_error(exc)
                return
            finally:
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()
            if not disposed:
                observer.on_completed()

        scheduled = CurrentThreadScheduler.singleton().schedule(run)
        return CompositeDisposable(Disposable(stop), scheduled)

    return Observable(subscribe)


def to_chunks(*, anomalies: bool = False) -> Callable[[Observable[Any]], Observable[Chunk]]:
    """The last stage: batches to single chunks, keeping only public chunks (anomalies only when asked for), and
    guaranteeing exactly one finish, last. An error that reached this point becomes an ``UNKNOWN`` error finish."""
    keep = CHUNK_TYPES if anomalies else tuple(t for t in CHUNK_TYPES if t is not Anomaly)

    def operator(source: Observable[Any]) -> Observable[Chunk]:
        def subscribe(
            observer: abc.ObserverBase[Chunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            finished = False

            def on_next(batch: Any) -> None:
                nonlocal finished
                for item in batch:
                    if finished:
                        return
                    if type(item) in keep:
                        observer.on_next(item)
                        if type(item) is Finish:
                            finished = True
                            observer.on_completed()

            def on_error(error: Exception) -> None:
                nonlocal finished
                if finished:
                    return
                finished = True
                observer.on_next(Finish(FinishReason.error(Code.UNKNOWN, f"{type(error).__name__}: {error}")))
                observer.on_completed()

            def on_completed() -> None:
                nonlocal finished
                if finished:
                    return
                finished = True
                observer.on_next(Finish(FinishReason.error(Code.UNKNOWN, "the pipeline ended without a finish")))
                observer.on_completed()

            return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator


def apply(observable: Observable[Any], operators: Iterable[Operator]) -> Observable[Any]:
    """``observable.pipe(*operators)`` for a chain of any length."""
    for operator in operators:
        observable = operator(observable)
    return observable


def translate_batches(source: ByteSource | Observable[bytes], *extra: Operator) -> Observable[Any]:
    """The operator chain over a byte source, as batches (for composing further operators after the rules)."""
    observable = source if isinstance(source, Observable) else bytes_source(source)
    return apply(observable, [*protocol_operators(), *extra])


def translate(
    source: ByteSource | Observable[bytes],
    *,
    anomalies: bool = False,
    operators: Iterable[Operator] | None = None,
) -> Observable[Chunk]:
    """Bytes (or a path, an iterable of bytes, an Observable of bytes) to an Observable of chunks.

    ``operators`` replaces the default chain (``protocol_operators()``), for example to insert a custom operator.
    """
    observable = source if isinstance(source, Observable) else bytes_source(source)
    chain = list(operators) if operators is not None else protocol_operators()
    chunks: Observable[Chunk] = to_chunks(anomalies=anomalies)(apply(observable, chain))
    return chunks


def collect(
    source: ByteSource | Observable[bytes],
    *,
    anomalies: bool = False,
    operators: Iterable[Operator] | None = None,
) -> list[Chunk]:
    """Every chunk of a synchronous source, as a list."""
    out: list[Chunk] = []
    translate(source, anomalies=anomalies, operators=operators).subscribe(on_next=out.append)
    return out


async def _aiter_pieces(source: AsyncIterable[bytes] | ByteSource) -> AsyncGenerator[bytes, None]:
    if isinstance(source, AsyncIterable):
        async for piece in source:
            yield piece
    else:
        for piece in _pieces(source)():
            yield piece


async def stream(
    source: AsyncIterable[bytes] | ByteSource,
    *,
    anomalies: bool = False,
    operators: Iterable[Operator] | None = None,
) -> AsyncIterator[Chunk]:
    """``async for chunk in stream(source)``: the same chunks as ``translate``, read at the caller's pace.

    ``source`` is an async iterable of bytes (for example ``response.aiter_bytes()``), or anything ``translate``
    takes. Leaving the loop early disposes the chain and closes the source.
    """
    subject: Subject[bytes] = Subject()
    ready: list[Chunk] = []
    ended = False

    def on_completed() -> None:
        nonlocal ended
        ended = True

    chain = list(operators) if operators is not None else protocol_operators()
    subscription = to_chunks(anomalies=anomalies)(apply(subject, chain)).subscribe(
        on_next=ready.append, on_completed=on_completed
    )
    pieces = _aiter_pieces(source)
    try:
        try:
            async for piece in pieces:
                subject.on_next(piece)
                if ready:
                    for chunk in ready:
                        yield chunk
                    ready.clear()
                if ended:
                    break
            else:
                subject.on_completed()
        except Exception as exc:  # a failing source ends the response with a finish, it does not escape
            subject.on_error(exc)
        for chunk in ready:
            yield chunk
        ready.clear()
    finally:
        subscription.dispose()
        await pieces.aclose()
        close = getattr(source, "aclose", None)
        if close is not None:
            await close()
