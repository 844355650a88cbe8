"""``retry_when_retryable`` in virtual time: the retry cases of dsh-behaviour.md §8.3 (R-1..R-8, R-14, R-18) adapted
to a cold source whose k-th subscription plays the k-th scripted attempt, plus the operator's own guarantees (usage of
failed attempts, aborted finishes, constant stack, disposal, fresh per-subscription state).

Nothing here sleeps: every delay runs on a ``TestScheduler`` whose clock is advanced by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from reactivex import Observable, abc, typing
from reactivex.disposable import Disposable
from reactivex.testing import TestScheduler

import pipeline
from operators import (
    BlockEnd,
    BlockStart,
    Chunk,
    Code,
    Failure,
    Finish,
    FinishReason,
    Retry,
    RetryPolicy,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
    retry_when_retryable,
)

_TState = TypeVar("_TState")

Attempt = bytes | Sequence[Chunk]
"""One scripted attempt: SSE bytes (run through the protocol operators) or a batch of chunks built directly."""

EMPTY_MESSAGE = "model returned a completed response with no content"

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------------- SSE bytes


F: Json = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "reasoning_content": ""}}]}
"""DeepSeek's live first chunk: role, content null and an empty reasoning_content."""


def delta(**fields: Any) -> Json:
    return {"choices": [{"index": 0, "delta": fields}]}


def tools(*calls: Json) -> Json:
    return delta(tool_calls=list(calls))


def tool(index: int, **fields: Any) -> Json:
    """One ``tool_calls`` entry: ``id`` at the top, ``name`` and ``arguments`` under ``function``."""
    call: Json = {"index": index, "type": "function", "function": {}}
    if "id" in fields:
        call["id"] = fields.pop("id")
    call["function"].update(fields)
    return call


def finish(reason: str) -> Json:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def usage(prompt: int, completion: int) -> Json:
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


def sse(*payloads: Json, done: bool = True) -> bytes:
    events = [f"data: {json.dumps(payload)}\n\n" for payload in payloads]
    if done:
        events.append("data: [DONE]\n\n")
    return "".join(events).encode()


# --------------------------------------------------------------------------------------------------- harness


class CountingScheduler(TestScheduler):
    """A TestScheduler that counts the timers (relative schedules) it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def schedule_relative(
        self,
        duetime: typing.RelativeTime,
        action: abc.ScheduledAction[_TState],
        state: _TState | None = None,
    ) -> abc.DisposableBase:
        self.timers += 1
        return super().schedule_relative(duetime, action, state)


def now_ms(scheduler: TestScheduler) -> float:
    return round(scheduler.to_seconds(scheduler.clock) * 1000, 3)


def advance_ms(scheduler: TestScheduler, ms: float) -> None:
    scheduler.advance_to(ms / 1000)


def samples(*values: float) -> Callable[[], float]:
    it: Iterator[float] = iter(values)
    return lambda: next(it)


def fixed(value: float) -> Callable[[], float]:
    return lambda: value


def one_batch(batch: Sequence[Chunk]) -> Observable[Any]:
    """A cold Observable that emits ``batch`` as one batch and completes, synchronously."""

    def subscribe(observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        observer.on_next(list(batch))
        observer.on_completed()
        return Disposable()

    return Observable(subscribe)


class Script:
    """A cold source whose k-th subscription plays the k-th attempt; records when each subscription happened."""

    def __init__(self, scheduler: TestScheduler, attempts: Sequence[Attempt] | Callable[[int], Attempt]) -> None:
        self.scheduler = scheduler
        self._attempts = attempts
        self.subscribed_at: list[float] = []

    @property
    def subscriptions(self) -> int:
        return len(self.subscribed_at)

    def _attempt(self, k: int) -> Attempt:
        if callable(self._attempts):
            return self._attempts(k)
        return self._attempts[k]

    def _raw(self) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            k = self.subscriptions
            self.subscribed_at.append(now_ms(self.scheduler))
            attempt = self._attempt(k)
            played = pipeline.bytes_source(attempt) if isinstance(attempt, bytes) else one_batch(attempt)
            return played.subscribe(observer, scheduler=scheduler)

        return Observable(subscribe)

    def sse(self) -> Observable[Any]:
        """Attempts are SSE bytes; one protocol chain over the whole cold source (state is per subscription)."""
        return pipeline.translate_batches(self._raw())

    def batches(self) -> Observable[Any]:
        """Attempts are chunk batches, emitted as they are."""
        return self._raw()


class Run:
    """``to_chunks`` over the retried source, recording ``(clock in ms, chunk)``."""

    def __init__(
        self,
        scheduler: TestScheduler,
        source: Observable[Any],
        policy: RetryPolicy | None,
        random: Callable[[], float] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.out: list[tuple[float, Chunk]] = []
        self.completed_at: float | None = None
        operator = retry_when_retryable(policy, scheduler=scheduler, random=random or fixed(0.5))

        def on_completed() -> None:
            self.completed_at = now_ms(scheduler)

        self.subscription = pipeline.to_chunks()(operator(source)).subscribe(
            on_next=lambda chunk: self.out.append((now_ms(scheduler), chunk)), on_completed=on_completed
        )

    @property
    def chunks(self) -> list[Chunk]:
        return [chunk for _, chunk in self.out]

    @property
    def retries(self) -> list[tuple[float, Retry]]:
        return [(at, chunk) for at, chunk in self.out if isinstance(chunk, Retry)]

    @property
    def finish(self) -> Finish:
        last = self.out[-1][1]
        assert isinstance(last, Finish)
        return last


def text_response(text: str) -> list[Chunk]:
    """The anchor's ``textResponse(t)``."""
    return [BlockStart(0, "text"), TextDelta(0, text), BlockEnd(0, TextBlock(text)), Finish(FinishReason("stop"))]


