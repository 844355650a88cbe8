"""What sanitizing costs a client: added latency per event, CPU per event and throughput, through
``SanitizingTransport`` and through ``llm-stream proxy``, against a direct connection to the same loopback emulator.

    python -m benchmarks.proxy [--runs 20] [--events 50] [--drip-ms 2] [--big 20000] [--rounds 5]

The emulator runs in a child process (``_emulator_proc``), the proxy in another (``python -m pipeline.cli proxy``),
the client here, each with its own interpreter. Latency: a generated stream of ``--events`` text deltas, one every
``--drip-ms`` (the emulator's ``replay`` profile); for each text event k the client notes when it arrived, counted
from the moment the request was sent, minus k x drip (its place in the schedule): the event's lateness. Printed as
p50 and p99 over every event of every run, per path, at 1 stream and at 100 concurrent streams; the added latency of
a path is its percentile minus the direct one. Throughput: one stream of ``--big`` text deltas with no pause, read
to its end: events per second on each path and the ratio to direct. CPU per event: in each of ``--rounds``
interleaved rounds of the throughput stream, this process's CPU time (the client, plus the transport on that path)
and the proxy child's CPU time, divided by the events; the added CPU of a path is its median minus direct's. The
repairer alone (``ChatRepair`` fed the stream in one-event reads, as the latency runs deliver it) is timed the same
way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]

from pipeline import SanitizingTransport
from pipeline.sanitize import ChatRepair

from ._emulator_proc import ROOT, EmulatorProcess

BODY = {"model": "emulator/replay", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
MARK = b'"content"'
EVENT_BYTES = 172
"""The size of each generated text event (fixed: the token number has six digits)."""


def generate(path: Path, events: int) -> None:
    lines = [
        'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"bench",'
        f'"choices":[{{"index":0,"delta":{{"content":"token{n:06d} "}},"finish_reason":null}}]}}\n\n'
        for n in range(events)
    ]
    lines.append(
        'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"bench",'
        '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    )
    lines.append("data: [DONE]\n\n")
    path.write_text("".join(lines))


class ProxyProcess:
    """``llm-stream proxy --upstream URL --port 0`` as a child; ``base_url`` from its first line."""

    def __init__(self, upstream: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", upstream, "--port", "0",
             "--forward-headers", "x-emulator-*"],  # the emulator's knobs are headers, off the proxy's allow-list
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # the access log: one line per request
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert self._process.stdout is not None
        banner = self._process.stdout.readline()
        self.base_url = banner.split("base_url ", 1)[1].split(" ", 1)[0]
        self.process = psutil.Process(self._process.pid)

    def cpu_s(self) -> float:
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def close(self) -> None:
        self._process.terminate()  # our own child, by its handle
        self._process.wait(timeout=15)


async def _offsets(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> list[float]:
    """Arrival offsets (seconds since the request was sent) of each text event."""
    offsets: list[float] = []
    started = time.perf_counter()
    async with client.stream("POST", url, json=BODY, headers=headers) as response:
        async for piece in response.aiter_raw():
            now = time.perf_counter() - started
            offsets.extend([now] * piece.count(MARK))
    return offsets


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


ClientFactory = Callable[[], httpx.AsyncClient]


async def _latency(
    paths: dict[str, tuple[ClientFactory, str]], headers: dict[str, str], runs: int, streams: int
) -> dict[str, list[list[float]]]:
    """Every path in turn within each run (so they share the machine's conditions), after one warm-up round each."""
    out: dict[str, list[list[float]]] = {name: [] for name in paths}
    clients = {name: (make(), url) for name, (make, url) in paths.items()}
    try:
        for run in range(runs + 1):
            for name, (client, url) in clients.items():
                batch = await asyncio.gather(*(_offsets(client, url, headers) for _ in range(streams)))
                if run:
                    out[name].extend(batch)
    finally:
        for client, _ in clients.values():
            await client.aclose()
    return out


def _lateness(runs: dict[str, list[list[float]]], drip_s: float) -> dict[str, tuple[float, float]]:
    """p50 and p99 (ms) of each event's arrival offset minus its place in the schedule (k x drip)."""
    result: dict[str, tuple[float, float]] = {}
    for name, measured in runs.items():
        late = [offset - k * drip_s for run in measured for k, offset in enumerate(run)]
        result[name] = (_percentile(late, 0.5) * 1000, _percentile(late, 0.99) * 1000)
    return result


async def _throughput(
    make: ClientFactory, url: str, headers: dict[str, str], proxy: ProxyProcess
) -> tuple[float, int, float, float]:
    """Seconds, events, this process's CPU seconds and the proxy's CPU seconds of one read of the big stream."""
    async with make() as client:
        started, cpu, proxy_cpu = time.perf_counter(), time.process_time(), proxy.cpu_s()
        offsets = await _offsets(client, url, headers)
        return time.perf_counter() - started, len(offsets), time.process_time() - cpu, proxy.cpu_s() - proxy_cpu


def _repair_us(stream: bytes, rounds: int) -> float:
    """Median CPU microseconds per event of ``ChatRepair`` alone, fed one event per read."""
    events = stream.split(b"\n\n")
    pieces = [e + b"\n\n" for e in events if e]
    results = []
    for _ in range(rounds):
        repair = ChatRepair()
        started = time.process_time()
        for piece in pieces:
            repair.feed(piece)
        repair.close()
        results.append((time.process_time() - started) / len(pieces) * 1e6)
    return statistics.median(results)


def _clients(emulator: str, proxy: str) -> dict[str, tuple[ClientFactory, str]]:
    # No keep-alive on any path: the transport closes each upstream response at its finish (it does not wait for
    # the connection to end after [DONE]), so its connections are never reused; the direct client must not reuse
    # them either, or it measures the emulator's keep-alive handling instead (1-2 s first events at 100 streams).
    pool = httpx.Limits(max_connections=None, max_keepalive_connections=0)

    def direct() -> httpx.AsyncClient:
        return httpx.AsyncClient(limits=pool, timeout=120)

    def transport() -> httpx.AsyncClient:
        inner = httpx.AsyncHTTPTransport(limits=pool)
        return httpx.AsyncClient(transport=SanitizingTransport(inner), timeout=120)

    return {
        "direct": (direct, f"{emulator}/chat/completions"),
        "transport": (transport, f"{emulator}/chat/completions"),
        "proxy": (direct, f"{proxy}/chat/completions"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="runs per path at 1 stream (default 20)")
    parser.add_argument("--events", type=int, default=50, help="text events per latency stream (default 50)")
    parser.add_argument("--drip-ms", type=float, default=2.0, help="pause between events (default 2 ms)")
    parser.add_argument("--concurrent", type=int, default=100, help="concurrent streams (default 100)")
    parser.add_argument("--big", type=int, default=20000, help="text events of the throughput stream")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved throughput rounds (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.sse", Path(tmp) / "big.sse"
        generate(small, args.events)
        generate(big, args.big)
        first = small.read_bytes().split(b"\n\n", 1)[0] + b"\n\n"
        assert len(first) == EVENT_BYTES, len(first)
        with EmulatorProcess(Path(tmp)) as emulator:
            proxy = ProxyProcess(emulator.base_url)
            try:
                paths = _clients(emulator.base_url, proxy.base_url)
                replay = {
                    "x-emulator-profile": "replay",
                    "x-emulator-drip-ms": str(args.drip_ms),
                    "x-emulator-chunk-bytes": str(EVENT_BYTES),  # one event per write
                }
                report: dict[str, Any] = {}
                for streams, runs in ((1, args.runs), (args.concurrent, 2)):
                    measured = asyncio.run(_latency(paths, replay | {"x-emulator-file": str(small)}, runs, streams))
                    report[f"latency_{streams}"] = _lateness(measured, args.drip_ms / 1000)
                fast = {"x-emulator-profile": "replay", "x-emulator-file": str(big)}
                rounds: dict[str, list[tuple[float, int, float, float]]] = {name: [] for name in paths}
                for _ in range(args.rounds):
                    for name, (make, url) in paths.items():
                        rounds[name].append(asyncio.run(_throughput(make, url, fast, proxy)))
                report["throughput"] = {
                    name: tuple(statistics.median(r[i] for r in measured) for i in range(4))
                    for name, measured in rounds.items()
                }
                report["repair_us"] = _repair_us(big.read_bytes(), args.rounds)
            finally:
                proxy.close()
    _print(report, args)


def _print(report: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"event lateness (ms after its place in the schedule; {args.events} events every {args.drip_ms:g} ms)")
    for key in (k for k in report if k.startswith("latency_")):
        streams = key.split("_")[1]
        d50, d99 = report[key]["direct"]
        for name, (p50, p99) in report[key].items():
            added = "" if name == "direct" else f"   added p50 {p50 - d50:+7.3f}  p99 {p99 - d99:+8.3f}"
            print(f"  {streams:>3} stream(s)  {name:<10} p50 {p50:7.3f}  p99 {p99:8.3f}{added}")
    direct_s, _, direct_cpu, _ = report["throughput"]["direct"]
    print(f"throughput and CPU ({args.big:,} text events, no pause; medians of {args.rounds} interleaved rounds)")
    for name, (seconds, events, cpu, proxy_cpu) in report["throughput"].items():
        rate = events / seconds
        client_us = cpu / events * 1e6
        added = (cpu - direct_cpu) / events * 1e6 + (proxy_cpu / events * 1e6 if name == "proxy" else 0.0)
        print(f"  {name:<10} {seconds:6.3f} s  {rate:10,.0f} events/s   time ratio to direct {seconds / direct_s:5.2f}"
              f"   client CPU {client_us:5.2f} us/event   proxy CPU {proxy_cpu / events * 1e6:5.2f} us/event"
              f"   added CPU {added:+5.2f} us/event")
    print(f"ChatRepair alone, one event per read: {report['repair_us']:.2f} us/event (median of {args.rounds})")


if __name__ == "__main__":
    main()
