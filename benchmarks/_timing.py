"""What the format rows share with their helpers: how a stream is cut into reads, and how one call is timed (its own
module, so ``benchmarks.formats`` and the modules it reports with import it one way)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

__all__ = ["PIECE", "split", "timed"]

PIECE = 4096


def split(data: bytes, read: str) -> list[bytes]:
    """``4k``: 4 KB pieces; ``event``: one piece per SSE event (its blank line included: CRLF CRLF in a stream framed
    with CRLF, as Gemini's)."""
    if read == "event":
        end = b"\r\n\r\n" if data.find(b"\r\n\r\n") >= 0 else b"\n\n"
        return [event + end for event in data.split(end)[:-1]]
    return [data[i : i + PIECE] for i in range(0, len(data), PIECE)]


def timed(function: Callable[[], object]) -> float:
    """Seconds ``function()`` takes, gc collected first and off while timed (``format_repair``, ``_format_peers``)."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        function()
        return time.perf_counter() - started
    finally:
        gc.enable()
