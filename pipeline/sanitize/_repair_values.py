"""The values and small helpers the Messages and Responses repairers share (decision 0036): a start event held until
its call is identified (``Held``), a Responses item's identity (``OutputItem``), what counts as an identity
(``named``), a rewritten event (``encode_event``) and the finish of a stop reason (``finish_from``)."""

from __future__ import annotations

from typing import Any

import msgspec

from operators import Code, Finish, FinishReason

__all__ = ["Held", "OutputItem", "decode", "encode_event", "finish_from", "named"]

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


class OutputItem:
    """The identity of the item at one ``output_index``, as first given (a held call's is filled in later)."""

    __slots__ = ("call_id", "held", "id", "kind", "name", "rotated")

    def __init__(self, item: dict[str, Any]) -> None:
        self.kind = item.get("type")
        self.id = item.get("id") if named(item.get("id")) else None
        self.call_id = item.get("call_id") if named(item.get("call_id")) else None
        self.name = item.get("name") if named(item.get("name")) else None
        self.held: Held | None = None
        self.rotated = False  # another id was given for this item in the stream

    def other(self, item: dict[str, Any]) -> bool:
        """Whether ``item`` is another item than this one (another type, or another non-empty id): one
        ``output_index`` holds one item, as the library reads it (decision 0070)."""
        given = item.get("id")
        return item.get("type") != self.kind or (self.id is not None and named(given) and given != self.id)

    def fill_in(self, item: dict[str, Any]) -> None:
        for field in ("id", "call_id", "name"):
            if getattr(self, field) is None and named(item.get(field)):
                setattr(self, field, item[field])

    def conform(self, item: dict[str, Any]) -> bool:
        """Writes this identity into ``item`` where it differs; True when it changed."""
        changed = False
        fields = ("id", "call_id", "name") if self.kind == "function_call" else ("id",)
        for field in fields:
            value = getattr(self, field)
            if value is not None and item.get(field) != value:
                item[field] = value
                changed = True
        return changed
