"""N concurrent streams over loopback HTTP: total events/s, CPU use, and the latency the pipeline adds per event.

    python -m benchmarks.concurrency [--streams 1,10,100,1000] [--events 60] [--json FILE]

Runs only when ``pipeline.emulator.Emulator`` and the transport client (``pipeline.client.ChatClient``)
exist at run time; otherwise it prints "skipped: needs the emulator and transport" and exits 0.

Setup: the emulator runs in a child process (its own interpreter and GIL) and replays, for every request, the same
response whose events are all exactly 448 bytes, in 448-byte writes with ``x-emulator-drip-ms: 50`` between them:
each stream is one event per write at 20 events/s. The client (this process, one asyncio loop) opens N streams
with one ``httpx.AsyncClient`` and reads each with ``pipeline.stream(response.aiter_bytes())``. The N requests
start spread over a ramp (2 ms apart, at most 2 s) so the emulator's accept backlog does not overflow.

Latency: the emulator's events carry no send timestamp (it replays fixed bytes), so the added latency is measured
in the client only: from the moment ``response.aiter_bytes()`` hands a read to the pipeline to the moment
``pipeline.stream`` hands out each chunk that read produced. It is the pipeline's own time per event; it does not
include time spent in the kernel, in httpx, or waiting for the event loop. The stream durations (ideal:
events / 20 s) show whether the server and the client kept up.

CPU: user + system seconds over the wall time of each run, for this process (``getrusage``) and for the emulator
process (``psutil``); 100% is one core, the machine's ceiling is cores x 100%.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python benchmarks/concurrency.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pipeline
from benchmarks._emulator_proc import EmulatorProcess, emulator_class
from benchmarks.corpus import CORPUS_DIR, fixed_size_response

__all__ = ["available", "main"]

EVENT_BYTES = 448
DRIP_MS = 50
RAMP_STEP_S = 0.002
RAMP_MAX_S = 2.0
SKIPPED = "skipped: needs the emulator and transport"


def available() -> bool:
    """The emulator and the transport client both exist (checked at run time)."""
    if emulator_class() is None:
        return False
    try:
        transport = importlib.import_module("pipeline.client")
    except ImportError:
        return False
    return hasattr(transport, "ChatClient")


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pid: int) -> float | None:
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:
        return None
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _run(base_url: str, path: Path, streams: int, events: int) -> dict[str, Any]:
    import httpx

    headers = {
        "x-emulator-profile": "replay",
        "x-emulator-file": str(path),
        "x-emulator-chunk-bytes": str(EVENT_BYTES),
        "x-emulator-drip-ms": str(DRIP_MS),
    }
    body = {"model": "emulator/replay", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    latencies: list[float] = []
    durations: list[float] = []
    received = 0
    errors: list[str] = []
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    ramp = min(RAMP_MAX_S, streams * RAMP_STEP_S) / max(streams, 1)

    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120) as client:

        async def one(n: int) -> None:
            nonlocal received
            await asyncio.sleep(n * ramp)
            started = time.perf_counter()
            read_at = 0.0
            chunks = 0
            last: Any = None
            try:
                async with client.stream("POST", "/chat/completions", json=body, headers=headers) as response:

                    async def reads() -> AsyncIterator[bytes]:
                        nonlocal read_at
                        async for piece in response.aiter_bytes():
                            read_at = time.perf_counter()
                            yield piece

                    async for chunk in pipeline.stream(reads()):
                        latencies.append(time.perf_counter() - read_at)
                        chunks += 1
                        last = chunk
                finish = getattr(getattr(last, "reason", None), "kind", None)
                if finish != "stop":
                    errors.append(f"finish {finish!r}")
            except Exception as exc:  # a broken stream is counted, not fatal
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            durations.append(time.perf_counter() - started)
            received += events

        cpu_start = _cpu_self()
        wall_start = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(streams)))
        wall = time.perf_counter() - wall_start
        cpu = _cpu_self() - cpu_start

    return {
        "streams": streams,
        "events": received,
        "wall_s": wall,
        "client_cpu_s": cpu,
        "latencies": latencies,
        "durations": durations,
        "errors": errors,
    }


def measure(stream_counts: list[int], events: int) -> dict[str, Any]:
    corpus = fixed_size_response(events, EVENT_BYTES)
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    path = CORPUS_DIR / "concurrency.sse"
    path.write_bytes(corpus.data)
    runs: list[dict[str, Any]] = []
    with EmulatorProcess(CORPUS_DIR) as server:
        asyncio.run(_run(server.base_url, path, 1, events))  # warm-up: imports, first connection
        for streams in stream_counts:
            print(f"  {streams} streams ...", file=sys.stderr, flush=True)
            server_cpu_start = _cpu_of(server.pid)
            raw = asyncio.run(_run(server.base_url, path, streams, corpus.payloads))
            server_cpu_end = _cpu_of(server.pid)
            wall = raw["wall_s"]
            latencies_ms = [x * 1e3 for x in raw["latencies"]]
            durations = raw["durations"]
            server_cpu = (
                None if server_cpu_start is None or server_cpu_end is None else server_cpu_end - server_cpu_start
            )
            runs.append({
                "streams": streams,
                "events": raw["events"],
                "wall_s": wall,
                "events_per_s": raw["events"] / wall,
                "offered_events_per_s": streams * 1000 / DRIP_MS,
                "client_cpu_pct": raw["client_cpu_s"] / wall * 100,
                "server_cpu_pct": None if server_cpu is None else server_cpu / wall * 100,
                "latency_p50_ms": _percentile(latencies_ms, 0.50),
                "latency_p99_ms": _percentile(latencies_ms, 0.99),
                "latency_max_ms": max(latencies_ms, default=float("nan")),
                "latency_mean_ms": statistics.fmean(latencies_ms) if latencies_ms else float("nan"),
                "chunks": len(latencies_ms),
                "duration_p50_s": _percentile(durations, 0.50),
                "duration_p99_s": _percentile(durations, 0.99),
                "ideal_duration_s": (corpus.payloads - 1) * DRIP_MS / 1000,
                "errors": len(raw["errors"]),
                "first_errors": raw["errors"][:3],
            })
    return {
        "method": (
            f"concurrency: N streams x {corpus.payloads} events of {EVENT_BYTES} B at 20 events/s each "
            f"(emulator replay, drip {DRIP_MS} ms, child process); httpx.AsyncClient + pipeline.stream(aiter_bytes());"
            " latency = read handed to the pipeline -> chunk handed out, in the client (the emulator's events carry"
            " no send timestamp)"
        ),
        "runs": runs,
        "table": table(runs),
    }


def table(runs: list[dict[str, Any]]) -> str:
    header = (f"{'streams':>7} {'events/s':>9} {'offered':>8} {'client CPU':>10} {'server CPU':>10} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'stream s p50/p99 (ideal)':>25} {'errors':>6}")
    lines = [header, "-" * len(header)]
    for r in runs:
        server = "-" if r["server_cpu_pct"] is None else f"{r['server_cpu_pct']:.0f}%"
        duration = f"{r['duration_p50_s']:.2f}/{r['duration_p99_s']:.2f} ({r['ideal_duration_s']:.2f})"
        lines.append(
            f"{r['streams']:>7} {r['events_per_s']:>9,.0f} {r['offered_events_per_s']:>8,.0f} "
            f"{r['client_cpu_pct']:>9.0f}% {server:>10} {r['latency_p50_ms']:>7.3f} {r['latency_p99_ms']:>7.3f} "
            f"{r['latency_max_ms']:>7.2f} {duration:>25} {r['errors']:>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="1,10,100,1000", help="comma-separated stream counts")
    parser.add_argument("--events", type=int, default=40, help="events per stream (at 20 events/s)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = parser.parse_args(argv)
    if not available():
        print(SKIPPED)
        return
    results = measure([int(n) for n in args.streams.split(",") if n.strip()], args.events)
    print(results["method"])
    print(results["table"])
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
