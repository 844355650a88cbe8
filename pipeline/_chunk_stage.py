"""The one way to write a chunk-level operator of ``pipeline`` (``to_chunks``' ends, ``redact_key``, ``log_chunks``): a
``ChunkStage`` per subscription and ``chunk_operator`` around it, as ``operators.extend.BaseStage`` and
``stage_operator`` are for the rules.

A stage gets each upstream item with a list to append what it emits (``on_item``), the end of the upstream
(``on_end``) and an upstream error (``on_failure``: True when the stage ended the stream itself, so the error is not
passed on). Setting ``finished`` ends the stream after the current item: the observer is completed and later items
are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from reactivex import Observable, abc

__all__ = ["ChunkStage", "chunk_operator"]

A = TypeVar("A")
B = TypeVar("B")


class ChunkStage(Generic[A, B]):
    """One subscription's state of a chunk-level operator. Pass on what you do not handle."""

    finished: bool = False

    def on_item(self, item: A, out: list[B]) -> None:
        raise NotImplementedError

    def on_end(self, out: list[B]) -> None:
        """The upstream completed: append what is still to come; the observer is completed after it."""

    def on_failure(self, error: Exception, out: list[B]) -> bool:
        """The upstream failed: append what is still to come; return True to complete instead of passing it on."""
        return False


def chunk_operator(stage: Callable[[], ChunkStage[A, B]]) -> Callable[[Observable[A]], Observable[B]]:
    """An operator running a fresh ``stage()`` per subscription."""

    def operator(source: Observable[A]) -> Observable[B]:
        def subscribe(observer: abc.ObserverBase[B], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
            state = stage()
            done = False

            def emit(out: list[B]) -> None:
                for item in out:
                    observer.on_next(item)

            def on_next(item: A) -> None:  # once per read: emit() written out
                nonlocal done
                if done:
                    return
                out: list[B] = []
                state.on_item(item, out)
                send = observer.on_next
                for made in out:
                    send(made)
                if state.finished:
                    done = True
                    observer.on_completed()

            def on_error(error: Exception) -> None:
                nonlocal done
                if done:
                    return
                done = True
                out: list[B] = []
                handled = state.on_failure(error, out)
                emit(out)
                if handled:
                    observer.on_completed()
                else:
                    observer.on_error(error)

            def on_completed() -> None:
                nonlocal done
                if done:
                    return
                done = True
                out: list[B] = []
                state.on_end(out)
                emit(out)
                observer.on_completed()

            return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
