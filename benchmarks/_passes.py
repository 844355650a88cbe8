"""The passes after the sizes, on the streams ``Bench`` kept: the Rx per-event overhead (two methods, see
``_rx_overhead.py``), the linearity check (bytes->chunks us/event on 4k, 9k and 153k events, interleaved), and the
chain construction time (``translate(b"")`` built, subscribed and run to its finish, averaged over 10,000).
"""

from __future__ import annotations

import gc
import statistics
from functools import partial
from typing import Any

from benchmarks import _rx_overhead as rx
from benchmarks import _workloads as work
from benchmarks._rows import Spec, round_robin
from benchmarks._throughput import Bench

__all__ = ["CONSTRUCTION_CHAINS", "chain_construction", "linearity_pass", "long_event_pass", "overhead_pass"]

CONSTRUCTION_CHAINS = 10_000
OVERHEAD_ROUNDS = 15
LINEARITY_ROUNDS = 7
LINEARITY_BUDGET_S = 4.0
"""The large stream stops after ~3 runs; the shorter ones get all the rounds."""


def overhead_pass(bench: Bench) -> None:
    """Rx per-event overhead, both methods (see _rx_overhead.py), in a dedicated pass of interleaved runs on the
    medium stream (or the longest measured up to medium)."""
    name = next((n for n in ("medium", "4k", "smoke", "large") if n in bench.kept), None)
    if name is None:
        return
    events, chunks, pieces = bench.kept[name]
    items = max(1, round(chunks / len(pieces)))
    specs = [
        Spec("translate", partial(work.ours_chunks, pieces), lambda _: ""),
        Spec("identity chain, Rx", partial(rx.identity_chain, pieces, items), lambda _: ""),
        Spec("identity chain, plain", partial(rx.identity_plain, pieces, items), lambda _: ""),
    ]
    if bench.factories is not None:
        specs.append(Spec("direct", partial(rx.direct_stages(bench.factories), pieces), lambda _: ""))
    rounds = 3 if name == "large" else OVERHEAD_ROUNDS
    round_robin(specs, rounds, warm=True)
    best = {spec.label: statistics.median(spec.times) for spec in specs}
    overhead: dict[str, Any] = {
        "size": name,
        "events": events,
        "batches": len(pieces),
        "chunks_per_batch": items,
        "runs": rounds,
        "translate_ms": best["translate"] * 1e3,
        "identity_chain_us_per_batch": (best["identity chain, Rx"] - best["identity chain, plain"])
        / len(pieces) * 1e6,
        "identity_chain_us_per_event": (best["identity chain, Rx"] - best["identity chain, plain"]) / events * 1e6,
    }
    if "direct" in best:
        overhead["direct_ms"] = best["direct"] * 1e3
        overhead["translate_minus_direct_us_per_event"] = (best["translate"] - best["direct"]) / events * 1e6
    bench.results.overhead = overhead


def linearity_pass(bench: Bench) -> None:
    """us/event of bytes->chunks for 4k, medium and large, timed interleaved (the median of the rounds)."""
    names = [n for n in ("4k", "medium", "large") if n in bench.kept]
    if len(names) < 2:
        return
    specs = [Spec(n, partial(work.ours_chunks, bench.kept[n][2]), lambda _: "", budget=LINEARITY_BUDGET_S)
             for n in names]
    round_robin(specs, LINEARITY_ROUNDS, warm=False)
    points: list[dict[str, Any]] = []
    for spec in specs:
        events = bench.kept[spec.label][0]
        points.append({"size": spec.label, "events": events, "runs": len(spec.times),
                       "us_per_event": statistics.median(spec.times) / events * 1e6})
    values = [float(p["us_per_event"]) for p in points]
    bench.results.linearity = {"points": points, "spread": max(values) / min(values)}


def long_event_pass(bench: Bench, smoke: bool) -> None:
    """One long event in 64-byte reads per format and path (``benchmarks.long_event``): s/MiB at 1x and 4x (192 KiB
    and 768 KiB; 32 and 128 KiB for the smoke run)."""
    from benchmarks import long_event

    kib, rounds = (32, 1) if smoke else (192, 3)
    bench.results.long_event = long_event.measure(kib, 64, rounds)


def chain_construction(bench: Bench, rounds: int) -> None:
    """The chain construction time: the median of ``rounds`` rounds of ``CONSTRUCTION_CHAINS`` chains each."""
    results = bench.results
    builds: list[float] = []
    wholes: list[float] = []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            build_s, whole_s = rx.chain_construction(CONSTRUCTION_CHAINS)
        finally:
            gc.enable()
        builds.append(build_s)
        wholes.append(whole_s)
    results.construction = {"build_ms": statistics.median(builds) * 1e3, "whole_ms": statistics.median(wholes) * 1e3}

