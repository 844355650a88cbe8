"""The proxy's HTTP/1.1 requests upstream and the heads of their responses, as bytes (``_upstream.py``).

What h11 did for the proxy's upstream connections, without its state machine and its event objects (about 130 us of
the proxy's CPU before the first event, decision 0073): ``request_bytes`` writes a request (the ``Host`` header first,
as h11 does; the body framed by its ``Content-Length`` or chunked) and ``read_head`` reads a response's head. Both
check what h11 checks, with h11's own grammar (``h11._abnf``): a method and header names that are tokens, a target
and header values without control characters or line breaks, one ``Host``, one ``Content-Length`` (equal copies
merged) of digits, ``Transfer-Encoding`` only ``chunked``; a status line of ``HTTP/x.y NNN``, header lines of
``name: value`` (obsolete line folding joined), a head within ``MAX_HEAD`` bytes. A request h11 would refuse is
``LocalProtocolError``, a head it would refuse ``RemoteProtocolError`` (``ValueError``s here; ``_upstream`` gives
them httpx's names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs
from h11._abnf import field_name, field_value, header_field, method, request_target, status_line

from operators import LlmStreamError

__all__ = ["MAX_HEAD", "Head", "LocalError", "RemoteError", "keeps_alive", "read_head", "request_bytes"]

MAX_HEAD = 100 * 1024
"""Bytes a response head may take (httpcore's bound)."""
_CL_MAX_DIGITS = 20  # h11's CONTENT_LENGTH_MAX_DIGITS

_name_re = re.compile(field_name.encode("ascii"))
_value_re = re.compile(field_value.encode("ascii"))
_method_re = re.compile(method.encode("ascii"))
_target_re = re.compile(request_target.encode("ascii"))
_status_re = re.compile(status_line.encode("ascii"))
_header_re = re.compile(header_field.encode("ascii"))
_digits_re = re.compile(rb"[0-9]+")
_blank_re = re.compile(rb"\n\r?\n")
_fold_re = re.compile(rb"[ \t]+")


class LocalError(LlmStreamError, ValueError):
    """A request h11 would not have sent."""


class RemoteError(LlmStreamError, ValueError):
    """A response head h11 would not have read."""


@attrs.frozen
class Head:
    """A response's head: ``headers`` with their names as sent, ``lowered`` the same with lower-case names."""

    status_code: int
    reason: bytes
    http_version: bytes
    headers: list[tuple[bytes, bytes]]
    lowered: list[tuple[bytes, bytes]]


def _checked(headers: Iterable[tuple[bytes, bytes]], error: type[ValueError],
             parsed: bool) -> tuple[list[tuple[bytes, bytes, bytes]], int]:
    """(name as sent, lower-case name, value) with h11's rules for Content-Length and Transfer-Encoding; the number
    of ``Host`` headers."""
    out: list[tuple[bytes, bytes, bytes]] = []
    length: bytes | None = None
    chunked = False
    hosts = 0
    for name, value in headers:
        if not parsed and (_name_re.fullmatch(name) is None or _value_re.fullmatch(value) is None):
            raise error(f"illegal header: {name[:40]!r}")
        lower = name.lower()
        if lower == b"content-length":
            lengths = {part.strip() for part in value.split(b",")}
            value = lengths.pop()
            if lengths or _digits_re.fullmatch(value) is None or len(value) > _CL_MAX_DIGITS:
                raise error("bad or conflicting Content-Length")
            if length is not None:
                if length != value:
                    raise error("conflicting Content-Length headers")
                continue
            length = value
        elif lower == b"transfer-encoding":
            value = value.lower()
            if chunked or value != b"chunked":
                raise error("only one Transfer-Encoding, chunked, is supported")
            chunked = True
        elif lower == b"host":
            hosts += 1
        out.append((name, lower, value))
    return out, hosts


def request_bytes(verb: bytes, target: bytes, headers: Iterable[tuple[bytes, bytes]], body: list[bytes]) -> bytes:
    """The request as h11 writes it: ``LocalError`` where h11 would refuse it."""
    if _method_re.fullmatch(verb) is None or _target_re.fullmatch(target) is None:
        raise LocalError(f"illegal request line: {verb[:20]!r} {target[:40]!r}")
    items, hosts = _checked(headers, LocalError, parsed=False)
    if hosts != 1:
        raise LocalError("a request needs one Host header" if not hosts else "Found multiple Host: headers")
    out = [b"%s %s HTTP/1.1\r\n" % (verb, target)]
    out += [b"%s: %s\r\n" % (name, value) for name, lower, value in items if lower == b"host"]
    out += [b"%s: %s\r\n" % (name, value) for name, lower, value in items if lower != b"host"]
    out.append(b"\r\n")
    framing = {lower: value for _, lower, value in items if lower in (b"content-length", b"transfer-encoding")}
    if b"transfer-encoding" in framing:
        out += [b"%x\r\n%b\r\n" % (len(part), part) for part in body if part]
        out.append(b"0\r\n\r\n")
        return b"".join(out)
    size = sum(map(len, body))
    if size != int(framing.get(b"content-length", b"0")):
        raise LocalError("the request body's size is not its Content-Length")
    return b"".join(out + body)


def keeps_alive(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a message's headers leave its connection open (no ``Connection: close``)."""
    return not any(name.lower() == b"connection" and b"close" in value.lower() for name, value in headers)


def read_head(buffer: bytes) -> tuple[Head | None, int]:
    """The first head in ``buffer`` (a 1xx one too) and the offset of what follows it; ``(None, 0)`` while it is
    incomplete; ``RemoteError`` for a head h11 would refuse."""
    if buffer and buffer[0] < 0x21:  # h11's early refusal (an empty line, a space, a TLS record's first byte)
        raise RemoteError("illegal status line")
    found = _blank_re.search(buffer)
    if found is None:
        if len(buffer) > MAX_HEAD:
            raise RemoteError("the response head is too long")
        return None, 0
    end = found.end()
    if end > MAX_HEAD:
        raise RemoteError("the response head is too long")
    lines = [line[:-1] if line.endswith(b"\r") else line for line in buffer[:found.start()].split(b"\n")]
    status = _status_re.fullmatch(lines[0])
    if status is None:
        raise RemoteError(f"illegal status line: {lines[0][:60]!r}")
    pairs: list[tuple[bytes, bytes]] = []
    for line in _unfolded(lines[1:]):
        field = _header_re.fullmatch(line)
        if field is None:
            raise RemoteError(f"illegal header line: {line[:60]!r}")
        pairs.append((field["field_name"], field["field_value"]))
    items, _ = _checked(pairs, RemoteError, parsed=True)
    code = int(status["status_code"])
    if code < 100 or code == 101:  # h11: no switch of protocol the proxy did not ask for
        raise RemoteError(f"unexpected status code {code}")
    return Head(code, status["reason"] or b"", status["http_version"] or b"1.1",
                [(name, value) for name, _, value in items], [(lower, value) for _, lower, value in items]), end


def _unfolded(lines: list[bytes]) -> list[bytes]:
    """Obsolete line folding joined to the line before (h11's ``_obsolete_line_fold``)."""
    out: list[bytes] = []
    for line in lines:
        fold = _fold_re.match(line)
        if fold is None:
            out.append(line)
        elif not out:
            raise RemoteError("continuation line at start of headers")
        else:
            out[-1] = out[-1] + b" " + line[fold.end():]
    return out
