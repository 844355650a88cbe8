"""The fast path's framing (docs/decisions/0050-fast-path.md): a read's complete events, when they are plain, as
their decoded payloads, and the hand-over of the rest of the read to the general path.

Framing (``decoded``): the parser's framing holds no half event, the read has no CR and cannot cross
``max_event_bytes``, and its complete events are all ``<header><payload>`` with one header (``data: ``, or
``event: <name>\n`` + ``data: ``) and no other line (a count of the newlines says so): then one ``split`` gives the
payloads, each decoded alone, as the general path decodes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import msgspec

from ._signals import Signal
from ._sse_framing import SseFraming

__all__ = ["FastChain", "HotRead", "decoded", "finish"]


class FastChain(Protocol):
    """What a format's fast path sees of one subscription (``_chain.Chain``): the parser it reads past, the rule
    stages, whose interface it calls (docs/decisions/0050-fast-path.md, "The stages' interface"), the batch being
    built, and the general path."""

    format_parser: Any
    coalesce: Any
    accumulate: Any
    close: Any
    out: list[Signal]

    def general(self, piece: Any) -> None: ...


HotRead: TypeAlias = Callable[[FastChain, bytes], bool]
"""A format's fast path, ``read(chain, piece)``: False leaves the read to the general path untouched; True means it
took the read."""

_DATA = b"data: "
_KEPT: tuple[list[Any], bytes, int] = ([], b"\n\n", 0)
"""``decoded``'s answer for a read that only continues the open line: no event, and the read taken whole (the
callers' ``cut + 2 == len(buf)``)."""


def decoded(decoder: Any, parser: SseFraming, piece: bytes, headers: tuple[bytes, ...] | None = None
            ) -> tuple[list[Any], bytes, int] | None:
    """The read's complete events decoded, the framing's open line taken over: ``(values, the read, where its last
    event ends)``, or None when the read is not plain (``headers``: the only headers accepted, when given). One event
    (how a live stream arrives) costs a few ``find`` calls (not ``in``: ``in`` tries its needle as an int first,
    raising inside) and is decoded alone; several are split with one ``split`` and each decoded alone, exactly as the
    general path decodes them. A read that only continues the open line (no line end, inside the line limit) is
    kept in the framing's pending pieces as the framing keeps it, so an event arriving in small reads is joined
    once, when a line end arrives: linear in its bytes whatever the read size (``_KEPT``)."""
    if parser.pending_cr or parser.at_start or parser.head or parser.finished:
        return None
    pending = parser.pending
    if pending and piece.find(b"\n") < 0:  # it cannot end the open line: kept as the framing keeps it, never joined
        if piece.find(b"\r") >= 0 or parser.open_bytes + len(piece) > parser.event_limit:
            return None
        parser.open_bytes += len(piece)
        pending.append(piece)
        return _KEPT
    if parser.data or parser.event:
        return None
    buf = b"".join([*pending, piece]) if pending else piece
    cut = buf.rfind(b"\n\n")
    if cut <= 0 or len(buf) > parser.event_limit or buf.find(b"\r") >= 0:
        return None
    first = buf.find(b"\n")
    single: bytes | None = None
    if buf[:6] == _DATA:
        header = _DATA
        if first == cut:  # one event of one line
            single = buf[6:cut]
    elif buf[:7] == b"event: ":
        header = buf[: first + 1] + _DATA
        if not buf.startswith(header) or (headers is not None and header not in headers):
            return None
        if buf.find(b"\n", first + 1) == cut:  # one event: its name and one data line
            single = buf[len(header) : cut]
    else:
        return None
    try:
        if single is not None:
            values: list[Any] = [decoder.decode(single)]
        else:
            payloads = buf[len(header) : cut].split(b"\n\n" + header)
            lines = header.count(b"\n")  # every newline is one of the events' own: no other line anywhere
            if buf.count(b"\n", 0, cut) != (len(payloads) - 1) * (2 + lines) + lines:
                return None
            decode = decoder.decode
            values = [decode(payload) for payload in payloads]
    except (msgspec.DecodeError, RecursionError):
        return None
    if pending:
        pending.clear()
    parser.open_bytes = 0
    return values, buf, cut


def finish(chain: FastChain, parser: SseFraming, buf: bytes, cut: int, applied: int, total: int) -> bool:
    """After ``applied`` of ``total`` events (those ending at ``cut``): the rest of the read to the general path, or
    the tail kept open."""
    tail = buf[cut + 2 :]
    if applied < total:
        rest = buf[:cut].split(b"\n\n", applied)[applied]
        _hand_over(chain, parser, rest + b"\n\n" + tail)
    elif tail:
        end = tail.rfind(b"\n")
        if end < 0:
            parser.pending.append(tail)
            parser.open_bytes = len(tail)
        elif _inert(tail[:end]):  # kept open whole, so the next read starts at an event (``Chain.flush``)
            parser.pending.append(tail)
            parser.open_bytes = len(tail) - end - 1
        else:
            _hand_over(chain, parser, tail)
    return True


def _hand_over(chain: FastChain, parser: SseFraming, rest: bytes) -> None:
    """The rest of a read to the general path as one framing pass, whatever its length (the framing slices a long
    read, and what it reports after a finish depends on the slice): all but its last line end waits as the open line,
    the last line end arrives as the read."""
    end = rest.rfind(b"\n")
    parser.pending.append(rest[:end])
    chain.general(rest[end:])


def _inert(lines: bytes) -> bool:
    """Complete lines whose framing emits nothing until their event ends: ``data:`` and ``event:`` lines only."""
    return all(line[:5] == b"data:" or line[:6] == b"event:" for line in lines.split(b"\n"))
