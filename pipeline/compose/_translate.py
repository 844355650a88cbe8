"""The composition: the rule chain over a byte source, and the synchronous facades ``translate`` and ``collect``.

``translate(source)`` returns an ``Observable[Chunk]``: one public chunk per ``on_next``, the place where ordinary
reactivex operators compose (``ops.filter``, ``ops.map``, ``ops.take_while``, ``rx.defer`` for state). For bytes, a
path or a plain iterable, subscribing runs synchronously to completion on the caller's thread (no scheduler thread is
involved), so ``translate(data).subscribe(on_next=out.append)`` has every chunk in ``out`` when it returns, even when
called from inside another reactivex callback.

``rules=`` means one thing everywhere (here, in ``stream`` and in ``ChatClient``): the rule chain applied after
``parse_sse``, replacing ``protocol_rules()``. Build it from ``protocol_rules()`` to insert a custom operator.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reactivex import Observable, abc

from operators import (
    Anomaly,
    Batch,
    Chunk,
    Code,
    Finish,
    FinishReason,
    Format,
    Limits,
    Rule,
    Signal,
    parse_stream,
)
from operators.extend import CHUNK_TYPES, FusedChain, Operator, StreamFailure, default_chain, default_rules

from .._chunk_stage import ChunkStage
from .._logging import get_logger
from ._sources import ByteSource, bytes_source

__all__ = ["apply", "collect", "protocol_rules", "to_chunks", "translate", "translate_batches"]

_log = get_logger("compose")


def protocol_rules(limits: Limits | None = None) -> list[Rule]:
    """The rules after ``parse_sse``, in order, fresh: ``coalesce_identity -> accumulate_arguments -> close_on_done ->
    classify_finish``. Insert a custom operator anywhere; each passes on what it does not understand. ``limits``
    (default ``Limits()``) bounds the arguments, the tool calls and the text of a response."""
    return default_rules(limits)  # one list with the stages default_chain runs (operators/_chain.py)


class _ToChunks(ChunkStage[Batch[Signal], Chunk]):
    __slots__ = ("keep",)

    def __init__(self, keep: tuple[type, ...]) -> None:
        self.keep = keep

    def on_item(self, item: Batch[Signal], out: list[Chunk]) -> None:
        signal: Any
        keep = self.keep
        for signal in item:
            if type(signal) in keep:
                out.append(signal)
                if type(signal) is Finish:
                    self.finished = True
                    return

    def on_failure(self, error: Exception, out: list[Chunk]) -> bool:
        if isinstance(error, StreamFailure):  # a chain without close_on_done: the source's own failure
            aborted = error.failure.code == Code.ABORTED
            out.append(Finish(FinishReason("aborted" if aborted else "error", error.failure)))
            return True
        _log.error("a rule raised %s after close_on_done: the response ends with UNKNOWN",
                   type(error).__name__, exc_info=error)
        out.append(Finish(FinishReason.error(Code.UNKNOWN, f"{type(error).__name__}: {error}")))
        return True

    def on_end(self, out: list[Chunk]) -> None:
        out.append(Finish(FinishReason.error(Code.UNKNOWN, "the pipeline ended without a finish")))


def _kept(anomalies: bool) -> tuple[type, ...]:
    return CHUNK_TYPES if anomalies else tuple(t for t in CHUNK_TYPES if t is not Anomaly)


def to_chunks(*, anomalies: bool = False) -> Operator[Batch[Signal], Chunk]:
    """The last stage: batches to single public chunks (anomalies only when asked for), guaranteeing exactly one
    finish, last. An error that reached this point becomes an ``UNKNOWN`` error finish.

    ``chunk_operator(_ToChunks)`` with its per-batch path written out: it runs once per read, where a stage's
    ``on_item`` call, its list and the emitting loop cost ~2,000 instructions (docs/decisions/0050-fast-path.md,
    issue 34); the ends are the stage's."""
    keep = _kept(anomalies)

    def operator(source: Observable[Batch[Signal]]) -> Observable[Chunk]:
        if isinstance(source, FusedChain):  # the default chain: its chunks straight from the read (decision 0050)
            return source.chunks(keep, lambda: _ToChunks(keep))

        def subscribe(observer: abc.ObserverBase[Chunk], scheduler: abc.SchedulerBase | None = None
                      ) -> abc.DisposableBase:
            state = _ToChunks(keep)
            done = False
            send = observer.on_next

            def on_next(batch: Batch[Signal]) -> None:  # _ToChunks.on_item and the emitting, written out
                nonlocal done
                if done:
                    return
                signal: Any
                for signal in batch:
                    if type(signal) in keep:
                        send(signal)
                        if type(signal) is Finish:
                            done = True
                            observer.on_completed()
                            return

            def on_error(error: Exception) -> None:
                nonlocal done
                if done:
                    return
                done = True
                out: list[Chunk] = []
                handled = state.on_failure(error, out)
                for made in out:
                    send(made)
                if handled:
                    observer.on_completed()
                else:
                    observer.on_error(error)

            def on_completed() -> None:
                nonlocal done
                if done:
                    return
                done = True
                out: list[Chunk] = []
                state.on_end(out)
                for made in out:
                    send(made)
                observer.on_completed()

            return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator


