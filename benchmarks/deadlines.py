"""Deadlines and bounded error bodies, measured against the hostile loopback servers of tests/hostile_server.py.

    python -m benchmarks.deadlines

idle_timeout=1 s, total_timeout=2 s: the time to the TIMEOUT finish for each hanging server; for the endless 500 body
and the gzip bomb (1 GiB inflated), the time and the tracemalloc peak until LIMIT_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import tracemalloc
from pathlib import Path

from operators import Finish
from pipeline.client import ChatClient

_HOSTILE = Path(__file__).parent.parent / "tests" / "hostile_server.py"
_spec = importlib.util.spec_from_file_location("hostile_server", _HOSTILE)
assert _spec is not None
assert _spec.loader is not None
_hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hostile)
HostileServer = _hostile.HostileServer

MESSAGES = [{"role": "user", "content": "hi"}]


async def one(mode: str) -> tuple[str, float, int]:
    async with (
        HostileServer(mode, interval=0.2) as server,
        ChatClient(server.base_url, model="m", idle_timeout=1, total_timeout=2) as client,
    ):
        tracemalloc.start()
        started = time.perf_counter()
        chunks = [c async for c in client.stream(MESSAGES, retry=False)]
        took = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    return finish.reason.code or "", took, peak


async def main() -> None:
    print(f"{'server':22} {'finish':16} {'seconds':>8} {'peak MiB':>9}")
    for mode in ("never-answers", "status-only", "headers-stall", "error-body-stalls", "keepalive-forever",
                 "endless-error-body", "gzip-bomb"):
        code, took, peak = await one(mode)
        print(f"{mode:22} {code:16} {took:8.3f} {peak / 2**20:9.2f}")


if __name__ == "__main__":
    asyncio.run(main())
