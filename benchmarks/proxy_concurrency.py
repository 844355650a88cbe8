"""The proxy's CPU per stream as the streams in flight grow: it should stay flat (issue 21 found 15.6 ms per stream
at 1,000 concurrent streams, growing with their number; docs/decisions/0047-the-proxy-as-operated.md).

    python -m benchmarks.proxy_concurrency [--streams 100,1000] [--rounds 3] [--events 20]

The emulator (``replay`` of a generated stream) and ``llm-stream proxy`` each run in a child process; here, N
streamed requests at once go through the proxy, every one read to its end. The proxy process's CPU time (user +
system) over the batch, divided by N, is its CPU per stream. Rounds interleave the sizes (100, 1000,
100, 1000, ...); the median per size is printed with the ratio of the largest size to the smallest (flat: near 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

import httpx

from ._emulator_proc import EmulatorProcess
from .proxy import BODY, ProxyProcess, generate


async def _batch(base_url: str, streams: int, headers: dict[str, str]) -> int:
    """N concurrent streams read to their end; how many ended with ``[DONE]``."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:

        async def one() -> bool:
            async with client.stream("POST", f"{base_url}/chat/completions", json=BODY, headers=headers) as response:
                body = await response.aread()
            return response.status_code == 200 and body.rstrip().endswith(b"[DONE]")

        return sum(await asyncio.gather(*(one() for _ in range(streams))))


def measure(sizes: list[int], rounds: int, events: int) -> dict[int, list[float]]:
    """CPU ms per stream of the proxy process, per size, one value per round."""
    out: dict[int, list[float]] = {size: [] for size in sizes}
    os.environ.setdefault("LLM_STREAM_PROXY_MAX_STREAMS", str(2 * max(sizes)))  # the proxy's cap is not measured
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "stream.sse"
        generate(replay, events)
        headers = {"x-emulator-profile": "replay", "x-emulator-file": str(replay)}
        with EmulatorProcess(Path(tmp)) as emulator:
            proxy = ProxyProcess(emulator.base_url)
            try:
                asyncio.run(_batch(proxy.base_url, 20, headers))  # warm-up
                for _ in range(rounds):
                    for size in sizes:
                        before = proxy.cpu_s()
                        done = asyncio.run(_batch(proxy.base_url, size, headers))
                        cpu = proxy.cpu_s() - before
                        if done != size:
                            raise SystemExit(f"only {done} of {size} streams ended with [DONE]")
                        out[size].append(cpu / size * 1000)
            finally:
                proxy.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="100,1000", help="comma-separated batch sizes (default 100,1000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=20, help="text events per stream (default 20)")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.streams.split(","))
    results = measure(sizes, args.rounds, args.events)
    medians = {size: statistics.median(values) for size, values in results.items()}
    for size, median in medians.items():
        shown = ", ".join(f"{v:.2f}" for v in results[size])
        print(f"{size:>6} concurrent streams: {median:6.2f} ms CPU per stream (median; rounds: {shown})")
    print(f"ratio {sizes[-1]} / {sizes[0]}: {medians[sizes[-1]] / medians[sizes[0]]:.2f} (flat: near 1)")


if __name__ == "__main__":
    main()
