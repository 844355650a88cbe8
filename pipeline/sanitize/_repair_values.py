"""The values and small helpers the Messages and Responses repairers share (decision 0036): a start event held until
its call is identified (``Held``), what counts as an identity
(``named``), a rewritten event (``encode_event``) and the finish of a stop reason (``finish_from``)."""

from __future__ import annotations

from typing import Any

import msgspec

from operators import Code, Finish, FinishReason

__all__ = ["Held", "decode", "encode_event", "finish_from", "named"]

decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


_SIMPLE = {kind: Finish(FinishReason(kind)) for kind in ("stop", "tool-calls", "max-tokens")}


def named(value: object) -> bool:
    """Whether an identity field counts: a non-empty string."""
    return type(value) is str and value != ""


def encode_event(name: bytes, body: dict[str, Any]) -> bytes:
    """A rewritten event: its original name line (if it had one) and the body as one ``data:`` line."""
    head = b"event: " + name + b"\n" if name else b""
    return head + b"data: " + _encode(body) + b"\n\n"


def finish_from(kind: str, wire: str) -> Finish:
    """The finish of a stop reason the SDK represents: ``stop`` / ``tool-calls`` / ``max-tokens``, or, as the library
    classifies it (decision 0005), an error finish such as ``REFUSAL`` (the transport acts on ``failure`` only)."""
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "content_filter":
        return Finish(FinishReason.error(Code.CONTENT_FILTER, "model stopped: content_filter"))
    code = "".join(c if c.isalnum() else "_" for c in wire.upper()).strip("_") or "UNKNOWN_FINISH_REASON"
    return Finish(FinishReason.error(code, f"model stopped: {wire}"))


class Held:
    """A start event held until its call is identified: ``body`` (the decoded event) is written back, with the
    identity filled in, as ``raw`` once ``resolved``."""

    __slots__ = ("body", "index", "name", "raw")

    def __init__(self, index: int, name: bytes, body: dict[str, Any]) -> None:
        self.index = index
        self.name = name
        self.body = body
        self.raw: bytes | None = None
