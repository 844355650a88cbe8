"""A scripted HTTP response as data: a status, headers, and the steps the server replays in order.

    Write(bytes) ..... send these bytes as one HTTP body piece
    Pause(seconds) ... send nothing for a while (drip, stall); cut short when the server shuts down
    Cut() ............ close the connection abruptly: no [DONE], no chunked terminator

A profile (``_profiles.py``) turns ``ScriptOptions`` into a ``Script``; the gateway only replays it. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import attrs

__all__ = ["JSON_CONTENT_TYPE", "SSE_CONTENT_TYPE", "Cut", "Pause", "Script", "ScriptOptions", "Step", "Write"]

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"


@attrs.frozen
class Write:
    """Send ``data`` as one HTTP body piece."""

    data: bytes


@attrs.frozen
class Pause:
    """Send nothing for ``seconds`` (the server cuts the pause short when it shuts down)."""

    seconds: float


@attrs.frozen
class Cut:
    """Close the connection abruptly, mid-body."""

    reason: str = "scripted drop"


Step: TypeAlias = Write | Pause | Cut


@attrs.frozen
class Script:
    """One scripted HTTP response."""

    status: int
    content_type: str
    steps: tuple[Step, ...]
    headers: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def is_event_stream(self) -> bool:
        return self.content_type.startswith("text/event-stream")

    @property
    def body(self) -> bytes:
        """Every written byte, concatenated (pauses and cuts ignored)."""
        return b"".join(step.data for step in self.steps if isinstance(step, Write))


@attrs.frozen
class ScriptOptions:
    """Per-request knobs a profile may read."""

    model: str = "emulator"
    include_usage: bool = False
    prompt_tokens: int = 12
    completion_id: str = "chatcmpl-emulator"
    created: int = 0
    drip_ms: float | None = None
    """Pause between events; ``None`` means the profile's default (50 ms for ``slow-drip``, none otherwise)."""
    stall_s: float = 3600.0
    retry_after: str = "2"