def error(code: str, message: str = "busy", **facts: Any) -> list[Chunk]:
    return [Finish(FinishReason.error(code, message, **facts))]


def empty_completion() -> list[Chunk]:
    """The anchor's ``emptyCompletion()``."""
    return [UsageChunk(Usage(0, 0)), Finish(FinishReason.error(Code.EMPTY_RESPONSE, EMPTY_MESSAGE))]


def normal_config(**overrides: Any) -> RetryPolicy:
    """The anchor's ``normalConfig()``: normal, 2 retries, backoff 500 / 10 000 / jitter 0, default codes."""
    settings: dict[str, Any] = {"initial_delay_ms": 500, "max_delay_ms": 10_000, "jitter_ratio": 0}
    settings.update(overrides)
    return RetryPolicy.normal(**settings)


# --------------------------------------------------------------------------------------------------- R-1 .. R-8


def test_r1_the_delay_is_recorded_before_the_retry_is_sent() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [error(Code.RATE_LIMIT, "busy", status=429), text_response("done")])
    policy = normal_config(retryable_codes=["SERVER", "RATE_LIMIT"])
    run = Run(scheduler, script.batches(), policy, random=fixed(0.5))

    advance_ms(scheduler, 499)
    assert script.subscriptions == 1
    assert run.out == [(0, Retry(1, 2, 500, Failure(Code.RATE_LIMIT, "busy", status=429)))]
    assert run.out[0][1].to_dict() == {
        "type": "retry",
        "attempt": 1,
        "max_retries": 2,
        "delay_ms": 500,
        "failure": {"code": "RATE_LIMIT", "message": "busy", "status": 429},
    }

    advance_ms(scheduler, 500)
    assert script.subscriptions == 2
    assert script.subscribed_at == [0, 500]
    assert [at for at, _ in run.out] == [0, 500, 500, 500, 500]
    assert run.chunks[1:] == text_response("done")
    assert run.completed_at == 500
    assert pipeline.assemble(run.chunks).text == "done"


def test_r2_empty_response_error_finish_is_retried_under_the_default_codes() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [empty_completion(), text_response("recovered")])
    run = Run(scheduler, script.batches(), normal_config())

    advance_ms(scheduler, 500)

    assert script.subscriptions == 2
    (at, retry), = run.retries
    assert at == 0
    assert retry.failure == Failure(Code.EMPTY_RESPONSE, EMPTY_MESSAGE)
    assert retry.failure.to_dict() == {"code": "EMPTY_RESPONSE", "message": EMPTY_MESSAGE}
    assert run.chunks[0] == UsageChunk(Usage(0, 0))  # the failed attempt's usage passes on, before the retry
    message = pipeline.assemble(run.chunks)
    assert message.text == "recovered"
    assert message.finish == FinishReason("stop")
    assert message.retries == 1