def apply(observable: Observable[Batch[Signal]], rules: Iterable[Rule]) -> Observable[Batch[Signal]]:
    """``observable.pipe(*rules)`` for a chain of any length."""
    for rule in rules:
        observable = rule(observable)
    return observable


def _parsed(
    source: ByteSource | Observable[bytes], limits: Limits | None, format: Format | None, comments: bool
) -> Observable[Batch[Signal]]:
    observable = source if isinstance(source, Observable) else bytes_source(source, limits)
    return parse_stream(format, limits, comments=comments)(observable)


def translate_batches(
    source: ByteSource | Observable[bytes],
    *,
    rules: Iterable[Rule] | None = None,
    limits: Limits | None = None,
    format: Format | None = None,
    comments: bool = False,
) -> Observable[Batch[Signal]]:
    """The format's parse operator and the rules over a byte source, as batches (to compose further rules after
    them). ``limits`` goes to the parser and, when ``rules`` is not given, to ``protocol_rules``; ``format`` is
    ``"chat"``, ``"messages"`` or ``"responses"``, or None to detect it from the first event (``parse_stream``);
    ``comments=True`` makes each SSE comment line a ``comment`` anomaly (otherwise it costs no object)."""
    if rules is None:  # the default chain: one operator with a fast path, the same items (decision 0050)
        observable = source if isinstance(source, Observable) else bytes_source(source, limits)
        return default_chain(format, limits, comments=comments)(observable)
    return apply(_parsed(source, limits, format, comments), rules)


def translate(
    source: ByteSource | Observable[bytes],
    *,
    anomalies: bool = False,
    rules: Iterable[Rule] | None = None,
    limits: Limits | None = None,
    format: Format | None = None,
) -> Observable[Chunk]:
    """Bytes (or a ``pathlib.Path``, an ``httpx.Response``, an iterable of bytes, an Observable of bytes) to an
    ``Observable[Chunk]``. ``limits`` (default ``Limits()``) bounds what one response may carry
    (``LIMIT_EXCEEDED``). A response is classified by its status and content type first, as ``ChatClient`` does."""
    batches = translate_batches(source, rules=rules, limits=limits, format=format, comments=anomalies)
    return to_chunks(anomalies=anomalies)(batches)


def collect(
    source: ByteSource | Observable[bytes],
    *,
    anomalies: bool = False,
    rules: Iterable[Rule] | None = None,
    limits: Limits | None = None,
    format: Format | None = None,
) -> list[Chunk]:
    """Every chunk of a synchronous source, as a list (``format`` as for ``translate``)."""
    out: list[Chunk] = []
    batches = translate_batches(source, rules=rules, limits=limits, format=format, comments=anomalies)
    if isinstance(batches, FusedChain):  # the default chain: its chunks appended as it reads (decision 0050)
        keep = _kept(anomalies)
        batches.send_chunks(keep, _ToChunks(keep), out.append, out.extend)
    else:
        to_chunks(anomalies=anomalies)(batches).subscribe(on_next=out.append)
    return out
