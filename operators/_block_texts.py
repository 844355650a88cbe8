"""The one home of block-text accumulation, shared by ``close_on_done`` and ``pipeline.Assembler``.

Each text or reasoning block holds one UTF-8 buffer rather than a list of small ``str`` fragments (about 55 bytes of
object overhead each): a long response keeps memory flat (docs/decisions/0008-batches-between-operators.md).
Lone surrogates a gateway may send survive the round trip (``surrogatepass``).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["BlockTexts"]


class BlockTexts:
    """Text per block index: ``open(i)``, ``add(i, text)``, ``buffer(i)``, ``text(i)``, ``pop(i)``."""

    __slots__ = ("_buffers", "buffer")

    def __init__(self) -> None:
        self._buffers: dict[int, bytearray] = {}
        self.buffer: Callable[[int], bytearray | None] = self._buffers.get
        """``buffer(i)``: block ``i``'s UTF-8 buffer itself (None when it is not open), which ``close_on_done`` appends
        to; a bound ``dict.get``, so a C call on the per-delta path."""

    def open(self, index: int) -> None:
        self._buffers[index] = bytearray()

    def add(self, index: int, text: str) -> int:
        """Appends ``text`` to block ``index``; returns the UTF-8 bytes added (what ``max_text_bytes`` counts)."""
        encoded = text.encode("utf-8", "surrogatepass")
        self._buffers[index] += encoded
        return len(encoded)

    def text(self, index: int) -> str:
        return self._buffers[index].decode("utf-8", "surrogatepass")

    def pop(self, index: int) -> str:
        return self._buffers.pop(index).decode("utf-8", "surrogatepass")

    def clear(self) -> None:
        self._buffers.clear()
