"""One subscription of ``default_chain`` (docs/decisions/0050-fast-path.md): the stage objects of the parser and the
default rules, the general path over them (``stage_operator`` over an internal subject, decision 0008), and the entry
of the fast path of the parser's format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeAlias

from reactivex import Observable
from reactivex.subject import Subject

from . import _parse_format
from ._accumulate_arguments import _AccumulateArguments
from ._classify_finish import _ClassifyFinish
from ._close_on_done import _CloseOnDone
from ._coalesce_identity import _CoalesceIdentity
from ._fast_framing import HotRead
from ._limits import DEFAULT_LIMITS, Limits
from ._parse_format import Format, _Detect
from ._signals import Rule, Signal
from ._sse_framing import SseFraming
from ._stage import BaseStage, Batch, stage_operator

__all__ = ["DEFAULT_STAGES", "Chain", "default_rules"]

_BYTES = (bytes, bytearray, memoryview)

RuleStage: TypeAlias = BaseStage[Batch[Signal], Signal]

DEFAULT_STAGES: tuple[Callable[[Limits], RuleStage], ...] = (
    lambda limits: _CoalesceIdentity(),
    _AccumulateArguments,
    _CloseOnDone,
    lambda limits: _ClassifyFinish(),
)
"""The default rules, in order: the one list ``default_rules`` (``pipeline.protocol_rules``) and ``Chain`` build."""

_KNOWN = (_CoalesceIdentity, _AccumulateArguments, _CloseOnDone, _ClassifyFinish)


def default_rules(limits: Limits | None = None) -> list[Rule]:
    """The default rules as operators, fresh: ``coalesce_identity -> accumulate_arguments -> close_on_done ->
    classify_finish`` (``limits``, default ``Limits()``, bounds the arguments, the tool calls and the text)."""
    chosen = DEFAULT_LIMITS if limits is None else limits
    return [stage_operator(partial(make, chosen)) for make in DEFAULT_STAGES]


class Chain:
    """One subscription's stages, the general path over them, and the fast path's entry (``hot``): a ``FastChain``."""

    __slots__ = ("accumulate", "classify", "close", "coalesce", "ended", "format_parser", "generals", "hot",
                 "hot_reads", "out", "parser", "shape", "subject")

    def __init__(self, format: Format | None, limits: Limits, hot_reads: Mapping[type, HotRead], *,
                 comments: bool = False) -> None:
        parsers = _parse_format.PARSERS  # looked up now, as parse_stream does
        self.parser: BaseStage[bytes, Signal] = (
            _Detect(limits, comments=comments) if format is None else parsers[format](limits, comments=comments)
        )
        stages = [make(limits) for make in DEFAULT_STAGES]
        # the fast path knows these four stages; a default chain of other stages runs on the general path only
        self.hot_reads = hot_reads if tuple(map(type, stages)) == _KNOWN else {}
        self.coalesce: Any
        self.accumulate: Any
        self.close: Any
        self.classify: Any
        self.coalesce, self.accumulate, self.close, self.classify = (stages + [None] * 4)[:4]
        self.out: list[Signal] = []
        self.ended: bool | Exception = False  # True once the general path completed, or the error it ended with
        self.format_parser: SseFraming | None = None
        self.hot: HotRead | None = None
        self.shape: Any = None  # what a format's fast path keeps between its reads; any general read forgets it
        self.generals = 0  # reads given to the general path: a hot read that gave none made delta chunks only
        self.subject: Subject[bytes] = Subject()
        observable: Observable[Any] = stage_operator(lambda: self.parser, accepts=_BYTES)(self.subject)
        for stage in stages:
            observable = stage_operator(_returning(stage))(observable)
        observable.subscribe(self._collect, self._errored, self._completed)

    # -- the general path's end -----------------------------------------------------------------------------------

    def _collect(self, batch: Batch[Signal]) -> None:
        self.out.extend(batch)

    def _errored(self, error: Exception) -> None:
        self.ended = error

    def _completed(self) -> None:
        self.ended = True

    def general(self, piece: Any) -> None:
        """One read through the stage operators, as the rule chain runs it (the fast path's ``shape`` forgotten)."""
        self.shape = None
        self.generals += 1
        self.subject.on_next(piece)
        if self.hot is None:
            self._resolve()

    def _resolve(self) -> None:
        """Once the parser is known (named, or detected from the first event), the fast path of its format."""
        parser: Any = self.parser
        if type(parser) is _Detect:
            parser = parser.inner
        if parser is None:
            return
        hot = self.hot_reads.get(type(parser))
        if hot is not None:
            self.format_parser = parser
            self.hot = hot

    # -- one read -------------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Before the end of the bytes: complete lines the fast path kept open are read by the framing (its end reads
        only an open line)."""
        parser = self.format_parser
        if parser is not None and parser.pending and parser.pending[0].find(b"\n") >= 0:
            held = b"".join(parser.pending)
            parser.pending.clear()
            parser.open_bytes = 0
            self.general(held)


def _returning(stage: BaseStage[Batch[Signal], Signal]) -> Callable[[], BaseStage[Batch[Signal], Signal]]:
    return lambda: stage

