"""Row 5, loopback HTTP: the same bytes served by the emulator (a child process, ``_emulator_proc.py``) in 4 KB
writes, read by httpx alone, through ``pipeline.stream`` to the assembled message, and by the library's whole client.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from pathlib import Path
from typing import Any

import pipeline
from benchmarks import _workloads as work
from benchmarks._rows import compare, expected_message
from benchmarks._throughput import PIECE, Bench
from benchmarks.corpus import Corpus

__all__ = ["loopback"]


def loopback(bench: Bench, corpus: Corpus, base_url: str, path: Path) -> None:
    """Row 5: the same bytes served by the emulator (a child process) over loopback HTTP in 4 KB writes.

    - HTTP read only: ``httpx.AsyncClient.stream`` + ``aiter_bytes()``, counting bytes (the transport's cost);
    - HTTP + ours: the same, through ``pipeline.stream(response.aiter_bytes())`` to ``assemble_async``;
    - ChatClient: the library's whole client (``pipeline.ChatClient.complete``), when it exists.
    Each request is timed from sending it to the last byte or the assembled message; rows interleaved."""
    import httpx

    repeats = bench.repeats(corpus.name)
    headers = {
        "x-emulator-profile": "replay",
        "x-emulator-file": str(path),
        "x-emulator-chunk-bytes": str(PIECE),
    }
    messages = [{"role": "user", "content": "hi"}]
    body = {"model": "emulator/replay", "stream": True, "messages": messages}
    chat_client_class = getattr(pipeline, "ChatClient", None)

    def to_message(message: Any) -> work.Message:
        return work.Message(message.text, [(c.id, c.name, c.arguments) for c in message.tool_calls],
                            message.finish.kind)

    async def measure() -> list[tuple[str, list[float], Any]]:
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:

            async def read_only() -> int:
                total = 0
                async with client.stream("POST", "/chat/completions", json=body, headers=headers) as response:
                    async for piece in response.aiter_bytes():
                        total += len(piece)
                return total

            async def ours() -> work.Message:
                async with client.stream("POST", "/chat/completions", json=body, headers=headers) as response:
                    message = await pipeline.assemble_async(pipeline.stream(response.aiter_bytes()))
                return to_message(message)

            rows: list[tuple[str, Any]] = [("loopback: HTTP read only", read_only),
                                           ("loopback: HTTP + ours -> assembled", ours)]
            chat_client: Any = None
            if chat_client_class is not None:
                try:
                    chat_client = chat_client_class(base_url=f"{base_url}", model="emulator/replay",
                                                    headers=headers, http_client=client)

                    async def whole_client() -> work.Message:
                        return to_message(await chat_client.complete(messages))

                    rows.append(("loopback: ChatClient.complete", whole_client))
                except Exception as exc:
                    bench.results.notes.append(f"ChatClient row skipped: {type(exc).__name__}: {exc}")
            times: dict[str, list[float]] = {label: [] for label, _ in rows}
            results: dict[str, Any] = {}
            for _, make in rows:
                await make()  # warm-up: the connection, the server's first replay
            gc.collect()
            for _ in range(repeats):
                for label, make in rows:
                    gc.disable()
                    try:
                        start = time.perf_counter()
                        results[label] = await make()
                        times[label].append(time.perf_counter() - start)
                    finally:
                        gc.enable()
            return [(label, times[label], results[label]) for label, _ in rows]

    want = expected_message(corpus)
    ours_row = bench.results.row(corpus.name, "ours: bytes->assembled")
    note = "emulator (child process) replay in 4 KB writes"
    for label, times, result in asyncio.run(measure()):
        if isinstance(result, work.Message):
            problem = compare(result, want)
            if problem:
                bench.fail(f"{corpus.name}: {label}: the assembled message differs: {problem}")
            verdict = "✗ " + problem if problem else "✓"
            row = bench.add(corpus, label, statistics.median(times), len(times), ok=verdict,
                           note=note + ("; base_url .../v1" if "ChatClient" in label else ""))
            if ours_row is not None and ours_row.seconds:
                row.ratio_ours = statistics.median(times) / ours_row.seconds
        else:
            ok = "✓" if result == len(corpus.data) else f"✗ {result} bytes"
            bench.add(corpus, label, statistics.median(times), len(times), ok=ok, note=note)
