"""The fast path's framing (docs/decisions/0050-fast-path.md): a read's complete events, when they are plain, as
their decoded payloads, and the hand-over of the rest of the read to the general path.

Framing (``decoded``): the parser's framing holds no half event, the read cannot cross ``max_event_bytes``, its
line ends are LF or CRLF (turned into LF as the framing turns them: a lone CR, or a CR ending the read, goes general),
and its complete events are all ``<header><payload>`` with one header (``data: ``, or ``event: <name>\n`` +
``data: ``) and no other line: one ``split`` gives the payloads, in which no line end may be left (``10 in``
over them joined: one ``memchr``), each decoded alone, as the general path decodes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import msgspec

from ._signals import Signal
from ._sse_framing import SseFraming

__all__ = ["FastChain", "HotRead", "decoded", "finish", "single", "single_crlf"]


class FastChain(Protocol):
    """What a format's fast path sees of one subscription (``_chain.Chain``): the parser it reads past, the rule
    stages, whose interface it calls (docs/decisions/0050-fast-path.md, "The stages' interface"), the batch being
    built, and the general path."""

    format_parser: Any
    coalesce: Any
    accumulate: Any
    close: Any
    out: list[Signal]
    shape: Any
    """What the format's fast path keeps between its reads (None at first): ``general`` sets it back to None, so it
    holds only while every read since it was set was the fast path's."""

    def general(self, piece: Any) -> None: ...


HotRead: TypeAlias = Callable[[FastChain, bytes], bool]
"""A format's fast path, ``read(chain, piece)``: False leaves the read to the general path untouched; True means it
took the read."""

_DATA = b"data: "
_BETWEEN = b"\n\ndata: "
_CRLF_BETWEEN = b"\r\n\r\ndata: "
_KEPT: tuple[list[Any], bytes, int] = ([], b"\n\n", 0)
"""``decoded``'s answer for a read that only continues the open line: no event, and the read taken whole (the
callers' ``cut + 2 == len(buf)``)."""


def single(parser: SseFraming, piece: bytes, header: bytes, clean: bool = False) -> bytes | None:
    """The payload of a read that is one whole event, ``<header><payload>\\n\\n`` with no other line end, at an event
    boundary of the framing (how a live stream arrives), or None (then ``decoded``, which reads it as it reads any):
    ``decoded``'s checks for that read in one call, so a format's fast path decodes and applies the event itself
    (its ``*_read``: no list of one value, no run of one delta). Changes nothing. ``clean``: the framing is known to
    be at an event boundary with nothing held (the read before was one whole event the fast path took, and no general
    read came since: ``FastChain.shape``), so its state is not looked at again."""
    if (piece[-2:] != b"\n\n" or piece[: len(header)] != header or len(piece) > parser.event_limit
            or (not clean and (parser.pending or parser.pending_cr or parser.at_start or parser.head or parser.finished
                              or parser.data or parser.event))):
        return None
    payload = piece[len(header) : -2]
    if 10 in payload or 13 in payload:
        return None
    return payload


def single_crlf(parser: SseFraming, piece: bytes) -> bytes | None:
    """``single`` for a read that is one whole ``data:`` event framed with CRLF (``data: <payload>\\r\\n\\r\\n``,
    Google's), read as ``_crlf`` reads it. Changes nothing."""
    if (piece[-4:] != b"\r\n\r\n" or piece[:6] != _DATA or parser.pending or parser.pending_cr or parser.at_start
            or parser.head or parser.finished or parser.data or parser.event or len(piece) > parser.event_limit):
        return None
    payload = piece[6:-4]
    if 10 in payload or 13 in payload:
        return None
    return payload


