"""What one run of ``benchmarks.run`` records, how its rows are timed, and how a result is checked.

``Row`` (one line of the table), ``Spec`` (one row to time: the job and the check of its result), ``Results`` (the
whole run, written as JSON by ``--json``), ``machine()`` (what the numbers were measured on); ``round_robin`` (every
row once per round, the median counts, gc off while timed); ``expected_message`` and ``compare`` (an assembled
message against what the corpus generator put in the stream).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import _workloads as work
from benchmarks.corpus import Corpus

__all__ = ["Results", "Row", "Spec", "compare", "expected_message", "machine", "round_robin"]


@dataclass
class Row:
    size: str
    name: str
    events: int
    nbytes: int
    seconds: float | None
    runs: int = 0
    ratio_floor: float | None = None
    ratio_ours: float | None = None
    ok: str = ""
    note: str = ""

    @property
    def us_per_event(self) -> float | None:
        return None if self.seconds is None else self.seconds / self.events * 1e6


@dataclass
class Spec:
    """One row to time: ``run`` does the whole job (None: not run, shown with its note), ``check`` says what is
    wrong with its result ("" when nothing)."""

    label: str
    run: Callable[[], Any] | None
    check: Callable[[Any], str]
    budget: float = float("inf")
    fatal: bool = False
    """A wrong result fails the run (ours and the floor), not only the row (peers)."""
    show: bool = True
    note: str = ""
    times: list[float] = field(default_factory=list)
    ok: str | None = None


@dataclass
class Results:
    machine: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    corpora: list[dict[str, Any]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    overhead: dict[str, Any] = field(default_factory=dict)
    """The Rx overhead pass (one stream)."""
    construction: dict[str, float] = field(default_factory=dict)
    linearity: dict[str, Any] = field(default_factory=dict)
    long_event: list[dict[str, Any]] = field(default_factory=list)
    """One long event in 64-byte reads, per format and path (``long_event.py``)."""
    memory: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    seconds_total: float = 0.0

    def row(self, size: str, name: str) -> Row | None:
        for row in self.rows:
            if row.size == size and row.name == name:
                return row
        return None


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        uname = subprocess.run(["uname", "-a"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        uname = " ".join(platform.uname())
    return {
        "uname": uname,
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": sys.version.split()[0] + " " + platform.python_implementation(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def round_robin(specs: Sequence[Spec], repeats: int, *, warm: bool) -> None:
    """Runs every spec once per round, ``repeats`` rounds, so that all rows see the same machine (other load
    on it shifts every row alike); a spec stops once its runs add up to its budget. The median run counts (best-of-N
    turned PASS rows into MISS under a shared machine: issue 24).

    gc is off while a run is timed and back on after it. The collector is run once before the rounds, not
    before each run: right after a full collection the first run of a short workload is ~3x slower (freed
    arenas are mapped again), so short streams also get an untimed run of every row first."""
    gc.collect()
    if warm:
        for spec in specs:
            if spec.run is not None:
                spec.run()
    for _ in range(max(repeats, 1)):
        for spec in specs:
            if spec.run is None or (spec.times and sum(spec.times) >= spec.budget):
                continue
            result: Any = None
            gc.disable()
            try:
                start = time.perf_counter()
                result = spec.run()
                elapsed = time.perf_counter() - start
            finally:
                gc.enable()
            spec.times.append(elapsed)
            if spec.ok is None or not spec.ok:
                spec.ok = spec.check(result)
            del result


def expected_message(corpus: Corpus) -> work.Message:
    return work.Message(
        corpus.text,
        [(call.id, call.name, call.arguments) for call in corpus.tool_calls],
        "tool-calls" if corpus.tool_calls else "stop",
    )


def compare(got: work.Message, want: work.Message, *, finish: bool = True) -> str:
    """"" when they agree (text, tool-call ids, names and arguments, and the finish), else what differs."""
    problems: list[str] = []
    if got.text != want.text:
        at = next((i for i, (a, b) in enumerate(zip(got.text, want.text, strict=False)) if a != b),
                  min(len(got.text), len(want.text)))
        problems.append(f"text differs at {at} ({len(got.text)} vs {len(want.text)} chars)")
    if len(got.calls) != len(want.calls):
        problems.append(f"{len(got.calls)} tool calls, want {len(want.calls)}")
    for n, (have, expect) in enumerate(zip(got.calls, want.calls, strict=False)):
        arguments = have[2]
        same_arguments = (
            arguments == json.loads(expect[2]) if isinstance(arguments, dict) else arguments == expect[2]
        )
        if have[0] != expect[0] or have[1] != expect[1] or not same_arguments:
            problems.append(f"tool call {n}: {have[0]!r}/{have[1]!r} differs from {expect[0]!r}/{expect[1]!r}"
                            + ("" if same_arguments else " (arguments differ)"))
    if finish and got.finish != want.finish:
        problems.append(f"finish {got.finish!r}, want {want.finish!r}")
    return "; ".join(problems)
