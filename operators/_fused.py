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
"""

from __future__ import annotations

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

from . import _parse_format
from ._chain import Chain
from ._limits import DEFAULT_LIMITS, Limits
from ._parse_format import HOT_READS, Format
from ._signals import Signal
from ._sse_framing import SLICE
from ._stage import Batch, Operator, _subscribing

__all__ = ["default_chain"]


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
        def subscribe(
            observer: abc.ObserverBase[Batch[Signal]], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            chain = Chain(format, chosen, HOT_READS, comments=comments)
            upstream = SingleAssignmentDisposable()
            stopped = False

            def emit() -> None:
                nonlocal stopped
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
                    elif len(piece) <= SLICE:
                        if not hot(chain, piece):
                            chain.general(piece)
                    else:  # as the framing reads a long read: slice by slice, as separate reads
                        for start in range(0, len(piece), SLICE):
                            part = piece[start : start + SLICE]
                            if not hot(chain, part):
                                chain.general(part)
                            if chain.ended is not False:
                                break
                except Exception as exc:  # contained as stage_operator contains a stage's: never into the producer
                    chain.ended = exc
                out = chain.out
                if out and chain.ended is False:  # emit() inlined: this runs once per read
                    chain.out = []
                    observer.on_next(out)
                else:
                    emit()

            def on_error(error: Exception) -> None:
                if not stopped:
                    chain.flush()
                    if chain.ended is False:
                        chain.subject.on_error(error)
                    emit()

            def on_completed() -> None:
                if not stopped:
                    chain.flush()
                    if chain.ended is False:
                        chain.subject.on_completed()
                    emit()

            with _subscribing(upstream):
                upstream.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return upstream

        return Observable(subscribe)

    return operator