def test_r3_partial_output_of_a_failed_attempt_passes_on_and_is_discarded_by_assemble() -> None:
    scheduler = TestScheduler()
    partial: list[Chunk] = [
        BlockStart(0, "text"),
        TextDelta(0, "discarded partial output"),
        BlockEnd(0, TextBlock("discarded partial output")),
        BlockStart(1, "tool-call"),
        ToolCallDelta(1, "discarded-call", "danger", "{}"),
        BlockEnd(1, ToolCallBlock("discarded-call", "danger", "{}")),
    ]
    failed = [*partial, Finish(FinishReason.error(Code.TRANSPORT, "connection reset"))]
    script = Script(scheduler, [failed, text_response("recovered")])
    run = Run(scheduler, script.batches(), normal_config())

    advance_ms(scheduler, 500)

    assert run.chunks[:6] == partial  # the attempt's chunks pass on ...
    assert isinstance(run.chunks[6], Retry)  # ... and its finish becomes the retry (7 chunks for the attempt)
    assert run.chunks[6].failure.code == Code.TRANSPORT
    assert run.chunks[7:] == text_response("recovered")
    message = pipeline.assemble(run.chunks)
    assert message.text == "recovered"
    assert message.tool_calls == ()
    assert "discarded" not in message.text
    assert message.ok


def test_r4_bounded_exponential_jitter_and_the_budget_stops_retries() -> None:
    scheduler = TestScheduler()
    attempts = [error(Code.SERVER, "busy one"), error(Code.SERVER, "busy two"), error(Code.SERVER, "busy three")]
    script = Script(scheduler, attempts)
    run = Run(scheduler, script.batches(), normal_config(jitter_ratio=0.1), random=samples(0, 1))

    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 3
    assert script.subscribed_at == [0, 450, 1550]
    assert [(at, r.attempt, r.max_retries) for at, r in run.retries] == [(0, 1, 2), (450, 2, 2)]
    assert [r.delay_ms for _, r in run.retries] == pytest.approx([450, 1100])
    assert [r.failure.message for _, r in run.retries] == ["busy one", "busy two"]
    assert run.out[-1] == (1550, Finish(FinishReason.error(Code.SERVER, "busy three")))  # unchanged
    assert run.completed_at == 1550


def test_r5_a_zero_delay_from_the_lower_jitter_bound_is_accepted() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [error(Code.SERVER), text_response("ok")])
    policy = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=1, jitter_ratio=1)
    run = Run(scheduler, script.batches(), policy, random=fixed(0))

    advance_ms(scheduler, 1)

    (_, retry), = run.retries
    assert retry.delay_ms == 0
    assert script.subscriptions == 2
    assert script.subscribed_at == [0, 0]
    assert pipeline.assemble(run.chunks).text == "ok"


def never() -> float:
    raise AssertionError("random() was called, but a Retry-After delay is used verbatim")


def test_r6a_retry_after_within_the_cap_is_used_verbatim() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [error(Code.RATE_LIMIT, status=429, retry_after_ms=2000), text_response("ok")])
    run = Run(scheduler, script.batches(), normal_config(jitter_ratio=1), random=never)

    advance_ms(scheduler, 1999)
    assert script.subscriptions == 1
    (_, retry), = run.retries
    assert retry.delay_ms == 2000
    assert retry.failure.retry_after_ms == 2000

    advance_ms(scheduler, 2000)
    assert script.subscriptions == 2
    assert script.subscribed_at == [0, 2000]


def test_r6b_retry_after_over_the_cap_in_normal_mode_passes_the_failure_on() -> None:
    scheduler = CountingScheduler()
    failed = error(Code.RATE_LIMIT, status=429, retry_after_ms=10_001)
    script = Script(scheduler, [failed, text_response("never")])
    run = Run(scheduler, script.batches(), normal_config())

    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 1
    assert run.retries == []
    assert run.out == [(0, failed[0])]
    assert run.completed_at == 0
    assert scheduler.timers == 0


def test_r7_always_mode_with_retry_after_over_the_cap_uses_local_backoff() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [error(Code.AUTH, status=401, retry_after_ms=10), text_response("ok")])
    policy = RetryPolicy.always(initial_delay_ms=2, max_delay_ms=4, jitter_ratio=0.5)
    run = Run(scheduler, script.batches(), policy, random=fixed(1))

    advance_ms(scheduler, 2.999)
    assert script.subscriptions == 1
    (_, retry), = run.retries
    assert retry.delay_ms == 3  # 2 * 1.5, not the 10 ms asked for
    assert retry.max_retries is None

    advance_ms(scheduler, 3)
    assert script.subscriptions == 2
    assert pipeline.assemble(run.chunks).text == "ok"


