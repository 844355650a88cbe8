"""What keeps ``ChatRepair`` bounded and total on hostile bytes (issue 31; decision 0036's amendment): the events it
holds before the first one that carries something (``Opening``, at most ``max_text_bytes``), the choices it keeps
state for (``MAX_CHOICES``), and ``guarded``, which
turns an exception a rule raises on an odd JSON value (an object as a call's index, a payload nested deeper than
msgspec reads) into the library's reading of it, ``MALFORMED_RESPONSE``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from operators import Code, Failure

__all__ = ["MAX_CHOICES", "Opening", "choices_bound", "decoded", "guarded"]

MAX_CHOICES = 128
"""The choices of one stream a repairer keeps state for: OpenAI's own bound on ``n``. A stream naming more (a new
``index`` an event, each a ``Choice`` kept to the end) is ``LIMIT_EXCEEDED``."""


class Opening:
    """The events held before the answer: ``hold`` one (a ``LIMIT_EXCEEDED`` failure past ``limit`` bytes), ``take``
    them all with the event that releases them, ``clear``."""

    __slots__ = ("_events", "events", "limit", "size")

    def __init__(self, limit: int) -> None:
        self._events: list[bytes] = []
        self.events = 0
        """Every event held so far (``ChatRepair.held_events``: progress for the transport's read deadline)."""
        self.limit = limit
        self.size = 0

    def hold(self, event: bytes) -> Failure | None:
        self._events.append(event)
        self.events += 1
        self.size += len(event)
        if self.size <= self.limit:
            return None
        return Failure(Code.LIMIT_EXCEEDED, f"{self.size} bytes held before the first answer (empty deltas, usage, a "
                       f"call's unidentified start), over max_text_bytes={self.limit}")

    def take(self, event: bytes) -> bytes:
        self._events.append(event)
        ready = b"".join(self._events)
        self.clear()
        return ready

    def clear(self) -> None:
        self._events.clear()
        self.size = 0

    def __len__(self) -> int:
        return len(self._events)


def choices_bound(count: int) -> Failure | None:
    """``LIMIT_EXCEEDED`` once a stream has named more than ``MAX_CHOICES`` choices."""
    if count <= MAX_CHOICES:
        return None
    return Failure(Code.LIMIT_EXCEEDED, f"more than {MAX_CHOICES} choices in one stream")


def guarded(rule: Callable[[bytes], bytes], event: bytes, fail: Callable[[Failure], bytes]) -> bytes:
    """``rule(event)``, or ``fail(MALFORMED_RESPONSE)`` when it raises on an odd JSON value: the library's typed
    decode refuses such a chunk, and no exception escapes a repairer."""
    try:
        return rule(event)
    except (TypeError, ValueError, RecursionError) as exc:
        return fail(Failure(Code.MALFORMED_RESPONSE, f"malformed SSE payload: {type(exc).__name__}: {exc}"))


def decoded(payload: bytes, named: bytes | None) -> Any:
    """An event's JSON, ``None`` when malformed or nested deeper than msgspec reads (``RecursionError``, which the
    library reads as malformed too); an ``event: error`` whose data is not a JSON object is still the in-band error
    (the library's reading)."""
    try:
        obj = msgspec.json.decode(payload)
    except (msgspec.DecodeError, RecursionError):
        obj = None
    if named == b"error" and not isinstance(obj, dict):
        return {"error": payload[:1000].decode("utf-8", "replace")}
    return obj
