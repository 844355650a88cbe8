"""Part 2 of ``llm-stream demo``: live requests through the whole client, against the emulator on loopback.

Imported only when the demo runs; importing it raises ``ImportError`` without the emulator extra.
"""

from __future__ import annotations

import asyncio
import time
from typing import TextIO

from operators import RetryPolicy
from pipeline.client import ChatClient
from pipeline.emulator import Emulator

from ._errors import EXIT_OK
from ._render import Printer

__all__ = ["DEMO_REQUESTS", "run_live_demo"]

DEMO_REQUESTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("a clean response", "clean", {}),
    ("the same stream over HTTP (identity repeated as \"\" and null)", "seed-bug", {}),
    (
        "a never-identified call, refused twice, then retried into a success",
        "never-identified",
        {"x-emulator-fail-first": "2", "x-emulator-then": "clean-tool", "x-emulator-key": "demo-never"},
    ),
    (
        "HTTP 429 with Retry-After: 1, honoured, then a success",
        "rate-limit",
        {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-retry-after": "1",
         "x-emulator-key": "demo-429"},
    ),
    ("a stream cut mid-way, retried", "drop-mid-stream",
     {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-key": "demo-drop"}),
)


async def _run(out: TextIO, color: bool | None) -> None:
    policy = RetryPolicy.normal(initial_delay_ms=200, max_delay_ms=2_000)
    with Emulator() as emulator:
        out.write(f"\n== 2. Live requests to the gateway emulator at {emulator.base_url}\n")
        for number, (title, profile, headers) in enumerate(DEMO_REQUESTS, start=1):
            out.write(f"\n-- 2.{number} {title} (profile {profile})\n")
            started = time.perf_counter()
            async with ChatClient(emulator.base_url, model=profile, headers=headers, retry_policy=policy) as client:
                printer = Printer(out, mode="text", color=color)
                async for chunk in client.stream([{"role": "user", "content": "demo"}], anomalies=True):
                    printer.chunk(chunk)
                printer.summary()
            out.write(f"   ({(time.perf_counter() - started) * 1000:.0f} ms)\n")


def run_live_demo(out: TextIO, *, color: bool | None = None) -> int:
    asyncio.run(_run(out, color))
    return EXIT_OK