def test_r8_auth_under_the_default_policy_is_passed_on_without_a_timer() -> None:
    scheduler = CountingScheduler()
    failed = error(Code.AUTH, "bad key", status=401)
    script = Script(scheduler, [failed, text_response("never")])
    run = Run(scheduler, script.batches(), RetryPolicy())

    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 1
    assert run.retries == []
    assert run.out == [(0, failed[0])]
    assert scheduler.timers == 0


def test_r14_always_mode_is_unbounded_and_the_delay_is_capped() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [*(error(Code.AUTH, f"denied {n}") for n in range(1, 5)), text_response("finally")])
    policy = RetryPolicy.always(initial_delay_ms=1, max_delay_ms=4, jitter_ratio=0.1)
    run = Run(scheduler, script.batches(), policy, random=fixed(1))

    advance_ms(scheduler, 1000)

    assert script.subscriptions == 5
    assert [r.attempt for _, r in run.retries] == [1, 2, 3, 4]
    assert [r.delay_ms for _, r in run.retries] == pytest.approx([1.1, 2.2, 4, 4])
    assert all(r.max_retries is None for _, r in run.retries)
    assert all(r.to_dict()["max_retries"] is None for _, r in run.retries)
    assert script.subscribed_at == pytest.approx([0, 1.1, 3.3, 7.3, 11.3])
    assert pipeline.assemble(run.chunks).text == "finally"


# --------------------------------------------------------------------------------------------------- usage, codes


def never_identified() -> bytes:
    """Real SSE bytes where the tool call never gets an id: MALFORMED_TOOL_CALL at [DONE], after the usage."""
    return sse(
        F,
        tools(tool(0, name="Glob", arguments="")),
        tools(tool(0, arguments='{"pattern": "*.py"}')),
        finish("tool_calls"),
        usage(5, 2),
    )


def clean_text(text: str = "recovered", prompt: int = 7, completion: int = 3) -> bytes:
    return sse(F, delta(content=text), finish("stop"), usage(prompt, completion))


def test_malformed_tool_call_is_retried_by_default_and_its_usage_passes_before_the_retry() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [never_identified(), clean_text()])
    run = Run(scheduler, script.sse(), RetryPolicy(), random=fixed(0.5))

    advance_ms(scheduler, 499.999)
    assert script.subscriptions == 1
    types = [chunk.type for chunk in run.chunks]
    assert types == ["block-start", "tool-call-delta", "tool-call-delta", "usage", "retry"]
    assert "block-end" not in types
    retry = run.chunks[-1]
    assert isinstance(retry, Retry)
    assert retry.failure.code == Code.MALFORMED_TOOL_CALL
    assert retry.delay_ms == 500  # default policy, random 0.5: no jitter
    assert run.chunks[-2] == UsageChunk(Usage(5, 2, total_tokens=7))

    advance_ms(scheduler, 500)
    assert script.subscriptions == 2
    message = pipeline.assemble(run.chunks)
    assert message.text == "recovered"
    assert message.tool_calls == ()
    assert message.finish == FinishReason("stop")


def test_usage_total_sums_every_attempt_and_usage_is_the_last_attempts() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [never_identified(), never_identified(), clean_text(prompt=7, completion=3)])
    run = Run(scheduler, script.sse(), normal_config())

    advance_ms(scheduler, 10_000)

    assert script.subscriptions == 3
    assert len(run.retries) == 2
    usages = [chunk.usage for chunk in run.chunks if isinstance(chunk, UsageChunk)]
    assert usages == [Usage(5, 2, total_tokens=7), Usage(5, 2, total_tokens=7), Usage(7, 3, total_tokens=10)]
    message = pipeline.assemble(run.chunks)
    assert message.usage == Usage(7, 3, total_tokens=10)
    assert message.usage_total == Usage(17, 7, total_tokens=24)
    assert message.retries == 2


