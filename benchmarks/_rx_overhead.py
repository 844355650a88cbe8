"""The Rx overhead workloads of ``benchmarks.run``: the library's stages driven without Rx (method 1), a chain of
identity stages with and without Rx (method 2), and the chain construction time. The rows' other workloads (the
floor, httpx-sse, ours) are in ``_workloads.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import operators
import pipeline
from benchmarks._workloads import Pieces
from operators import Anomaly, Finish
from operators.extend import Operator, Stage, stage_operator
from pipeline import bytes_source, to_chunks

try:  # what to_chunks keeps; the explicit list below if the private name moves
    from operators.extend import CHUNK_TYPES
except ImportError:  # pragma: no cover
    CHUNK_TYPES = (operators.BlockStart, operators.TextDelta, operators.ReasoningDelta, operators.ToolCallDelta,
                   operators.BlockEnd, operators.UsageChunk, operators.Finish, operators.Anomaly, operators.Retry)

__all__ = [
    "IDENTITY_OPERATORS",
    "chain_construction",
    "direct_stages",
    "identity_chain",
    "identity_plain",
    "stage_factories",
]

_PUBLIC = tuple(t for t in CHUNK_TYPES if t is not Anomaly)
"""What ``translate`` hands out by default (``to_chunks(anomalies=False)``)."""


# --------------------------------------------------------------------------------------------------- Rx overhead
#
# Method 1 (the target's number): the same stages, the same per-event work, without Rx. The stage objects of
# ``parse_sse()`` and ``protocol_rules()`` (taken from each ``stage_operator``'s closure, so the chain measured is what
# the library composes) are driven by plain method calls that keep ``stage_operator``'s and ``to_chunks``'s semantics:
# a stage's output goes to the next stage; a stage that finishes emits, then completes downstream (``on_end``); the
# sink keeps public chunks, stops after the finish and appends them to a list, as ``subscribe(on_next=out.append)``
# does. Rx overhead per event = (translate - direct) / events, both timed interleaved, best of many runs: it is the
# difference of two close numbers, so ``run.py`` measures it in a dedicated pass on a medium stream.
#
# Method 2 (a cross-check that does not depend on the stages): a chain of the same shape made of identity stages
# over ``bytes_source`` (one stage turning each read into the same number of chunk objects the real chain hands out
# per read, four passing the batch on, then ``to_chunks``, which emits every chunk on its own), minus the same stage
# calls and the same per-chunk filter and append in a plain loop. What Rx costs per read and per chunk, whatever
# the stages do.


def stage_factories(chain: Sequence[Operator[Any, Any]]) -> list[Callable[[], Stage[Any, Any]]] | None:
    """The stage factory behind each operator, or None when an operator is not a ``stage_operator``."""
    factories: list[Callable[[], Stage[Any, Any]]] = []
    for operator in chain:
        code = getattr(operator, "__code__", None)
        closure = getattr(operator, "__closure__", None)
        if code is None or closure is None or "factory" not in code.co_freevars:
            return None
        factories.append(closure[code.co_freevars.index("factory")].cell_contents)
    return factories


class _Direct:
    def __init__(self, factories: Sequence[Callable[[], Stage[Any, Any]]]) -> None:
        self.stages = [factory() for factory in factories]
        self.stopped = [False] * len(self.stages)
        self.out: list[Any] = []
        self.done = False

    def run(self, pieces: Pieces) -> list[Any]:
        stopped = self.stopped
        for piece in pieces:
            if stopped[0]:  # the first stage finished: the source is disposed
                break
            self.push(0, piece)
        if not stopped[0]:
            self.complete(0)
        return self.out

    def push(self, at: int, batch: Any) -> None:
        stages = self.stages
        stopped = self.stopped
        while at < len(stages):
            if stopped[at]:
                return
            stage = stages[at]
            out: list[Any] = []
            stage.on_batch(batch, out)
            if stage.finished:
                stopped[at] = True
                if out:
                    self.push(at + 1, out)
                self.complete(at + 1)
                return
            if not out:
                return
            batch = out
            at += 1
        self.sink(batch)

    def complete(self, at: int) -> None:
        if at == len(self.stages):
            return
        if self.stopped[at]:
            return
        out: list[Any] = []
        self.stages[at].on_end(out)
        self.stopped[at] = True
        if out:
            self.push(at + 1, out)
        self.complete(at + 1)

    def sink(self, batch: Any) -> None:
        if self.done:
            return
        out = self.out
        for item in batch:
            kind = type(item)
            if kind in _PUBLIC:
                out.append(item)
                if kind is Finish:
                    self.done = True
                    return


def direct_stages(factories: Sequence[Callable[[], Stage[Any, Any]]]) -> Callable[[Pieces], list[Any]]:
    """Method 1: the library's stages without Rx (see above); returns the chunks."""

    def run(pieces: Pieces) -> list[Any]:
        return _Direct(factories).run(pieces)

    return run


class _Wrap:
    """Each read becomes ``items`` chunk objects (the same prebuilt ones every time: no allocation to measure)."""

    finished = False

    def __init__(self, items: int = 1) -> None:
        self.batch: list[Any] = [operators.TextDelta(0, "x")] * items

    def on_batch(self, batch: Any, out: list[Any]) -> None:
        out.extend(self.batch)

    def on_end(self, out: list[Any]) -> None:
        return None

    def on_failure(self, error: Exception, out: list[Any]) -> bool:
        return False


class _Identity(_Wrap):
    def on_batch(self, batch: Any, out: list[Any]) -> None:
        out.extend(batch)


IDENTITY_OPERATORS = 5


def identity_chain(pieces: Pieces, items: int) -> int:
    """Method 2, with Rx: ``bytes_source`` -> wrap (``items`` chunks a read) -> 4 x identity -> ``to_chunks``."""
    observable = stage_operator(lambda: _Wrap(items))(bytes_source(pieces))
    for _ in range(IDENTITY_OPERATORS - 1):
        observable = stage_operator(_Identity)(observable)
    out: list[Any] = []
    to_chunks()(observable).subscribe(on_next=out.append)
    return len(out)


def identity_plain(pieces: Pieces, items: int) -> int:
    """Method 2, without Rx: the same stage calls, and the same filter and append per chunk, in a loop."""
    stages: list[Stage[Any, Any]] = [_Wrap(items), *(_Identity() for _ in range(IDENTITY_OPERATORS - 1))]
    out: list[Any] = []
    for piece in pieces:
        batch: Any = piece
        for stage in stages:
            out_batch: list[Any] = []
            stage.on_batch(batch, out_batch)
            batch = out_batch
        for item in batch:
            if type(item) in _PUBLIC:
                out.append(item)
    return len(out)


def chain_construction(count: int) -> tuple[float, float]:
    """Seconds per chain: (build only ``translate(b"")``, build + subscribe + run it to its finish)."""
    import time

    sink: list[Any] = []
    start = time.perf_counter()
    for _ in range(count):
        pipeline.translate(b"")
    build = (time.perf_counter() - start) / count
    start = time.perf_counter()
    for _ in range(count):
        pipeline.translate(b"").subscribe(on_next=sink.append)
    whole = (time.perf_counter() - start) / count
    if len(sink) != count or not all(type(item) is Finish for item in sink):
        raise AssertionError("translate(b'') should give exactly one finish per chain")
    return build, whole
