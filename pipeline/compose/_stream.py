"""``stream(source)``: the chunks of an async byte source, read at the caller's pace.

It bridges async to Rx without any scheduler: an async generator owns a Subject, pushes each awaited read into the
chain, and yields what the chain produced before it awaits the next read, so the caller's ``async for`` paces the
reads (backpressure) and leaving the loop early closes the source.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable

from reactivex.subject import Subject

from operators import Chunk, Limits, Rule

from ._sources import ByteSource, pieces_of
from ._translate import translate

__all__ = ["stream"]


async def _aiter_pieces(source: AsyncIterable[bytes] | ByteSource) -> AsyncGenerator[bytes, None]:
    if isinstance(source, AsyncIterable):
        async for piece in source:
            yield piece
    else:
        for piece in pieces_of(source)():
            yield piece


async def stream(
    source: AsyncIterable[bytes] | ByteSource,
    *,
    anomalies: bool = False,
    rules: Iterable[Rule] | None = None,
    limits: Limits | None = None,
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

    subscription = translate(subject, anomalies=anomalies, rules=rules, limits=limits).subscribe(
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
