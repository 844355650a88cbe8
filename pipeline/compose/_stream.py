"""``stream(source)``: the chunks of an async byte source, read at the caller's pace.

It bridges async to Rx without any scheduler: an async generator owns a Subject, pushes each awaited read into the
chain, and yields what the chain produced before it awaits the next read, so the caller's ``async for`` paces the
reads (backpressure) and leaving the loop early closes the source.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator

from reactivex.subject import Subject

from operators import Chunk, Format, Limits, Rule

from ._replies import aresponse_pieces, http_response_of, is_async_response
from ._sources import ByteSource, pieces_of
from ._translate import translate

__all__ = ["stream"]


def _pieces(source: AsyncIterable[bytes] | ByteSource, limits: Limits | None) -> AsyncIterator[bytes]:
    """The source's reads as one async iterator; a source that cannot be read at all (a ``str``, a missing file)
    raises here, before anything is subscribed."""
    response = http_response_of(source)
    if response is not None and is_async_response(response):
        return aresponse_pieces(response, limits)
    if isinstance(source, AsyncIterable) and response is None:
        return aiter(source)
    return _async_of(pieces_of(source, limits)())


async def _async_of(pieces: Iterator[bytes]) -> AsyncGenerator[bytes, None]:
    try:
        for piece in pieces:
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


async def stream(
    source: AsyncIterable[bytes] | ByteSource,
    *,
    anomalies: bool = False,
    rules: Iterable[Rule] | None = None,
    limits: Limits | None = None,
    format: Format | None = None,
) -> AsyncIterator[Chunk]:
    """``async for chunk in stream(source)``: the same chunks as ``translate``, read at the caller's pace.

    ``source`` is an async iterable of bytes (for example ``response.aiter_bytes()``), an ``httpx.Response`` of an
    ``httpx.AsyncClient`` (classified first, as ``ChatClient`` does), or anything ``translate`` takes. Leaving the
    loop early disposes the chain and closes the source.
    """
    pieces = _pieces(source, limits)
    wraps_response = http_response_of(source) is not None  # closed by its pieces, not by the source's aclose
    subject: Subject[bytes] = Subject()
    ready: list[Chunk] = []
    ended = False

    def on_completed() -> None:
        nonlocal ended
        ended = True

    subscription = translate(subject, anomalies=anomalies, rules=rules, limits=limits, format=format).subscribe(
        on_next=ready.append, on_completed=on_completed
    )
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
        for closable in (pieces, None if wraps_response else source):
            close = getattr(closable, "aclose", None)
            if close is not None:
                await close()
