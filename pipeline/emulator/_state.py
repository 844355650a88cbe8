"""What the emulator is configured with and what it observed: ``EmulatorConfig``, ``RecordedRequest``,
``EmulatorState``. Plain values, usable without the ``emulator`` extra."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._profiles import PROFILES

__all__ = ["EmulatorConfig", "EmulatorState", "RecordedRequest"]


def _paths(values: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    return tuple(Path(v) for v in values)


@attrs.frozen
class EmulatorConfig:
    """Server-wide settings."""

    replay_dirs: tuple[Path, ...] = attrs.field(default=(), converter=_paths)
    """Directories whose files (and subdirectories' files) the ``replay`` profile may serve."""
    default_profile: str | None = attrs.field(default=None)
    """The profile that answers a model name that names no profile (``gpt-4o``: an existing app pointed at the
    emulator). ``None`` (the default): such a request is a 404 listing the profiles, so a typo such as
    ``never-identifed`` fails loudly instead of being answered ``clean``. A request without a model gets ``clean``."""

    @default_profile.validator
    def _known(self, attribute: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None and (value not in PROFILES or value == "replay"):
            raise ValueError(f"default_profile must be a scripted profile, one of {', '.join(PROFILES)}; got {value!r}")


@attrs.frozen
class RecordedRequest:
    """One request as the emulator saw it."""

    profile: str
    """The profile that answered ("" when the request was rejected before a profile was chosen)."""
    method: str
    path: str
    body: Any
    """The parsed JSON body (``None`` when it was not JSON)."""
    headers: Mapping[str, str]
    """Request headers, lower-cased, without ``authorization`` and other credentials."""


class EmulatorState:
    """What the emulator observed. Written by the server thread, safe to read from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        """Streaming responses whose client went away before the end."""
        self._attempts: dict[str, int] = {}

    @property
    def attempts(self) -> Mapping[str, int]:
        """Requests seen so far per ``x-emulator-key`` (only requests carrying ``x-emulator-fail-first``)."""
        with self._lock:
            return dict(self._attempts)

    def wait_for_disconnects(self, count: int = 1, timeout: float = 2.0) -> bool:
        """Poll until ``disconnects >= count``; ``False`` if the timeout passed first."""
        deadline = time.monotonic() + timeout
        while self.disconnects < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def reset(self) -> None:
        """Forget every request, disconnect and fail-first counter."""
        with self._lock:
            self.requests.clear()
            self.disconnects = 0
            self._attempts.clear()

    def _record(self, request: RecordedRequest) -> None:
        """Called by the gateway for every request."""
        with self._lock:
            self.requests.append(request)

    def _record_disconnect(self) -> None:
        """Called by the gateway when a client left a stream before its end."""
        with self._lock:
            self.disconnects += 1

    def _next_attempt(self, key: str) -> int:
        """The number of earlier attempts under ``key``, counting this one for next time."""
        with self._lock:
            seen = self._attempts.get(key, 0)
            self._attempts[key] = seen + 1
            return seen
