"""Bundled example streams."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["EXAMPLES", "example_path"]

EXAMPLES = ("seed-bug",)


def example_path(name: str = "seed-bug") -> Path:
    """A bundled example stream. ``seed-bug``: continuation deltas repeating a tool call's identity as ``""``, as
    ``null`` and in full (the bug this library exists for)."""
    if name not in EXAMPLES:
        raise ValueError(f"unknown example {name!r}; known: {', '.join(EXAMPLES)}")
    return Path(str(resources.files("pipeline.compose").joinpath("examples", f"{name}.sse")))
