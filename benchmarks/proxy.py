"""What sanitizing costs a client: added latency per event, CPU per event and throughput, through
``SanitizingTransport`` and through ``llm-stream proxy``, against a direct connection to the same loopback emulator;
then the proxy's goals (issue 34) with PASS / MISS.

    python -m benchmarks.proxy [--warmup 50] [--first-runs 200] [--runs 20] [--events 50] [--drip-ms 2]
                               [--concurrent 100] [--concurrent-runs 4] [--big 20000] [--big-event 5000] [--rounds 5]
                               [--loop auto|asyncio|uvloop]

The emulator runs in a child process (``_emulator_proc``), the proxy in another (``python -m pipeline.cli proxy``),
the client here, each with its own interpreter. First event: after ``--warmup`` requests per path (not counted),
``--first-runs`` requests per path, paths in turn (the order turned by one each run), for a stream of 3 text events
one every ``--drip-ms``; the time from sending the request to the first text event, p50 and p99 per path; a path's
added delay is its percentile minus direct's. Latency: a generated stream of ``--events`` text deltas, one every
``--drip-ms`` (the emulator's ``replay`` profile); for each text event k the client notes when it arrived, counted
from the moment the request was sent, minus k x drip (its place in the schedule): the event's lateness. Printed as
p50 and p99 over every event of every run, per path, at 1 stream and at 100 concurrent streams; the added latency of
a path is its percentile minus the direct one. Throughput: one stream of ``--big`` text deltas with no pause, read
to its end: events per second on each path and the ratio to direct. CPU per event: in each of ``--rounds``
interleaved rounds of the throughput stream, this process's CPU time (the client, plus the transport on that path)
and the proxy child's CPU time (per thread, in nanoseconds where Linux gives it), divided by the events; the added
CPU of a path is its median minus direct's, plus the proxy's own. The same once more for a stream of ``--big-event``
deltas written one event per write (so mostly read one per read, as live streams come). The repairer alone
(``ChatRepair`` fed the stream in one-event reads, as the latency runs deliver it) is timed the same way.

Goals (``GOALS``): the proxy's added first-event delay at p50 <= 1 ms; its added CPU per event forwarded <= 1 us
(the throughput stream); its p99 lateness at ``--concurrent`` streams <= 2x direct's. Every stream is checked: a path
that delivers another number of text events than the stream holds fails the run (exit 1).
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
from ._proxy_report import FIRST_EVENTS, print_report

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


def _thread_cpu_s(pid: int) -> float | None:
    """The CPU time of every thread of ``pid`` in nanoseconds (Linux's schedstat), or None where it is not given."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


class ProxyProcess:
    """``llm-stream proxy --upstream URL --port 0`` as a child; ``base_url`` from its first line."""

    def __init__(self, upstream: str, loop: str = "auto") -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", upstream, "--port", "0", "--loop", loop,
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
        precise = _thread_cpu_s(self.process.pid)  # psutil counts in clock ticks (10 ms): too coarse for a round
        if precise is not None:
            return precise
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def close(self) -> None:
        self._process.terminate()  # our own child, by its handle
        self._process.wait(timeout=15)


async def _offsets(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> list[float]:
    """Arrival offsets (seconds since the request was sent) of each text event."""
    offsets: list[float] = []
    tail = b""  # a mark may be cut across two reads
    started = time.perf_counter()
    async with client.stream("POST", url, json=BODY, headers=headers) as response:
        async for piece in response.aiter_raw():
            now = time.perf_counter() - started
            joined = tail + piece
            offsets.extend([now] * joined.count(MARK))
            tail = joined[1 - len(MARK):]
    return offsets


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


ClientFactory = Callable[[], httpx.AsyncClient]


async def _latency(
    paths: dict[str, tuple[ClientFactory, str]], headers: dict[str, str], runs: int, streams: int
) -> dict[str, list[list[float]]]:
    """Every path in turn within each run (so they share the machine's conditions), after one warm-up round each.
    The order turns by one each run, so that every path follows every other as often: a request right after one
    that closed its connection to the emulator finds the emulator still tearing that connection down (+0.1 to
    +0.2 ms on its first event, measured with two identical proxies in turn), and a fixed order charged that to
    one path (the proxy, after the transport's)."""
    out: dict[str, list[list[float]]] = {name: [] for name in paths}
    clients = {name: (make(), url) for name, (make, url) in paths.items()}
    names = list(clients)
    try:
        for run in range(runs + 1):
            for name in names[run % len(names):] + names[:run % len(names)]:
                client, url = clients[name]
                batch = await asyncio.gather(*(_offsets(client, url, headers) for _ in range(streams)))
                if run:
                    out[name].extend(batch)
    finally:
        for client, _ in clients.values():
            await client.aclose()
    return out


def _check(runs: dict[str, list[list[float]]], events: int) -> None:
    """Every stream on every path delivered all its text events (a wrong result fails the run)."""
    for name, measured in runs.items():
        short = [len(run) for run in measured if len(run) != events]
        if short:
            raise SystemExit(f"{name}: {len(short)} streams delivered {short[:3]} text events, not {events}")


def _first(runs: dict[str, list[list[float]]]) -> dict[str, tuple[float, float]]:
    """p50 and p99 (ms) of each stream's first text event's arrival after the request was sent."""
    return {name: (_percentile([run[0] for run in measured], 0.5) * 1000,
                   _percentile([run[0] for run in measured], 0.99) * 1000) for name, measured in runs.items()}


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
    # No keep-alive from this client on any path: each request opens its own connection, to the emulator or to the
    # proxy, so every path pays one connect (with keep-alive the direct path measured the emulator's keep-alive
    # handling instead: 1-2 s first events at 100 streams). The proxy's own connections upstream are kept alive, as
    # a deployed proxy's are (decision 0073).
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


def _throughputs(paths: dict[str, tuple[ClientFactory, str]], headers: dict[str, str], proxy: ProxyProcess,
                 rounds: int, events: int) -> dict[str, tuple[float, ...]]:
    """Medians over interleaved rounds of (seconds, events, client CPU s, proxy CPU s) per path."""
    measured: dict[str, list[tuple[float, int, float, float]]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, (make, url) in paths.items():
            result = asyncio.run(_throughput(make, url, headers, proxy))
            if result[1] != events:
                raise SystemExit(f"{name}: the throughput stream delivered {result[1]} text events, not {events}")
            measured[name].append(result)
    return {name: tuple(statistics.median(r[i] for r in results) for i in range(4))
            for name, results in measured.items()}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every pass of the benchmark (see the module's notes): the report ``_proxy_report`` prints and judges."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        first, small, big, per_read = (Path(tmp) / f"{n}.sse" for n in ("first", "small", "big", "per_read"))
        generate(first, FIRST_EVENTS)
        generate(small, args.events)
        generate(big, args.big)
        generate(per_read, args.big_event)
        head = small.read_bytes().split(b"\n\n", 1)[0] + b"\n\n"
        assert len(head) == EVENT_BYTES, len(head)
        with EmulatorProcess(Path(tmp)) as emulator:
            proxy = ProxyProcess(emulator.base_url, args.loop)
            try:
                paths = _clients(emulator.base_url, proxy.base_url)
                replay = {
                    "x-emulator-profile": "replay",
                    "x-emulator-drip-ms": str(args.drip_ms),
                    "x-emulator-chunk-bytes": str(EVENT_BYTES),  # one event per write
                }
                asyncio.run(_latency(paths, replay | {"x-emulator-file": str(first)}, args.warmup, 1))  # not counted
                measured = asyncio.run(_latency(paths, replay | {"x-emulator-file": str(first)}, args.first_runs, 1))
                _check(measured, FIRST_EVENTS)
                report["first_event"] = _first(measured)
                for streams, runs in ((1, args.runs), (args.concurrent, args.concurrent_runs)):
                    measured = asyncio.run(_latency(paths, replay | {"x-emulator-file": str(small)}, runs, streams))
                    _check(measured, args.events)
                    report[f"latency_{streams}"] = _lateness(measured, args.drip_ms / 1000)
                fast = {"x-emulator-profile": "replay", "x-emulator-file": str(big)}
                report["throughput"] = _throughputs(paths, fast, proxy, args.rounds, args.big)
                one_per_read = {"x-emulator-profile": "replay", "x-emulator-file": str(per_read),
                                "x-emulator-chunk-bytes": str(EVENT_BYTES)}
                report["per_read"] = _throughputs(paths, one_per_read, proxy, args.rounds, args.big_event)
                report["repair_us"] = _repair_us(big.read_bytes(), args.rounds)
            finally:
                proxy.close()
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--first-runs", type=int, default=200, help="first-event requests per path (default 200)")
    parser.add_argument("--warmup", type=int, default=50,
                        help="requests per path before the first-event runs, not counted (default 50: a proxy that "
                        "just started is still loading and specialising its code)")
    parser.add_argument("--runs", type=int, default=20, help="runs per path at 1 stream (default 20)")
    parser.add_argument("--events", type=int, default=50, help="text events per latency stream (default 50)")
    parser.add_argument("--drip-ms", type=float, default=2.0, help="pause between events (default 2 ms)")
    parser.add_argument("--concurrent", type=int, default=100, help="concurrent streams (default 100)")
    parser.add_argument("--concurrent-runs", type=int, default=4,
                        help="runs per path at the concurrent streams, after one not counted (default 4)")
    parser.add_argument("--big", type=int, default=20000, help="text events of the throughput stream")
    parser.add_argument("--big-event", type=int, default=5000,
                        help="text events of the stream written one event per write (default 5000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved throughput rounds (default 5)")
    parser.add_argument("--loop", default="auto", choices=("auto", "asyncio", "uvloop"),
                        help="the proxy's event loop (its --loop; default auto: uvloop where installed)")
    args = parser.parse_args(argv)
    report = measure(args)
    print_report(report, args)


if __name__ == "__main__":
    main()
