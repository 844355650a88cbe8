"""The one mechanism every operator is built on: a per-subscription state machine over batches.

The Observable between operators carries *batches* (one list per network read) rather than single items: reactivex
costs ~0.2 us per operator per ``on_next``, which for a chain of five is most of the budget of a ~325-byte event, while
a batch pays it once per read (docs/decisions/0008-batches-between-operators.md). Each rule still lives in one
separately testable operator; a test feeds it batches and reads batches back.

``stage_operator(factory)`` gives the operator its reactive shape:

- ``factory()`` runs once per subscription, so every subscription (every retry) starts from fresh state;
- an exception raised by the stage becomes ``on_error`` downstream instead of escaping ``subscribe()`` (in RxPY an
  exception inside ``on_next`` would otherwise unwind into the producer);
- a stage that declares itself ``finished`` completes downstream and disposes its upstream at once (so ``[DONE]``
  closes the HTTP response without waiting for the server to hang up);
- ``on_end`` / ``on_failure`` let a stage emit its last items when the upstream completes or fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

__all__ = ["BaseStage", "Batch", "Operator", "Stage", "stage_operator"]

Batch: TypeAlias = Sequence[Any]
Operator: TypeAlias = Callable[[Observable[Any]], Observable[Any]]


class Stage(Protocol):
    """A per-subscription state machine. Return the items to emit (an empty list emits nothing)."""

    finished: bool

    def on_batch(self, batch: Any) -> list[Any]: ...

    def on_end(self) -> list[Any]: ...

    def on_failure(self, error: Exception) -> list[Any] | None:
        """Items to emit before completing, or None to pass the error on."""
        ...


class BaseStage:
    """Defaults for stages with nothing to say at the end."""

    finished: bool = False

    def on_end(self) -> list[Any]:
        return []

    def on_failure(self, error: Exception) -> list[Any] | None:
        return None


def stage_operator(factory: Callable[[], Stage]) -> Operator:
    """Wraps a stage factory as an operator: ``Callable[[Observable[Batch]], Observable[Batch]]``."""

    def operator(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
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

            def on_next(batch: Any) -> None:
                if stopped:
                    return
                try:
                    out = stage.on_batch(batch)
                except Exception as exc:  # containment: never let it unwind into the producer
                    fail(exc)
                    return
                if out:
                    observer.on_next(out)
                if stage.finished:
                    finish()

            def on_completed() -> None:
                if stopped:
                    return
                try:
                    out = stage.on_end()
                except Exception as exc:
                    fail(exc)
                    return
                if out:
                    observer.on_next(out)
                finish()

            def on_error(error: Exception) -> None:
                if stopped:
                    return
                try:
                    out = stage.on_failure(error)
                except Exception as exc:
                    fail(exc)
                    return
                if out is None:
                    fail(error)
                    return
                if out:
                    observer.on_next(out)
                finish()

            upstream.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return upstream

        return Observable(subscribe)

    return operator
