"""The benchmark: every row on the same bytes, in one run, with a table and the targets.

    python -m benchmarks.run                      # full: small, 4k, medium, large (+ memory, loopback, concurrency)
    python -m benchmarks.run --smoke              # CI: small + ~300 KB, one repeat, exits 1 on a wrong result
    python -m benchmarks.run --sizes small,medium --repeat 3 --skip-peers --json results.json

Rows (each is the whole job, from the same 4 KB pieces already in memory, to its result):

    floor: json.loads            pieces -> lines -> ``data:`` payloads -> json.loads (the ratio's denominator)
    floor: msgspec / orjson      the same with ``msgspec.json.decode`` (untyped) and ``orjson.loads``
    httpx-sse                    httpx-sse's own decoders (UTF-8 decode, SSELineDecoder, SSEDecoder) + json.loads
    ours: bytes->chunks          ``pipeline.translate(pieces)``, collecting the chunks
    ours: bytes->assembled       ``pipeline.assemble(pipeline.collect(pieces))``
    ours: stages without Rx      the same stages driven by plain calls (for the Rx overhead; see _rx_overhead.py)
    openai / langchain-core      peers doing bytes -> assembled message (see _peers.py); "x ours" is their time
                                 over ours: bytes->assembled
    loopback                     the same bytes served by the emulator (a child process) over loopback HTTP in
                                 4 KB writes: httpx.AsyncClient reading only; + ``pipeline.stream(aiter_bytes())``
                                 -> assembled; the library's whole client ``ChatClient.complete`` (when present)

Also: the Rx per-event overhead (two methods, see _rx_overhead.py), the chain construction time (``translate(b"")``
built, subscribed and run to its finish, averaged over 10,000), the linearity check (bytes->chunks us/event on 4k,
9k and 153k events, interleaved), the memory subprocess (memory.py) and the concurrency subprocess
(concurrency.py), then the targets with PASS / MISS.

Timing: ``time.perf_counter``, the median of N interleaved runs (5, 3 for large; slow peer rows stop repeating once
their runs add up to ~10 s). The rows of a size run round-robin (one run of each row per round), so load from other
processes on the machine hits every row alike; the garbage collector is disabled during each timed run and
re-enabled after it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._emulator_proc import ROOT, EmulatorProcess, emulator_class
from benchmarks._loopback import loopback
from benchmarks._passes import chain_construction, linearity_pass, long_event_pass, overhead_pass
from benchmarks._report import evaluate_targets, report
from benchmarks._rows import machine
from benchmarks._throughput import PIECE, Bench
from benchmarks.corpus import CORPUS_DIR, SIZES, build, response, write

MERGE_CHOICE_EVENTS = 120
"""``merge_message_runs`` adds pairwise (quadratic): the bulk merges are compared on a short response."""


# --------------------------------------------------------------------------------------------------- subprocesses


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def run_memory(path: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--path", str(path)],
        capture_output=True, text=True, cwd=ROOT, env=_child_env(), timeout=240,
    )
    if completed.returncode != 0:
        return {"error": completed.stderr.strip()[-2000:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_concurrency() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "concurrency.json"
        command = [sys.executable, "-m", "benchmarks.concurrency", "--json", str(out)]
        completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_child_env(), timeout=240)
        if completed.returncode != 0:
            return {"error": (completed.stderr.strip() or completed.stdout.strip())[-2000:]}
        if not out.exists():
            return {"skipped": completed.stdout.strip()}
        return json.loads(out.read_text())  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true",
                        help="CI: small + ~300 KB, one repeat; exit 1 when a result is wrong")
    parser.add_argument("--sizes", default=None,
                        help=f"comma-separated, from {', '.join(SIZES)} (default: small,4k,medium,large)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per row, the median counts (default 5, 3 for large)")
    parser.add_argument("--skip-peers", action="store_true", help="no openai / langchain-core rows")
    parser.add_argument("--skip-loopback", action="store_true", help="no HTTP rows from the emulator")
    parser.add_argument("--skip-memory", action="store_true", help="no memory subprocess")
    parser.add_argument("--skip-concurrency", action="store_true", help="no concurrency subprocess")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes = args.sizes or "small,smoke"
        args.repeat = args.repeat or 1
        args.skip_loopback = args.skip_memory = args.skip_concurrency = True
    args.sizes = [s.strip() for s in (args.sizes or "small,4k,medium,large").split(",") if s.strip()]
    unknown = [s for s in args.sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {', '.join(unknown)}; choose from {', '.join(SIZES)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    bench = Bench(args)
    results = bench.results
    results.machine = machine()
    results.settings = {
        "sizes": args.sizes, "repeat": args.repeat or "5 (3 for large)", "smoke": args.smoke, "piece": PIECE,
    }
    if bench.factories is None:
        results.notes.append("the rules are not all stage_operators: the 'without Rx' row is skipped")

    if not args.skip_peers:
        from benchmarks import _peers

        bench.peers = _peers
        print("choosing langchain's bulk merge ...", file=sys.stderr, flush=True)
        bench.merge, timings = _peers.pick_langchain_merge(response(MERGE_CHOICE_EVENTS, 2, 0.25).pieces(PIECE))
        results.notes.append(
            f"langchain bulk merge chosen on a {MERGE_CHOICE_EVENTS}-event response: "
            + ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in timings.items())
            + f" -> {bench.merge}"
        )
        seed = _seed_bug_body()
        if seed is not None:
            outcome = _peers.openai_survives_type_null(seed)
            results.notes.append(
                "openai's ChatCompletionStreamState on the emulator's seed-bug stream (continuations with "
                f'"type": null): {outcome}; the corpus keeps "type": "function" on its null-style continuations so '
                "that the SDK can be measured at all"
            )
    bench.warm_up()

    emulator_ok = emulator_class() is not None
    use_loopback = not args.skip_loopback and emulator_ok
    if not args.skip_loopback and not emulator_ok:
        results.notes.append("loopback rows skipped: pipeline.emulator.Emulator is not available")
    server = EmulatorProcess(CORPUS_DIR) if use_loopback else None
    if server is not None:
        CORPUS_DIR.mkdir(parents=True, exist_ok=True)
        server.__enter__()
    try:
        for name in args.sizes:
            corpus = build(name)
            results.corpora.append({
                "name": name, "events": corpus.payloads, "bytes": len(corpus.data),
                "bytes_per_event": len(corpus.data) / corpus.payloads, "text_bytes": corpus.text_bytes,
                "tool_calls": len(corpus.tool_calls), "arguments_bytes": corpus.arguments_bytes,
            })
            bench.size(corpus)
            if server is not None or (name == "large" and not args.skip_memory):
                path = write(corpus)
                if server is not None:
                    loopback(bench, corpus, server.base_url, path)
            del corpus
            gc.collect()
    finally:
        if server is not None:
            server.__exit__(None, None, None)

    chain_construction(bench, 1 if args.smoke else 3)

    print("  Rx overhead and linearity passes ...", file=sys.stderr, flush=True)
    overhead_pass(bench)
    linearity_pass(bench)
    print("  one long event in 64-byte reads ...", file=sys.stderr, flush=True)
    long_event_pass(bench, args.smoke)

    # memory
    if "large" in args.sizes and not args.skip_memory:
        print("  memory (subprocess) ...", file=sys.stderr, flush=True)
        results.memory = run_memory(CORPUS_DIR / "large.sse")
        if "chunks" in results.memory and results.memory["chunks"] != results.memory["expected_chunks"]:
            results.failures.append(f"memory replay gave {results.memory['chunks']} chunks, "
                                    f"expected {results.memory['expected_chunks']}")
    elif not args.skip_memory:
        results.memory = {"skipped": "skipped: the large corpus was not selected"}

    # concurrency
    if not args.skip_concurrency:
        print("  concurrency (subprocess) ...", file=sys.stderr, flush=True)
        results.concurrency = run_concurrency()

    evaluate_targets(results)
    results.machine["load_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results.seconds_total = time.perf_counter() - started
    print(report(results))
    if args.json is not None:
        data = asdict(results)
        for row, raw in zip(results.rows, data["rows"], strict=True):
            raw["us_per_event"] = row.us_per_event
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return 1 if results.failures else 0


def _seed_bug_body() -> bytes | None:
    try:
        from pipeline.emulator import ScriptOptions, build_script
    except ImportError:
        return None
    return build_script("seed-bug", ScriptOptions(include_usage=True)).body


if __name__ == "__main__":
    sys.exit(main())
