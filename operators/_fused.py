"""``default_chain``: the format's parse operator and the default rules, run as one operator with a fast path.

``default_chain(format, limits)`` is ``parse_stream(format, limits)`` followed by ``coalesce_identity ->
accumulate_arguments -> close_on_done -> classify_finish`` (what ``pipeline.protocol_rules`` returns): the same
``Operator[bytes, Batch[Signal]]``, giving the same items (docs/decisions/0050-fast-path.md). It is how
``pipeline.translate`` runs when no ``rules=`` is given; a custom chain keeps the general path.

Per subscription it owns the very stage objects the rule operators run (fresh ones), composed by
``stage_operator`` over an internal subject: the *general path*, with every guarantee of decision 0008. A read goes
there unless the fast path (the format's, named by its registry record: ``_fast_chat.py``,
``operators/messages/_fast.py``, ...) can take it: a read whose complete events are all single ``data:``
lines of one shape (checked with a few bytes operations), decoded in one pass, whose events are the hot deltas (text,
reasoning, argument fragments) of blocks already open. Those are applied inline to the same stage objects (the state
each rule would have reached) and their chunks appended; from the first event that is anything else, the rest of the
read goes to the general path, so anything unusual (a block opening, a finish, usage, an anomaly, a limit, an error)
is decided by the rules themselves. The output of one read is one batch, as before.

The Observable it returns (``FusedChain``) can also give the chunks themselves (``chunks(keep, ends)``):
``pipeline.to_chunks`` applied right after it asks for them, so the default chain emits public chunks from the read
itself, with no batch hop between (the chunks and the ends exactly ``to_chunks``'s: the kept types until the finish,
``ends`` deciding a failure or an end without a finish).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

from . import _parse_format
from ._chain import Chain
from ._chunks import Finish
from ._limits import DEFAULT_LIMITS, Limits
from ._parse_format import HOT_READS, Format
from ._signals import Signal
from ._sse_framing import SLICE
from ._stage import Batch, Operator, _subscribing

__all__ = ["ChunkEnds", "Feeding", "FusedChain", "default_chain"]


class Feeding(Protocol):
    """A byte source that can run with plain callbacks (``pipeline``'s ``bytes_source``): ``feed(on_next, on_error,
    on_completed)`` is its subscribe without the observer reactivex wraps around them (a call per read fewer). It
    calls nothing after its end, and returns its disposable."""

    def feed(self, on_next: Callable[[bytes], None], on_error: Callable[[Exception], None],
             on_completed: Callable[[], None]) -> abc.DisposableBase: ...


class ChunkEnds(Protocol):
    """``to_chunks``' ends (``FusedChain.chunks``): the chunks that close a response that failed (``on_failure``:
    True when they finish it, False to pass the error on) or ended without a finish (``on_end``)."""

    def on_failure(self, error: Exception, out: list[Any]) -> bool: ...

    def on_end(self, out: list[Any]) -> None: ...


def default_chain(
    format: Format | None = None, limits: Limits | None = None, *, comments: bool = False
) -> Operator[bytes, Batch[Signal]]:
    """``parse_stream(format, limits, comments=comments)`` and the default rules as one operator (see the module
    docstring)."""
    chosen = DEFAULT_LIMITS if limits is None else limits
    if format is not None and format not in _parse_format.PARSERS:
        known = ", ".join(repr(name) for name in _parse_format.PARSERS)
        raise ValueError(f"format is one of {known} (or None to detect it), got {format!r}")

    def operator(source: Observable[bytes]) -> Observable[Batch[Signal]]:
        return FusedChain(source, format, chosen, comments)

    return operator


def _nothing() -> None:
    return None


def _raise(error: Exception) -> None:
    raise error


def _long(chain: Chain, hot: Any, piece: bytes) -> None:
    """A read longer than ``SLICE``, as the framing reads it: slice by slice, as separate reads."""
    for start in range(0, len(piece), SLICE):
        part = piece[start : start + SLICE]
        if not hot(chain, part):
            chain.general(part)
        if chain.ended is not False:
            break


class FusedChain(Observable[Batch[Signal]]):
    """``default_chain(format, limits)(source)``: the batches of the chain, or (``chunks``) its public chunks."""

    def __init__(self, source: Observable[bytes], format: Format | None, limits: Limits, comments: bool) -> None:
        super().__init__(self._batches)
        self.source = source
        self.format = format
        self.limits = limits
        self.comments = comments

    def chunks(self, keep: tuple[type, ...], ends: Callable[[], ChunkEnds]) -> Observable[Any]:
        """The chunks ``to_chunks`` makes of the batches: each item whose type is in ``keep``, one per ``on_next``,
        until the first ``Finish`` (then completed); a failure or an end without a finish as ``ends()`` decides."""
        def subscribe(observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
                      ) -> abc.DisposableBase:
            return self._chunks(keep, ends(), observer.on_next, observer.on_completed, observer.on_error, scheduler)

        return Observable(subscribe)

    def send_chunks(self, keep: tuple[type, ...], ends: ChunkEnds, send: Callable[[Any], None],
                    send_all: Callable[[list[Any]], object] | None = None) -> None:
        """``chunks(keep, ends)`` with no Observable after it: each chunk to ``send`` (``pipeline.collect``'s
        ``list.append``, for a source that runs within its subscription), or a read's delta chunks all at once to
        ``send_all`` when given (its ``list.extend``). An error ``ends`` does not handle is raised, as subscribing
        with no ``on_error`` raises it."""
        self._chunks(keep, ends, send, _nothing, _raise, None, send_all)

    def _subscribe_source(self, chain: Chain, on_next: Callable[[bytes], None], upstream: SingleAssignmentDisposable,
                          end: Callable[[], None], scheduler: abc.SchedulerBase | None) -> SingleAssignmentDisposable:
        def on_error(error: Exception) -> None:
            if chain.ended is False:
                chain.flush()
                if chain.ended is False:
                    chain.subject.on_error(error)
            end()

        def on_completed() -> None:
            if chain.ended is False:
                chain.flush()
                if chain.ended is False:
                    chain.subject.on_completed()
            end()

        feed = getattr(self.source, "feed", None)
        with _subscribing(upstream):
            if feed is None:
                upstream.disposable = self.source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
                return upstream
            try:  # as Observable.subscribe runs a subscribe function: what it raises ends the stream, once
                upstream.disposable = feed(on_next, on_error, on_completed)
            except Exception as exc:
                if chain.ended is not False:
                    raise
                on_error(exc)
        return upstream

    def _batches(self, observer: abc.ObserverBase[Batch[Signal]], scheduler: abc.SchedulerBase | None = None
                 ) -> abc.DisposableBase:
        chain = Chain(self.format, self.limits, HOT_READS, comments=self.comments)
        upstream = SingleAssignmentDisposable()
        stopped = False

        def emit() -> None:
            nonlocal stopped
            if stopped:
                return
            out = chain.out
            if out:
                chain.out = []
                observer.on_next(out)
            ended = chain.ended
            if ended is not False:
                stopped = True
                if ended is True:
                    observer.on_completed()
                else:
                    observer.on_error(ended)
                upstream.dispose()

        def on_next(piece: bytes) -> None:
            if stopped:
                return
            try:
                hot = chain.hot  # this runs once per read
                if hot is None or type(piece) is not bytes:
                    chain.general(piece)
                elif len(piece) > SLICE:
                    _long(chain, hot, piece)
                elif not hot(chain, piece):
                    chain.general(piece)
            except Exception as exc:  # contained as stage_operator contains a stage's: never into the producer
                chain.ended = exc
            out = chain.out
            if out and chain.ended is False:  # emit() inlined: this runs once per read
                chain.out = []
                observer.on_next(out)
            else:
                emit()

        return self._subscribe_source(chain, on_next, upstream, emit, scheduler)

    def _chunks(self, keep: tuple[type, ...], ends: ChunkEnds, send: Callable[[Any], None],
                completed: Callable[[], None], errored: Callable[[Exception], None],
                scheduler: abc.SchedulerBase | None,
                send_all: Callable[[list[Any]], object] | None = None) -> abc.DisposableBase:
        chain = Chain(self.format, self.limits, HOT_READS, comments=self.comments)
        upstream = SingleAssignmentDisposable()
        stopped = False
        if send_all is None:
            def send_all(made: list[Any]) -> None:
                for chunk in made:
                    send(chunk)

        def stop(out: list[Any], handled: bool = True, error: Exception | None = None) -> None:
            nonlocal stopped
            stopped = True
            for made in out:
                send(made)
            if handled or error is None:
                completed()
            else:
                errored(error)
            upstream.dispose()

        def end() -> None:  # the batch not sent yet, and the chain's end: to_chunks' on_completed / on_error
            if stopped:
                return
            out = chain.out
            if out:
                chain.out = []
                for signal in out:
                    if type(signal) in keep:
                        send(signal)
                        if type(signal) is Finish:
                            chain.ended = True
                            stop([])
                            return
            out = []
            ended = chain.ended
            if ended is True:
                ends.on_end(out)
                stop(out)
            elif ended is not False:
                stop(out, ends.on_failure(ended, out), ended)

        def on_next(piece: bytes) -> None:
            if stopped:
                return
            deltas = False  # the read made delta chunks only (a fast path's, no general read): all kept, no finish
            try:
                hot = chain.hot  # this runs once per read
                if hot is None or type(piece) is not bytes:
                    chain.general(piece)
                elif len(piece) > SLICE:
                    _long(chain, hot, piece)
                else:
                    generals = chain.generals
                    if not hot(chain, piece):
                        chain.general(piece)
                    else:
                        deltas = chain.generals == generals
            except Exception as exc:  # contained as stage_operator contains a stage's: never into the producer
                chain.ended = exc
            out = chain.out
            if out and chain.ended is False:  # the batch, as to_chunks sends it: the kept chunks, up to the finish
                chain.out = []
                if deltas:
                    send_all(out)
                    return
                for signal in out:
                    if type(signal) in keep:
                        send(signal)
                        if type(signal) is Finish:
                            chain.ended = True  # (its general path may not have ended yet: nothing follows)
                            stop([])
                            return
            else:
                end()

        return self._subscribe_source(chain, on_next, upstream, end, scheduler)