def decoded(decoder: Any, parser: SseFraming, piece: bytes, headers: tuple[bytes, ...] | None = None,
            likely: tuple[bytes, ...] = ()) -> tuple[list[Any], bytes, int] | None:
    """The read's complete events decoded, the framing's open line taken over: ``(values, the read, where its last
    event ends)``, or None when the read is not plain (``headers``: the only headers accepted, when given;
    ``likely``: the ``event:`` headers tried first, by a slice). A read that only continues the open line (no line
    end, inside the line limit) is kept in the framing's pending pieces as the framing keeps it, so an event arriving
    in small reads is joined once, when a line end arrives: linear in its bytes whatever the read size (``_KEPT``).

    Written for the read of one event (how a live stream arrives), with no ``find``: on CPython 3.11 ``bytes.find``,
    ``rfind``, ``count`` and ``startswith`` parse their arguments as a tuple (~1,200 instructions a call, more than
    the checks they make), while ``10 in buf`` (an int needle: one ``memchr``), a slice compared and ``split`` do not.
    Several events are split with one ``split`` and each decoded alone, exactly as the general path decodes them."""
    if parser.pending_cr or parser.at_start or parser.head or parser.finished:
        return None
    pending = parser.pending
    if pending and 10 not in piece:  # it cannot end the open line: kept as the framing keeps it, never joined
        if 13 in piece or parser.open_bytes + len(piece) > parser.event_limit:
            return None
        parser.open_bytes += len(piece)
        pending.append(piece)
        return _KEPT
    if parser.data or parser.event:
        return None
    buf = b"".join([*pending, piece]) if pending else piece
    if 13 in buf:  # CRLF line ends (Google's)
        if piece[-1:] == b"\r":  # its LF may be the next read's first byte (the framing's ``pending_cr``): general
            return None
        if buf[:6] == _DATA:
            return _crlf(decoder, parser, buf)
        buf = buf.replace(b"\r\n", b"\n")  # named events: turned into LF line ends, as the framing turns them
        if 13 in buf:
            return None
    if len(buf) > parser.event_limit:
        return None
    cut = len(buf) - 2 if buf[-2:] == b"\n\n" else buf.rfind(b"\n\n")  # (the last blank line: a read of events)
    if cut <= 0:
        return None
    if buf[:6] == _DATA:
        header = _DATA
        between = _BETWEEN
    elif buf[:7] == b"event: ":
        for header in likely:
            if buf[: len(header)] == header:
                break
        else:
            header = buf[: buf.find(b"\n") + 1] + _DATA
            if buf[: len(header)] != header:
                return None
        if headers is not None and header not in headers:
            return None
        between = b"\n\n" + header
    else:
        return None
    payload = buf[len(header) : cut]
    try:
        if 10 not in payload:  # one event of one line
            values: list[Any] = [decoder.decode(payload)]
        else:
            payloads = payload.split(between)
            if 10 in b"".join(payloads):  # every newline is one of the events' own: no other line anywhere
                return None
            decode = decoder.decode
            values = [decode(payload) for payload in payloads]
    except (msgspec.DecodeError, RecursionError):
        return None
    if pending:
        pending.clear()
    parser.open_bytes = 0
    return values, buf, cut


def _crlf(decoder: Any, parser: SseFraming, buf: bytes) -> tuple[list[Any], bytes, int] | None:
    """``decoded`` for a read of ``data:`` events whose line ends are all CRLF, read as they are (no ``replace``: it
    costs more than the rest of the framing): each CR and each LF before the last blank line is one of the events'
    own. The ``cut`` returned is the last blank line's CRLF (``buf[cut - 1]`` is its LF: ``finish`` knows the read
    by it), so ``cut + 2 == len(buf)`` still means the whole read."""
    cut = len(buf) - 4 if buf[-4:] == b"\r\n\r\n" else buf.rfind(b"\r\n\r\n")
    if cut <= 0 or len(buf) > parser.event_limit:
        return None
    payload = buf[6:cut]
    try:
        if 13 not in payload and 10 not in payload:  # one event of one line
            values: list[Any] = [decoder.decode(payload)]
        else:
            payloads = payload.split(_CRLF_BETWEEN)
            joined = b"".join(payloads)  # (a copy and two memchr)
            if 10 in joined or 13 in joined:
                return None
            decode = decoder.decode
            values = [decode(payload) for payload in payloads]
    except (msgspec.DecodeError, RecursionError):
        return None
    if parser.pending:
        parser.pending.clear()
    parser.open_bytes = 0
    return values, buf, cut + 2


def finish(chain: FastChain, parser: SseFraming, buf: bytes, cut: int, applied: int, total: int) -> bool:
    """After ``applied`` of ``total`` events (those ending at ``cut``): the rest of the read to the general path, or
    the tail kept open, with LF line ends (a CRLF read's are turned as the framing turns them)."""
    tail = buf[cut + 2 :]
    if buf[cut - 1 : cut] == b"\n":  # a CRLF read (``_crlf``; an LF read's blank line never follows a line end)
        if tail.find(b"\r") >= 0:
            tail = tail.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if applied < total:
            rest = buf[: cut - 2].split(b"\r\n\r\n", applied)[applied].replace(b"\r\n", b"\n")
            _hand_over(chain, parser, rest + b"\n\n" + tail)
            return True
    elif applied < total:
        rest = buf[:cut].split(b"\n\n", applied)[applied]
        _hand_over(chain, parser, rest + b"\n\n" + tail)
        return True
    if tail:
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