@pytest.mark.parametrize("policy", [RetryPolicy(), RetryPolicy.always(initial_delay_ms=1, max_delay_ms=1)])
def test_an_aborted_finish_is_never_retried(policy: RetryPolicy) -> None:
    scheduler = CountingScheduler()
    aborted = Finish(FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")))
    attempts: list[Attempt] = [[TextDelta(0, "x"), aborted], text_response("never")]
    script = Script(scheduler, attempts)
    run = Run(scheduler, script.batches(), policy)

    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 1
    assert run.chunks == [TextDelta(0, "x"), aborted]
    assert scheduler.timers == 0


def test_an_error_finish_with_the_aborted_code_is_not_retried_in_always_mode() -> None:
    scheduler = CountingScheduler()
    failed = error(Code.ABORTED, "cancelled")
    script = Script(scheduler, [failed, text_response("never")])
    run = Run(scheduler, script.batches(), RetryPolicy.always(initial_delay_ms=1, max_delay_ms=1))

    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 1
    assert run.out == [(0, failed[0])]
    assert scheduler.timers == 0


@pytest.mark.parametrize(
    "code", [Code.QUOTA, Code.AUTH, Code.INVALID_REQUEST, Code.CONTEXT_WINDOW_EXCEEDED, Code.MALFORMED_RESPONSE]
)
def test_a_non_retryable_code_passes_through_at_once(code: str) -> None:
    scheduler = CountingScheduler()
    failed: list[Chunk] = [UsageChunk(Usage(3, 0)), Finish(FinishReason.error(code, "no"))]
    script = Script(scheduler, [failed, text_response("never")])
    run = Run(scheduler, script.batches(), RetryPolicy())

    advance_ms(scheduler, 0.001)

    assert run.out == [(0, failed[0]), (0, failed[1])]
    assert run.completed_at == 0
    assert script.subscriptions == 1
    assert scheduler.timers == 0


def test_stop_and_tool_calls_finishes_pass_through() -> None:
    scheduler = CountingScheduler()
    script = Script(scheduler, [text_response("fine")])
    run = Run(scheduler, script.batches(), RetryPolicy.always())

    advance_ms(scheduler, 1)

    assert run.chunks == text_response("fine")
    assert scheduler.timers == 0


# --------------------------------------------------------------------------------------------------- stack, disposal


def thousand_failures_then_success(k: int) -> Attempt:
    return error(Code.TRANSPORT, f"reset {k}") if k < 1000 else text_response("after a thousand")


def test_a_thousand_immediate_failures_use_constant_stack() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, thousand_failures_then_success)
    policy = RetryPolicy.always(initial_delay_ms=1, max_delay_ms=1, jitter_ratio=1)
    run = Run(scheduler, script.batches(), policy, random=fixed(0))

    advance_ms(scheduler, 1)  # no RecursionError escapes

    assert script.subscriptions == 1001
    assert len(run.retries) == 1000
    assert all(r.delay_ms == 0 for _, r in run.retries)
    assert [r.attempt for _, r in run.retries] == list(range(1, 1001))
    assert run.chunks[1000:] == text_response("after a thousand")
    assert run.completed_at == 0


