"""``retry_when_retryable``: a retryable error finish becomes a ``retry`` chunk and a new attempt.

Rule (docs/decisions/0006-retry-when-retryable.md):

- The source is cold: each subscription is one attempt (for a live response, one HTTP request), so a retry is a
  re-subscription. When an attempt ends in an error finish that the policy retries and the budget allows, the
  attempt's chunks before the finish pass on (its usage was billed), the finish is replaced by
  ``Retry(attempt, max_retries, delay_ms, failure)``, and the source is subscribed again after ``delay_ms``.
- When retries run out (normal mode), or a provider Retry-After exceeds ``max_delay_ms`` (normal mode), the last error
  finish passes through unchanged. A non-retryable finish passes through at once; an aborted finish is never retried.
- Attempts are driven iteratively: every re-subscription is an action scheduled on the scheduler (reactivex has no
  ``retry_when``, and re-subscribing through ``catch`` recursion overflows after ~40 immediate failures), so a
  thousand immediate failures use constant stack. The scheduler and the random source are injectable: tests use
  ``TestScheduler`` (virtual time) and never sleep. Disposing the subscription disposes the running attempt (closing
  its HTTP response) and cancels a pending backoff.

The marble diagram is on the factory: ``help(operators.retry_when_retryable)`` (docs/operators.md is generated from
the factories' docstrings).
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ._chunks import Finish, Retry
from ._retry_policy import RetryPolicy
from ._signals import Rule, Signal
from ._stage import Batch

__all__ = ["retry_when_retryable"]


def _default_scheduler() -> abc.SchedulerBase:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return CurrentThreadScheduler.singleton()
    return AsyncIOScheduler(loop)


def retry_when_retryable(
    policy: RetryPolicy | None = None,
    *,
    scheduler: abc.SchedulerBase | None = None,
    random: Callable[[], float] = _random.random,
) -> Rule:
    """Re-subscribes after a retryable error finish, passing the attempt's usage on and emitting ``retry`` instead of
    the finish::

        attempt 1: --[usage, finish error MALFORMED_TOOL_CALL]|
        attempt 2:                                  --[start, delta, end, usage, finish stop]|
        out:       --[usage, retry 1]----(delay)----[start, delta, end, usage, finish stop]|

    Guarantees: a retryable error finish (by ``RetryPolicy``: default codes ``EMPTY_RESPONSE``, ``MALFORMED_TOOL_CALL``,
    ``RATE_LIMIT``, ``SERVER``, ``TIMEOUT``, ``TRANSPORT``, ``STREAM_CLOSED``; ``max_retries`` 2; exponential backoff
    with jitter; Retry-After verbatim up to the cap) is replaced by ``retry`` and the source re-subscribed after the
    delay; attempts are scheduled iteratively (constant stack for any number of immediate failures); the scheduler and
    random source are injectable (virtual time in tests); an aborted finish is never retried; disposing cancels the
    running attempt and a pending backoff. It sits *outside* the per-attempt chain: ``ChatClient.chunks()`` applies it
    to each attempt's ``parse_sse`` and rules (``rules=``, by default ``protocol_rules()``).

    ``scheduler`` defaults to the subscription's scheduler, else an ``AsyncIOScheduler`` on the running event loop, else
    the current thread's trampoline; ``random`` is the jitter's source.

    Decision note: docs/decisions/0006-retry-when-retryable.md.
    """
    resolved = policy if policy is not None else RetryPolicy()

    def operator(source: Observable[Batch[Signal]]) -> Observable[Batch[Signal]]:
        def subscribe(
            observer: abc.ObserverBase[Batch[Signal]], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            timer_scheduler = scheduler or subscribe_scheduler or _default_scheduler()
            current = SerialDisposable()
            pending = SerialDisposable()
            retries = 0
            generation = 0
            stopped = False

            def start_attempt(*_: Any) -> None:
                nonlocal generation
                if stopped:
                    return
                generation += 1
                mine = generation

                def on_next(batch: Batch[Signal]) -> None:
                    if stopped or mine != generation:
                        return
                    for position, item in enumerate(batch):
                        if type(item) is Finish:
                            retry = _decide(item)
                            if retry is not None:
                                observer.on_next([*batch[:position], retry])
                                _schedule(retry.delay_ms)
                                return
                            break
                    observer.on_next(batch)

                def on_error(error: Exception) -> None:
                    nonlocal stopped
                    if stopped or mine != generation:
                        return
                    stopped = True
                    observer.on_error(error)

                def on_completed() -> None:
                    nonlocal stopped
                    if stopped or mine != generation:
                        return
                    stopped = True
                    observer.on_completed()

                current.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=subscribe_scheduler)

            def _decide(finish: Finish) -> Retry | None:
                nonlocal retries
                reason = finish.reason
                failure = reason.failure
                if reason.kind != "error" or failure is None or not resolved.is_retryable(failure):
                    return None
                if not resolved.allows(retries + 1):
                    return None
                delay = resolved.delay_ms(retries + 1, failure, random)
                if delay is None:
                    return None
                retries += 1
                return Retry(retries, resolved.max_retries, delay, failure)

            def _schedule(delay_ms: float) -> None:
                nonlocal generation
                generation += 1  # the failed attempt says nothing more
                current.disposable = Disposable()  # disposes the failed attempt
                pending.disposable = timer_scheduler.schedule_relative(
                    timedelta(milliseconds=delay_ms), start_attempt
                )

            def dispose() -> None:
                nonlocal stopped
                stopped = True

            pending.disposable = timer_scheduler.schedule(start_attempt)
            return CompositeDisposable(Disposable(dispose), current, pending)

        return Observable(subscribe)

    return operator

