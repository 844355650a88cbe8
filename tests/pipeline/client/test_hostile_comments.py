"""Comment floods through ``ChatClient``: a gzip body of comment lines (1 MiB inflating to 1 GiB) from a raw server
on 127.0.0.1 (tests/hostile_server) ends within bounds, whether the ignored-line limit or the total deadline ends it.
Each scenario runs in a subprocess so its peak memory (``VmHWM``: ``ru_maxrss`` would keep the forking pytest's
peak across exec, over 400 MiB in a full run) is its own. The client asks only for the
encodings it inflates a slice at a time. docs/decisions/0039-ignored-lines.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from request_recorder import chat_text, recorder

from pipeline.client import ChatClient

pytestmark = pytest.mark.server  # tests/tiers.py

_SCRIPT = """
import asyncio, json, sys, time
sys.path.insert(0, {tests!r})

def peak_mib():
    # this process's own peak (the memory map's high-water mark, new at exec), not ru_maxrss, which keeps the
    # forking parent's peak across exec
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
from hostile_server import HostileServer
from operators import Limits
from pipeline.client import ChatClient

async def main():
    async with HostileServer("gzip-comments", bomb_bytes=1 << 30) as server:
        started = time.monotonic()
        if {through_stream!r}:  # pipeline.stream over an httpx.AsyncClient's response
            import httpx, pipeline
            async with httpx.AsyncClient() as http:
                request = http.build_request("POST", server.base_url + "/chat/completions", json={{}})
                response = await http.send(request, stream=True)
                chunks = [c async for c in pipeline.stream(response, limits=Limits(**{limits!r}))]
        else:
            client = ChatClient(server.base_url, model="m", total_timeout={total}, limits=Limits(**{limits!r}))
            chunks = [c async for c in client.stream([{{"role": "user", "content": "hi"}}], retry=False)]
            await client.aclose()
        took = time.monotonic() - started
    failure = chunks[-1].reason.failure
    rss = peak_mib()
    print(json.dumps({{"code": failure.code, "message": failure.message, "took": took, "rss_mib": rss}}))

asyncio.run(main())
"""


def _run(total: float, limits: dict[str, int], *, through_stream: bool = False) -> dict[str, object]:
    tests = str(Path(__file__).parents[2])
    script = _SCRIPT.format(tests=tests, total=total, limits=limits, through_stream=through_stream)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_gzip_body_of_comment_lines_ends_at_the_ignored_line_limit_within_20_s_and_400_mib() -> None:
    result = _run(10, {})

    assert result["code"] == "LIMIT_EXCEEDED"
    assert "max_ignored_lines=100000" in str(result["message"])
    assert float(result["took"]) < 20  # type: ignore[arg-type]
    assert float(result["rss_mib"]) < 400  # type: ignore[arg-type]


def test_the_total_timeout_fires_while_a_gzip_body_of_comment_lines_is_being_read() -> None:
    result = _run(1, {"max_ignored_lines": 10**9})

    assert result["code"] == "TIMEOUT"
    assert "total_timeout=1" in str(result["message"])
    assert float(result["took"]) < 20  # type: ignore[arg-type]
    assert float(result["rss_mib"]) < 400  # type: ignore[arg-type]


def test_a_gzip_body_of_comment_lines_read_by_pipeline_stream_ends_at_the_limit_within_400_mib() -> None:
    result = _run(10, {}, through_stream=True)

    assert result["code"] == "LIMIT_EXCEEDED"
    assert float(result["took"]) < 20  # type: ignore[arg-type]
    assert float(result["rss_mib"]) < 400  # type: ignore[arg-type]


async def test_the_client_asks_only_for_the_encodings_it_inflates_a_slice_at_a_time() -> None:
    async with recorder([chat_text("hi")]) as server:
        async with ChatClient(server.base_url, model="m") as client:
            await client.complete([{"role": "user", "content": "hi"}])
        async with ChatClient(server.base_url, model="m", headers={"Accept-Encoding": "identity"}) as client:
            await client.complete([{"role": "user", "content": "hi"}])

    assert [request.headers["accept-encoding"] for request in server.requests] == ["gzip, deflate", "identity"]
