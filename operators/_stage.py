"""The one mechanism every rule operator is built on: a per-subscription state machine over batches.

The Observable between rule operators carries *batches* (``Batch[T]``: one sequence per network read) rather than
single items: reactivex costs ~0.2 us per operator per ``on_next``, which for a chain of five is most of the budget of
a ~325-byte event, while a batch pays it once per read (docs/decisions/0008-batches-between-operators.md). The types
say it: a rule is an ``Operator[Batch[Signal], Batch[Signal]]``, so ``mypy --strict`` refuses an ordinary reactivex
operator that would treat a batch as one chunk (``ops.map(lambda c: c.text)``). The public chunk stream, one chunk per
``on_next``, begins after ``pipeline.translate``.

``stage_operator(factory)`` gives a stage its reactive shape:

- ``factory()`` runs once per subscription, so every subscription (every retry) starts from fresh state;
- the stage appends what it emits to ``out``; whatever it appended is emitted even when it then raises, so the batch
  boundary never changes a result (a payload that fails to decode does not take the text before it down with it);
- an exception raised by the stage becomes ``on_error`` downstream instead of escaping ``subscribe()`` (in RxPY an
  exception inside ``on_next`` would otherwise unwind into the producer);
- a value that is not a batch is refused with a ``TypeError`` naming it (an ordinary operator placed between two rules
  that emits single items, for example) rather than being iterated as if it were one;
- a stage that declares itself ``finished`` completes downstream and disposes its upstream at once (so ``[DONE]``
  closes the HTTP response without waiting for the server to hang up);
- ``on_end`` / ``on_failure`` let a stage emit its last items when the upstream completes or fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Generic, Protocol, TypeAlias, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

__all__ = [
    "BaseStage",
    "Batch",
    "Operator",
    "Stage",
    "stage_operator",
    "subscribing_stages",
]

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
A_contra = TypeVar("A_contra", contravariant=True)
B_co = TypeVar("B_co")

Batch: TypeAlias = Sequence[T]
"""What one ``on_next`` between two rule operators carries: the items decoded from one read, in order."""

Operator: TypeAlias = Callable[[Observable[A]], Observable[B]]
"""A reactivex operator: ``Operator[Batch[Signal], Batch[Signal]]`` for a rule, ``Operator[Chunk, Chunk]`` after
``translate``."""


class Stage(Protocol[A_contra, B_co]):
    """A per-subscription state machine: each ``on_next`` value ``A`` (a ``Batch`` for a rule, a piece of bytes for
    ``parse_sse``) in, items ``B`` appended to ``out``, which goes on as one ``Batch[B]``."""

    finished: bool

    def on_batch(self, batch: A_contra, out: list[B_co]) -> None: ...

    def on_end(self, out: list[B_co]) -> None: ...

    def on_failure(self, error: Exception, out: list[B_co]) -> bool:
        """Append the items to emit; return True to complete after them, False to pass ``error`` on."""
        ...


class BaseStage(Generic[A, B]):
    """Defaults for stages with nothing to say at the end: complete on end, pass a failure on."""

    finished: bool = False

    def on_batch(self, batch: A, out: list[B]) -> None:
        raise NotImplementedError

    def on_end(self, out: list[B]) -> None:
        return None

    def on_failure(self, error: Exception, out: list[B]) -> bool:
        return False


class _Subscribing(threading.local):
    def __init__(self) -> None:
        self.stack: list[SingleAssignmentDisposable] = []


_SUBSCRIBING = _Subscribing()


@contextmanager
def _subscribing(upstream: SingleAssignmentDisposable) -> Iterator[None]:
    _SUBSCRIBING.stack.append(upstream)
    try:
        yield
    finally:
        _SUBSCRIBING.stack.pop()


def subscribing_stages() -> tuple[SingleAssignmentDisposable, ...]:
    """For a synchronous source: the upstream disposables of every stage subscribing right now, innermost last.

    ``bytes_source`` stops reading when any of them is disposed, so a rule that finishes early (``close_on_done`` at
    a crossed ``max_text_bytes``) stops an endless generator too, not only the stage directly above the source.
    """
    return tuple(_SUBSCRIBING.stack)


def _not_a_batch(value: object) -> TypeError:
    return TypeError(
        f"a rule operator received {type(value).__name__} {value!r:.80}, not a batch: between rule operators every "
        "on_next carries a sequence of items (operators.extend.Batch). Put ordinary reactivex operators after "
        "pipeline.translate(), or wrap an item function with operators.extend.map_items / filter_items"
    )


_BATCH_TYPES: tuple[type, ...] = (list, tuple)


def stage_operator(
    factory: Callable[[], Stage[A, B]], *, accepts: tuple[type, ...] = _BATCH_TYPES
) -> Operator[A, Batch[B]]:
    """Wraps a stage factory as an operator: ``Observable[A] -> Observable[Batch[B]]``, where ``A`` is a ``Batch``
    (``accepts`` names the runtime types an ``on_next`` value may have; anything else is refused)."""

    def operator(source: Observable[A]) -> Observable[Batch[B]]:
        def subscribe(
            observer: abc.ObserverBase[Batch[B]], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            stage = factory()
            upstream = SingleAssignmentDisposable()
            stopped = False

            def finish() -> None:
                nonlocal stopped
                stopped = True
                observer.on_completed()
                upstream.dispose()

            def fail(error: Exception) -> None:
                nonlocal stopped
                stopped = True
                observer.on_error(error)
                upstream.dispose()

            def on_next(batch: A) -> None:
                if stopped:
                    return
                out: list[B] = []
                try:
                    if not isinstance(batch, accepts):
                        raise _not_a_batch(batch)
                    stage.on_batch(batch, out)
                except Exception as exc:  # containment: never let it unwind into the producer
                    if out:
                        observer.on_next(out)
                    fail(exc)
                    return
                if out:
                    observer.on_next(out)
                if stage.finished:
                    finish()

            def on_completed() -> None:
                if stopped:
                    return
                out: list[B] = []
                try:
                    stage.on_end(out)
                except Exception as exc:
                    if out:
                        observer.on_next(out)
                    fail(exc)
                    return
                if out:
                    observer.on_next(out)
                finish()

            def on_error(error: Exception) -> None:
                if stopped:
                    return
                out: list[B] = []
                try:
                    handled = stage.on_failure(error, out)
                except Exception as exc:
                    if out:
                        observer.on_next(out)
                    fail(exc)
                    return
                if out:
                    observer.on_next(out)
                if handled:
                    finish()
                else:
                    fail(error)

            with _subscribing(upstream):
                upstream.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return upstream

        return Observable(subscribe)

    return operator
