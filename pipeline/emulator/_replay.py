"""The ``replay`` profile: a recorded ``.sse`` file served byte for byte, from a directory the server allows."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ._errors import RequestError
from ._script import Script
from ._sse import event_stream, writes

__all__ = ["replay_file", "replay_script"]


def replay_script(data: bytes, *, chunk_bytes: int | None = None, drip_ms: float | None = None) -> Script:
    """Serve ``data`` byte for byte, optionally in pieces of ``chunk_bytes`` with ``drip_ms`` between them."""
    size = chunk_bytes if chunk_bytes and chunk_bytes > 0 else max(len(data), 1)
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    return event_stream(writes(pieces, (drip_ms or 0.0) / 1000.0))


def replay_file(name: str | None, replay_dirs: Iterable[Path]) -> Path:
    """The file ``name`` (an absolute path) when it lies under one of ``replay_dirs``; else a ``RequestError``."""
    if not name or not Path(name).is_absolute():
        raise RequestError(400, "The replay profile needs x-emulator-file: the absolute path of a recorded .sse file.")
    path = Path(name).resolve()
    allowed = [d.resolve() for d in replay_dirs]
    if not any(path.is_relative_to(d) for d in allowed):
        raise RequestError(
            403,
            f"{name} is not under a replay directory of this emulator "
            f"({', '.join(map(str, allowed)) or 'none configured'}); "
            "start it with EmulatorConfig(replay_dirs=[...]).",
        )
    if not path.is_file():
        raise RequestError(404, f"Replay file {name} does not exist.")
    return path
