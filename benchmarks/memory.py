"""Peak RSS of replaying the large corpus from a file, run in its own process (``run.py`` starts it).

    python -m benchmarks.memory [--path benchmarks/.corpus/large.sse]

The measuring process imports the library, takes its baseline (``ru_maxrss`` after the imports, before the
replay), then runs ``pipeline.translate(path)`` counting chunks without storing them, and takes ``ru_maxrss``
again. It prints one JSON line: the baseline, the peak, their difference, the bytes of text and arguments the
assembled message would hold (from the generator's sidecar ``<name>.json``), and the chunk count against the
expected one.

On Linux ``ru_maxrss`` survives ``exec``: a process started by a big parent (``run.py`` holds hundreds of MB by
then) starts with the parent's high-water mark, which would hide the replay's peak. So this script measures in a
grandchild, spawned by itself while small; it also reports ``VmHWM`` from ``/proc/self/status`` (the peak of the
process's own memory, reset by ``exec``) as a cross-check.

Storing nothing, the pipeline should need about what it must keep: each tool call's arguments until ``[DONE]``
(it emits them in the block-end), the current read and its batch; not the text, and nothing growing per event.
The target allows the text too: peak - baseline <= text + arguments + 10 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # python benchmarks/memory.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pipeline
from benchmarks.corpus import CORPUS_DIR

__all__ = ["measure"]


def _max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def _vm_hwm_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def measure(path: Path) -> dict[str, int | float | str]:
    facts = json.loads(path.with_suffix(".json").read_text())
    baseline = _max_rss_bytes()
    hwm_baseline = _vm_hwm_bytes()
    count = 0

    def on_next(_: object) -> None:
        nonlocal count
        count += 1

    pipeline.translate(path).subscribe(on_next=on_next)
    peak = _max_rss_bytes()
    hwm_peak = _vm_hwm_bytes()
    kept = int(facts["text_bytes"]) + int(facts["arguments_bytes"])
    return {
        "vm_hwm_growth_bytes": -1 if hwm_peak is None or hwm_baseline is None else hwm_peak - hwm_baseline,
        "file": str(path),
        "file_bytes": path.stat().st_size,
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "growth_bytes": peak - baseline,
        "text_bytes": int(facts["text_bytes"]),
        "arguments_bytes": int(facts["arguments_bytes"]),
        "growth_minus_kept_bytes": peak - baseline - kept,
        "chunks": count,
        "expected_chunks": int(facts["expected_chunks"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", type=Path, default=CORPUS_DIR / "large.sse")
    parser.add_argument("--measure", action="store_true", help="measure in this process (the grandchild)")
    args = parser.parse_args(argv)
    path: Path = args.path
    if args.measure:
        print(json.dumps(measure(path)))
        return
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    if not path.exists() or not path.with_suffix(".json").exists():
        # Written by another process, so generating 50 MB does not raise the measuring one's peak.
        subprocess.run([sys.executable, "-m", "benchmarks.corpus", "--write", path.stem], check=True, cwd=root, env=env)
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--measure", "--path", str(path)],
        check=True, cwd=root, env=env, capture_output=True, text=True,
    )
    print(completed.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