def test_a_thousand_immediate_failures_on_the_default_scheduler_outside_an_event_loop() -> None:
    subscriptions = 0

    def subscribe(observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        nonlocal subscriptions
        attempt = thousand_failures_then_success(subscriptions)
        subscriptions += 1
        assert not isinstance(attempt, bytes)
        return one_batch(attempt).subscribe(observer, scheduler=scheduler)

    policy = RetryPolicy.always(initial_delay_ms=1, max_delay_ms=1, jitter_ratio=1)
    out: list[Chunk] = []
    operator = retry_when_retryable(policy, random=fixed(0))  # CurrentThreadScheduler (trampoline)
    pipeline.to_chunks()(operator(Observable(subscribe))).subscribe(on_next=out.append)

    assert subscriptions == 1001
    assert sum(isinstance(chunk, Retry) for chunk in out) == 1000
    assert out[-1] == Finish(FinishReason("stop"))


def test_disposing_during_a_pending_backoff_prevents_the_next_attempt() -> None:
    scheduler = CountingScheduler()
    script = Script(scheduler, [error(Code.TRANSPORT), text_response("never")])
    run = Run(scheduler, script.batches(), RetryPolicy.always())

    advance_ms(scheduler, 100)
    assert len(run.retries) == 1
    assert scheduler.timers == 1

    run.subscription.dispose()
    advance_ms(scheduler, 60_000)

    assert script.subscriptions == 1
    assert [chunk.type for chunk in run.chunks] == ["retry"]
    assert run.completed_at is None


def test_disposing_before_the_first_attempt_runs_subscribes_nothing() -> None:
    scheduler = TestScheduler()
    script = Script(scheduler, [text_response("never")])
    run = Run(scheduler, script.batches(), RetryPolicy())

    run.subscription.dispose()
    advance_ms(scheduler, 1000)

    assert script.subscriptions == 0
    assert run.out == []


def test_each_resubscription_gets_fresh_operator_state() -> None:
    scheduler = TestScheduler()
    cut = sse(
        F,
        delta(reasoning_content="think"),
        delta(content="partial"),
        tools(tool(0, id="call_a", name="Glob", arguments="")),
        done=False,
    )
    # Same wire index 0 without an id: refused unless the first attempt's identity leaked into this one.
    unidentified = sse(F, tools(tool(0, name="Glob", arguments="{}")), finish("tool_calls"), usage(1, 1))
    script = Script(scheduler, [cut, unidentified, clean_text("fresh")])
    run = Run(scheduler, script.sse(), normal_config(initial_delay_ms=1, max_delay_ms=1))

    advance_ms(scheduler, 10)

    assert script.subscriptions == 3
    attempts: list[list[Chunk]] = [[]]
    for chunk in run.chunks:
        attempts[-1].append(chunk)
        if isinstance(chunk, Retry):
            attempts.append([])
    first, second, third = attempts

    assert [c.index for c in first if isinstance(c, BlockStart)] == [0, 1, 2]
    assert isinstance(first[-1], Retry)
    assert first[-1].failure.code == Code.STREAM_CLOSED

    assert [c.index for c in second if isinstance(c, BlockStart)] == [0]
    assert [c.id for c in second if isinstance(c, ToolCallDelta)] == [""]
    assert isinstance(second[-1], Retry)
    assert second[-1].failure.code == Code.MALFORMED_TOOL_CALL

    assert third[0] == BlockStart(0, "text")
    assert third[-2:] == [UsageChunk(Usage(7, 3, total_tokens=10)), Finish(FinishReason("stop"))]
    message = pipeline.assemble(run.chunks)
    assert (message.text, message.reasoning, message.tool_calls) == ("fresh", "", ())


def test_the_retry_is_scheduled_relative_to_the_failure_time() -> None:
    """A failure that arrives late in virtual time is retried ``delay_ms`` after it, not after the subscription."""
    scheduler = TestScheduler()
    subscribed_at: list[float] = []

    def late_failure(observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        subscribed_at.append(now_ms(scheduler))
        if len(subscribed_at) > 1:
            return one_batch(text_response("ok")).subscribe(observer)
        return scheduler.schedule_relative(
            timedelta(milliseconds=250), lambda *_: one_batch(error(Code.SERVER)).subscribe(observer)
        )

    run = Run(scheduler, Observable(late_failure), normal_config())
    advance_ms(scheduler, 2000)

    assert subscribed_at == [0, 750]
    assert [at for at, _ in run.retries] == [250]
    assert pipeline.assemble(run.chunks).text == "ok"


def test_r25_disposing_synchronously_on_the_retry_chunk_stops_the_retry() -> None:
    """R-25 adapted: the consumer cancels when it sees the retry chunk: 1 attempt, exactly 1 retry, no timer left."""
    scheduler = TestScheduler()
    script = Script(scheduler, [error(Code.SERVER), text_response("never")])
    seen: list[Chunk] = []
    holder: list[abc.DisposableBase] = []

    def on_next(chunk: Chunk) -> None:
        seen.append(chunk)
        if isinstance(chunk, Retry):
            holder[0].dispose()

    operator = retry_when_retryable(RetryPolicy(), scheduler=scheduler, random=fixed(0.5))
    holder.append(pipeline.to_chunks()(operator(script.batches())).subscribe(on_next=on_next))

    advance_ms(scheduler, 1)
    assert [chunk.type for chunk in seen] == ["retry"]
    assert all(item.is_cancelled() for item, _ in scheduler._queue.items)  # no live timer

    advance_ms(scheduler, 60_000)
    assert script.subscriptions == 1
    assert [chunk.type for chunk in seen] == ["retry"]
