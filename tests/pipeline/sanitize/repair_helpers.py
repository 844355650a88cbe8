"""Shared helpers of the Messages and Responses repair tests: a profile's body, a repairer fed at a split size (whole,
or never across a cut), how it ended, and the events of a body (its raw blocks, and their names and data)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.emulator._profiles import Profile
from pipeline.emulator._script import ScriptOptions
from pipeline.sanitize._event_repair import EventRepair

__all__ = ["SPLITS", "blocks", "body_of", "cut_at", "ending", "fed_around", "named_events", "repaired", "without"]

SPLITS = (1, 3, 17, 64, 1 << 20)
"""Read sizes every unit test feeds at: byte by byte, odd sizes, and the whole body at once."""


def body_of(profiles: Mapping[str, Profile], name: str) -> bytes:
    return profiles[name].build(ScriptOptions(model="claude-sonnet-4-5", completion_id="chatcmpl-repairtest")).body


def repaired(make: Callable[[], EventRepair], body: bytes, size: int) -> tuple[bytes, EventRepair]:
    """``body`` fed in ``size``-byte reads, then closed: every byte the repairer gave, and the repairer."""
    repair = make()
    out = [repair.feed(body[start : start + size]) for start in range(0, len(body), size)]
    out.append(repair.close())
    return b"".join(out), repair


def fed_around(make: Callable[[], EventRepair], body: bytes, cut: int, size: int) -> tuple[bytes, bytes, EventRepair]:
    """``body`` fed in ``size``-byte reads of which none crosses ``cut``, then closed: what the repairer gave for the
    bytes before ``cut``, everything it gave, and the repairer."""
    repair = make()
    before = b"".join(repair.feed(body[i : min(i + size, cut)]) for i in range(0, cut, size))
    after = b"".join(repair.feed(body[i : i + size]) for i in range(cut, len(body), size)) + repair.close()
    return before, before + after, repair


def ending(repair: EventRepair) -> tuple[str | None, str | None]:
    """How the repairer ended: its finish's kind (``None`` before a finish) and its failure's code (``None``)."""
    kind = repair.finish.reason.kind if repair.finish is not None else None
    return kind, repair.failure.code if repair.failure is not None else None


def cut_at(make: Callable[[], EventRepair], body: bytes, cuts: list[int]) -> tuple[bytes, bytes]:
    """What the repairer gives for ``body`` fed whole, and fed in reads cut at ``cuts`` (taken modulo its length)."""
    whole, _ = repaired(make, body, len(body) or 1)
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    repair = make()
    split = b"".join(repair.feed(body[a:b]) for a, b in itertools.pairwise(points)) + repair.close()
    return whole, split


def blocks(body: bytes) -> list[bytes]:
    """The raw events of an LF-framed body, each with its blank line."""
    parts = body.split(b"\n\n")
    return [part + b"\n\n" for part in parts[:-1]]


def without(body: bytes, drop: Callable[[bytes], bool]) -> bytes:
    """``body`` without the raw events ``drop`` picks."""
    return b"".join(block for block in blocks(body) if not drop(block))


def named_events(body: bytes) -> list[tuple[str | None, Any]]:
    """``(event name, parsed data)`` of every event with data."""
    out: list[tuple[str | None, Any]] = []
    for block in blocks(body):
        lines = block.decode().splitlines()
        name = next((line[6:].strip() for line in lines if line.startswith("event:")), None)
        data = "\n".join(line[5:].strip() for line in lines if line.startswith("data:"))
        if data:
            out.append((name, data if data == "[DONE]" else json.loads(data)))
    return out
