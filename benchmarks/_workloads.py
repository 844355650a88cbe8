"""The measured work: each row of the table is one function from the same 4 KB pieces to a result.

Every function does the whole job of its row on bytes already in memory (``pieces``: the corpus cut into 4 KB
reads, built once and shared by every row) and returns what it produced, so ``run.py`` can check it. The Rx overhead
workloads (the same stages without Rx, the identity chains, the chain construction) are in ``_rx_overhead.py``.
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

__all__ = [
    "Message",
    "Pieces",
    "floor",
    "httpx_sse",
    "ours_assembled",
    "ours_chunks",
    "wire_chunks",
]

Pieces = Sequence[bytes]

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
