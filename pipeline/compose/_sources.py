"""Byte sources: bytes in memory, a file, or an iterable of pieces, as a cold Observable of pieces."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeAlias

import httpx
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from operators import Limits
from operators.extend import subscribing_stages

from ._replies import WrapsResponse, http_response_of, is_async_response, response_pieces

__all__ = ["READ_SIZE", "ByteSource", "PieceSource", "bytes_source", "pieces_of"]

READ_SIZE = 64 * 1024
"""Bytes per read when the source is bytes in memory or a file."""

ByteSource: TypeAlias = (
    bytes | bytearray | memoryview | os.PathLike[str] | httpx.Response | WrapsResponse | Iterable[bytes]
)
"""Bytes, a path (``pathlib.Path``), an ``httpx.Response`` (or an openai SDK raw response wrapping one), or an
iterable of byte pieces. A ``str`` is refused: it could be a path or SSE text
(docs/decisions/0023-reading-responses.md)."""


def pieces_of(source: ByteSource | object, limits: Limits | None = None) -> Callable[[], Iterator[bytes]]:
    """A factory of fresh iterators over the source's pieces (a file is opened anew for each). A file that cannot be
    opened raises here, at the call, as ``open`` does; a response is classified when it is first read."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        return lambda: (data[start : start + READ_SIZE] for start in range(0, len(data), READ_SIZE))
    if isinstance(source, str):
        raise TypeError(
            "a str is not a byte source: pass pathlib.Path(...) for a file, or text.encode() for SSE text "
            f"(got {source[:40]!r})"
        )
    response = http_response_of(source)
    if response is not None:
        if is_async_response(response):
            raise TypeError("this httpx.Response is from an httpx.AsyncClient: read it with pipeline.stream()")
        return lambda: response_pieces(response, limits)
    if isinstance(source, os.PathLike):
        path = Path(source)
        with path.open("rb"):  # FileNotFoundError, IsADirectoryError, PermissionError: at the call, as usual
            pass

        def read_file() -> Iterator[bytes]:
            with path.open("rb") as handle:
                while piece := handle.read(READ_SIZE):
                    yield piece

        return read_file
    if isinstance(source, Iterable):
        iterable = source
        return lambda: iter(iterable)
    raise TypeError(
        f"translate() takes bytes, a pathlib.Path, an httpx.Response, or an iterable of bytes; got "
        f"{type(source).__name__}. For an async iterable use pipeline.stream()."
    )


def bytes_source(source: ByteSource, limits: Limits | None = None) -> Observable[bytes]:
    """A cold Observable of byte pieces that runs synchronously inside ``subscribe()`` and stops reading when disposed.

    Every piece is read before ``subscribe()`` returns, wherever it is subscribed from, a reactivex callback included
    (no trampoline is involved, so nothing is queued behind the callback that subscribed). When the subscriber is a
    rule operator (``parse_sse``, as in ``translate``), the source checks the upstream disposables of every rule
    operator subscribing at that moment between reads: a stage that finishes early (``parse_sse`` at ``[DONE]``,
    ``close_on_done`` at a crossed limit) stops the reading at once, before ``subscribe()`` has even returned the
    source's own disposable.
    """
    return PieceSource(pieces_of(source, limits))


class PieceSource(Observable[bytes]):
    """``bytes_source``'s Observable. ``feed(on_next, on_error, on_completed)`` runs it with plain callbacks, no
    observer wrapped around them: how the default chain subscribes to it (``operators.extend.FusedChain``, a call
    per read fewer; docs/decisions/0050-fast-path.md, issue 34)."""

    def __init__(self, make: Callable[[], Iterator[bytes]]) -> None:
        self.make = make

        def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None
                      ) -> abc.DisposableBase:
            return self.feed(observer.on_next, observer.on_error, observer.on_completed)

        super().__init__(subscribe)

    def feed(self, on_next: Callable[[bytes], None], on_error: Callable[[Exception], None],
             on_completed: Callable[[], None]) -> abc.DisposableBase:
        disposed = False
        subscribers = subscribing_stages()

        def stop() -> None:
            nonlocal disposed
            disposed = True

        def stopped() -> bool:  # between every two reads: a loop, not any(<genexpr>)
            if disposed:
                return True
            for subscriber in subscribers:  # noqa: SIM110
                if subscriber.is_disposed:
                    return True
            return False

        pieces = self.make()
        try:
            for piece in pieces:
                on_next(piece)
                if disposed:  # stopped() inlined: checked before the next read is pulled
                    return Disposable(stop)
                for subscriber in subscribers:  # (SingleAssignmentDisposables: no getattr, a slot)
                    if subscriber.is_disposed:
                        return Disposable(stop)
        except Exception as exc:  # a failing file or iterator ends the response, it does not escape
            if not stopped():
                on_error(exc)
            return Disposable(stop)
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
        if not stopped():
            on_completed()
        return Disposable(stop)
