"""Instruction counts (valgrind's callgrind) of the floor and of ours, per row of ``benchmarks.formats``.

Wall-clock time on a shared machine moves by tens of percent between runs; the number of instructions a workload
executes does not. The parent starts one child under ``valgrind --tool=callgrind --collect-atstart=no
--toggle-collect=builtin_sorted --dump-after=builtin_sorted``: the child builds every stream, runs each workload
once untimed (warm), then once inside ``sorted([0], key=...)``, so only that run is counted and each count lands in
its own dump file. ``sorted`` is a C function none of the measured workloads calls (the imports do: their dumps
come first and are dropped). Python's start and imports are not counted.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["available", "measure"]

ROOT = Path(__file__).resolve().parent.parent


def available() -> bool:
    return shutil.which("valgrind") is not None


def _workloads(events: int, rows: list[tuple[str, str]]) -> list[tuple[str, Callable[[], Any]]]:
    import json
    from functools import partial

    import pipeline
    from benchmarks._format_streams import GENERATORS, payloads
    from benchmarks._timing import split

    out: list[tuple[str, Callable[[], Any]]] = []
    for name, read in rows:
        data = GENERATORS[name](events)
        pieces = split(data, read)
        loads = payloads(data)
        out.append((f"{name} {read} floor", partial(lambda loads: [json.loads(p) for p in loads], loads)))
        out.append((f"{name} {read} ours", partial(pipeline.collect, pieces, format=name)))  # type: ignore[arg-type]
    return out


def child(events: int, rows: list[tuple[str, str]]) -> None:
    workloads = _workloads(events, rows)
    for _, run in workloads:
        run()
    for _, run in workloads:
        sorted([0], key=lambda _, run=run: (run(), 0)[1])  # type: ignore[misc]


def measure(events: int, rows: list[tuple[str, str]]) -> dict[str, int]:
    """Instructions of each workload (``"<format> <read> floor"`` / ``"... ours"``), or {} when valgrind fails."""
    spec = ",".join(f"{name}:{read}" for name, read in rows)
    with tempfile.TemporaryDirectory(prefix="bench-ir-") as folder:
        out = Path(folder) / "cg.out"
        command = [
            "valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=builtin_sorted",
            "--dump-after=builtin_sorted", f"--callgrind-out-file={out}",
            sys.executable, "-m", "benchmarks._instructions", str(events), spec,
        ]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return {}
        dumps = sorted(Path(folder).glob("cg.out.*"), key=lambda path: int(path.suffix[1:]))
        counts = []
        for dump in dumps:
            found = re.search(r"^(?:summary|totals):\s*(\d+)", dump.read_text(errors="replace"), re.MULTILINE)
            counts.append(int(found.group(1)) if found else 0)
    names = [f"{name} {read} {kind}" for name, read in rows for kind in ("floor", "ours")]
    # the imports call sorted() too: the measured runs are the last dumps, in order
    return dict(zip(names, counts[-len(names) :], strict=True)) if len(counts) >= len(names) else {}


if __name__ == "__main__":
    child(int(sys.argv[1]), [tuple(item.split(":", 1)) for item in sys.argv[2].split(",")])  # type: ignore[misc]
