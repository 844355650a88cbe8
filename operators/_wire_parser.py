"""``WireParser``: the operators side of one wire format's registry record (docs/decisions/0026-format-detection.md).

Each format package defines its record (``operators.messages.MESSAGES_PARSER``, ...); ``_parse_format.py`` lists them,
the one place that knows which formats this build reads. The pipeline side is ``pipeline.formats.WIRE_FORMATS``,
keyed by the same names.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ._fast_framing import HotRead
from ._signals import Signal
from ._stage import BaseStage

__all__ = ["ParserStage", "WireParser", "never"]

ParserStage = Callable[..., BaseStage[bytes, Signal]]
"""``stage(limits, *, comments=False)``: a fresh parsing stage (``comments``: report comment lines as anomalies)."""


def never(_: object) -> bool:
    """A detection predicate that claims nothing (chat: a payload without a ``type`` is chat by default)."""
    return False


@attrs.frozen
class WireParser:
    """One wire format, the operators side: its name, how its first event is recognised, its parser and the parser's
    fast path."""

    name: str
    """The format's name in ``operators.FORMATS`` (``parse_stream(name)``)."""
    stage: type[BaseStage[bytes, Signal]]
    """The parser's stage class: ``stage(limits, comments=...)`` is a fresh parser (``parse_stream(name)`` wraps it);
    the default chain finds the fast path of a parser by its class."""
    owns_type: Callable[[bytes], bool]
    """True for an ``event:`` name or a payload ``type`` only this format sends."""
    owns_error: Callable[[object], bool]
    """True when a payload of ``type: "error"`` with this ``error`` member is this format's error event."""
    owns_payload: Callable[[bytes], bool] = never
    """True for a first ``data:`` payload without a ``type`` that only this format sends (a format whose payloads
    carry no ``type``); a payload no record claims is chat's."""
    hot_read: HotRead | None = None
    """The fast path of ``default_chain`` for this parser (docs/decisions/0050-fast-path.md); None: the general path
    reads every event."""
