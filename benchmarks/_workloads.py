"""The measured work: each row of the table is one function from the same 4 KB pieces to a result.

Every function does the whole job of its row on bytes already in memory (``pieces``: the corpus cut into 4 KB
reads, built once and shared by every row) and returns what it produced, so ``run.py`` can check it.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
import reactivex
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

import operators
import operators.wire
import pipeline
from operators import Anomaly, Finish
from operators.extend import Operator, Stage, stage_operator
from pipeline import bytes_source, to_chunks

try:  # what to_chunks keeps; the explicit list below if the private name moves
    from operators.extend import CHUNK_TYPES
except ImportError:  # pragma: no cover
    CHUNK_TYPES = (operators.BlockStart, operators.TextDelta, operators.ReasoningDelta, operators.ToolCallDelta,
                   operators.BlockEnd, operators.UsageChunk, operators.Finish, operators.Anomaly, operators.Retry)

__all__ = [
    "Message",
    "Pieces",
    "chain_construction",
    "direct_stages",
    "floor",
    "httpx_sse",
    "identity_chain",
    "identity_plain",
    "ours_assembled",
    "ours_chunks",
    "wire_chunks",
]

Pieces = Sequence[bytes]

_PUBLIC = tuple(t for t in CHUNK_TYPES if t is not Anomaly)
"""What ``translate`` hands out by default (``to_chunks(anomalies=False)``)."""


@dataclass
class Message:
    """What a row assembled, in one shape for checking: the text and (id, name, arguments) per tool call.

    ``arguments`` is the raw string, or the parsed object for peers that only keep parsed arguments."""

    text: str
    calls: list[tuple[str | None, str | None, Any]] = field(default_factory=list)
    finish: str | None = None


# --------------------------------------------------------------------------------------------------- 1. the floor


def floor(loads: Callable[[bytes], Any]) -> Callable[[Pieces], int]:
    """4 KB pieces -> lines -> ``data:`` payloads -> ``loads``; counts the JSON payloads (``[DONE]`` excluded).

    The least any SSE client can do: no CR handling, no multi-line data, no event names, no validation."""

    def run(pieces: Pieces) -> int:
        rest = b""
        count = 0
        for piece in pieces:
            buffer = rest + piece if rest else piece
            lines = buffer.split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line[:6] == b"data: ":
                    payload = line[6:]
                    if payload != b"[DONE]":
                        loads(payload)
                        count += 1
        return count

    return run


FLOORS: dict[str, Callable[[bytes], Any]] = {
    "json.loads": json.loads,
    "msgspec.json.decode": msgspec.json.decode,
    "orjson.loads": orjson.loads,
}


# --------------------------------------------------------------------------------------------------- 2. httpx-sse


def httpx_sse(pieces: Pieces) -> int:
    """What ``EventSource.iter_sse`` does over ``response.iter_text()``, without the HTTP: an incremental UTF-8
    decoder (httpx's ``TextDecoder``, errors="replace"), ``SSELineDecoder``, ``SSEDecoder`` on each line with its
    trailing newline stripped, then ``sse.json()`` (``json.loads``) of each data but ``[DONE]``."""
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    line_decoder = SSELineDecoder()
    sse_decoder = SSEDecoder()
    count = 0

    def events(lines: list[str]) -> None:
        nonlocal count
        for line in lines:
            sse = sse_decoder.decode(line.rstrip("\n"))
            if sse is not None and sse.data != "[DONE]":
                sse.json()
                count += 1

    for piece in pieces:
        text = text_decoder.decode(piece)
        if text:  # httpx's TextChunker yields nothing for an empty decode
            events(line_decoder.decode(text))
    tail = text_decoder.decode(b"", True)
    if tail:
        events(line_decoder.decode(tail))
    events(line_decoder.flush())
    return count


# --------------------------------------------------------------------------------------------------- 3. this library


def ours_chunks(pieces: Pieces) -> list[Any]:
    """``pipeline.translate`` over the pieces (an iterable of bytes): every chunk, in order."""
    out: list[Any] = []
    pipeline.translate(pieces).subscribe(on_next=out.append)
    return out


def ours_assembled(pieces: Pieces) -> Message:
    """Bytes to the assembled message: ``pipeline.assemble(pipeline.collect(pieces))``."""
    message = pipeline.assemble(pipeline.collect(pieces))
    return Message(
        message.text,
        [(call.id, call.name, call.arguments) for call in message.tool_calls],
        message.finish.kind,
    )


def wire_chunks(pieces: Pieces) -> int:
    """The first stage alone: ``from_iterable(pieces).pipe(parse_sse())``, counting the ``WireChunk`` items."""
    count = 0

    def on_next(batch: Any) -> None:
        nonlocal count
        count += sum(1 for item in batch if type(item) is operators.wire.WireChunk)

    reactivex.from_iterable(pieces).pipe(operators.parse_sse()).subscribe(on_next=on_next)
    return count


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
