"""Byte sources: bytes in memory, a file, or an iterable of pieces, as a cold Observable of pieces."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeAlias

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from operators.extend import subscribing_stages

__all__ = ["READ_SIZE", "ByteSource", "bytes_source", "pieces_of"]

READ_SIZE = 64 * 1024
"""Bytes per read when the source is bytes in memory or a file."""

ByteSource: TypeAlias = bytes | bytearray | memoryview | str | os.PathLike[str] | Iterable[bytes]


def pieces_of(source: ByteSource) -> Callable[[], Iterator[bytes]]:
    """A factory of fresh iterators over the source's pieces (a file is opened anew for each)."""
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
    """A cold Observable of byte pieces that runs synchronously inside ``subscribe()`` and stops reading when disposed.

    Every piece is read before ``subscribe()`` returns, wherever it is subscribed from, a reactivex callback included
    (no trampoline is involved, so nothing is queued behind the callback that subscribed). When the subscriber is a
    rule operator (``parse_sse``, as in ``translate``), the source checks the upstream disposables of every rule
    operator subscribing at that moment between reads: a stage that finishes early (``parse_sse`` at ``[DONE]``,
    ``close_on_done`` at a crossed limit) stops the reading at once, before ``subscribe()`` has even returned the
    source's own disposable.
    """
    make = pieces_of(source)

    def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        disposed = False
        subscribers = subscribing_stages()

        def stop() -> None:
            nonlocal disposed
            disposed = True

        def stopped() -> bool:
            return disposed or any(getattr(s, "is_disposed", False) for s in subscribers)

        def run(*_: Any) -> None:
            pieces = make()
            try:
                for piece in pieces:
                    observer.on_next(piece)
                    if stopped():  # checked before the next read is pulled
                        return
            except Exception as exc:  # a failing file or iterator ends the response, it does not escape
                if not stopped():
                    observer.on_error(exc)
                return
            finally:
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()
            if not stopped():
                observer.on_completed()

        run()
        return Disposable(stop)

    return Observable(subscribe)
