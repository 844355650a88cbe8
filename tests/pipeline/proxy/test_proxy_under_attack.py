"""The proxy under hostile clients (issue 21): dot segments stay under the base path, a 100 MB body is 413 without
the proxy growing, a dripped header is cut off, a client hanging up releases the upstream, an ordinary request is
answered beside 150 slow streams, the total deadline holds, hop-by-hop headers (and those ``Connection`` names) and
``Expect`` are dropped, and no empty query is added. Real servers on loopback: the proxy, a recording gateway."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from proxy_gateway import Gateway

from pipeline.proxy import Proxy


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as gw:
        yield gw


@pytest.fixture(scope="module")
def proxy(gateway: Gateway) -> Iterator[Proxy]:
    with Proxy(gateway.base_url, header_timeout=2, total_timeout=30, forward_headers="x-hop,x-fine") as running:
        yield running


def _raw(port: int, request: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received or not re.search(rb"content-length: (\d+)", received.lower()):
            piece = sock.recv(65536)
            if not piece:
                break
            received += piece
        return received


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/%2e%2e/%2e%2e/x", None),
        ("/v1/%2E%2E/x", None),
        ("/v1/../x", None),
        ("/v1/a/%2e%2e/%2e%2e/x", None),
        ("/v1/%2e%2e%2fx", None),
        ("/v1/a/%2e%2e/models", "/v1/models"),
        ("/v1/./models", "/v1/models"),
        ("/v1/models/org%2Fname", "/v1/models/org%2Fname"),
    ],
)
def test_dot_segments_never_leave_the_upstreams_base_path(
    gateway: Gateway, proxy: Proxy, path: str, expected: str | None
) -> None:
    before = len(gateway.seen)
    answer = _raw(proxy.port, f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
    if expected is None:
        assert answer.startswith(b"HTTP/1.1 400"), answer
        assert len(gateway.seen) == before
    else:
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert gateway.seen[-1].target == expected


def test_no_empty_query_is_added_and_a_query_goes_as_sent(gateway: Gateway, proxy: Proxy) -> None:
    httpx.get(f"{proxy.base_url}/models")
    assert gateway.seen[-1].target == "/v1/models"
    httpx.get(f"{proxy.base_url}/models?a=1&b=%20")
    assert gateway.seen[-1].target == "/v1/models?a=1&b=%20"


def test_hop_by_hop_headers_those_connection_names_and_expect_are_dropped(gateway: Gateway, proxy: Proxy) -> None:
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
               b"connection: keep-alive, x-hop\r\nx-hop: 1\r\nx-fine: 2\r\nkeep-alive: timeout=5\r\nte: trailers\r\n"
               b"expect: 100-continue\r\nproxy-authorization: Basic eA==\r\ncontent-length: 2\r\n\r\n{}")
    answer = _raw(proxy.port, request)
    assert re.match(rb"(HTTP/1.1 100 Continue\r\n\r\n)?HTTP/1.1 200 ", answer), answer
    seen = gateway.seen[-1].headers
    assert seen["x-fine"] == "2"
    assert not {"x-hop", "keep-alive", "te", "expect", "proxy-authorization"} & set(seen)
    assert seen.get("connection", "close").lower() in ("close", "keep-alive")


def test_a_header_dripped_one_byte_a_second_is_cut_off(proxy: Proxy) -> None:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as sock:
        line = b"GET /v1/models HTTP/1.1\r\nhost: x\r\nx-slow: " + b"a" * 100
        try:
            for byte in line:
                sock.sendall(bytes([byte]))
                if time.monotonic() - started > 15:
                    break
                sock.settimeout(1.0)
                try:
                    if sock.recv(1) == b"":
                        break  # closed by the proxy
                except TimeoutError:
                    continue
        except (BrokenPipeError, ConnectionResetError):
            pass
    assert time.monotonic() - started < 8  # header_timeout=2, never 100 s


def test_a_client_hanging_up_before_the_first_byte_releases_the_upstream_within_3_s(
    gateway: Gateway, proxy: Proxy
) -> None:
    released = len(gateway.released)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{proxy.base_url}/chat/completions", json={"model": "silent", "stream": True}, timeout=1)
    hung_up = time.monotonic()
    deadline = hung_up + 3
    while len(gateway.released) == released and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(gateway.released) == released + 1
    assert gateway.released[-1] - hung_up < 3


def test_the_total_deadline_answers_504_and_releases_the_upstream(gateway: Gateway) -> None:
    with Proxy(gateway.base_url, total_timeout=1) as short:
        started = time.monotonic()
        response = httpx.post(f"{short.base_url}/chat/completions", json={"model": "silent"}, timeout=20)
        assert time.monotonic() - started < 5
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "TIMEOUT"


async def test_an_ordinary_request_beside_150_slow_streams_is_answered_within_5_s(proxy: Proxy) -> None:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def slow() -> int:
            body = {"model": "events:4:2", "stream": True}
            async with client.stream("POST", f"{proxy.base_url}/chat/completions", json=body) as response:
                async for _ in response.aiter_raw():
                    pass
                return response.status_code

        streams = [asyncio.ensure_future(slow()) for _ in range(150)]
        await asyncio.sleep(1.5)
        started = time.monotonic()
        ordinary = await client.get(f"{proxy.base_url}/models", timeout=5)
        took = time.monotonic() - started
        statuses = await asyncio.gather(*streams)
    assert ordinary.status_code == 200
    assert took < 5
    assert statuses == [200] * 150


def _peak_rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):  # noqa: SIM115 - a one-shot read of a proc file
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_a_100_mb_body_gets_413_without_the_proxy_growing_past_300_mib(gateway: Gateway) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", gateway.base_url, "--port", "0",
         "--log-format", "off"],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ),
    )
    try:
        assert process.stdout is not None
        url = re.search(r"base_url (\S+)", process.stdout.readline()).group(1)  # type: ignore[union-attr]
        before = len(gateway.seen)
        block = b"x" * (1024 * 1024)
        declared = httpx.post(f"{url}/chat/completions", content=block * 100, timeout=60)
        assert declared.status_code == 413
        assert declared.json()["error"]["code"] == "LIMIT_EXCEEDED"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the proxy counts what comes
            for _ in range(100):
                yield block

        counted = httpx.post(f"{url}/chat/completions", content=chunks(), timeout=60)
        assert counted.status_code == 413
        port = httpx.URL(url).port or 0
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:  # all of it first, then the answer
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n" % (100 * len(block)))
            for _ in range(100):
                sock.sendall(block)  # read and discarded by the lingering close, never held
            assert sock.makefile("rb").readline().startswith(b"HTTP/1.1 413 ")
        assert len(gateway.seen) == before
        assert httpx.get(f"{url}/health").status_code == 200
        assert _peak_rss_mib(process.pid) < 300
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sets the child's file limit with setrlimit")
@pytest.mark.parametrize("loop", ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None, reason="uvloop not installed"))])
def test_out_of_file_descriptors_is_a_line_not_a_traceback_flood_and_the_proxy_recovers(
    gateway: Gateway, loop: str
) -> None:
    import resource

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", gateway.base_url, "--port", "0",
         "--header-timeout", "2", "--log-format", "off", "--loop", loop],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=few_descriptors,
    )
    try:
        assert process.stdout is not None
        port = int(re.search(r":(\d+)/v1", process.stdout.readline()).group(1))  # type: ignore[union-attr]
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]  # more than the proxy can hold
        time.sleep(4)
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the proxy did not recover"
            time.sleep(0.2)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr
    assert len(stderr) < 2000, stderr[:2000]
    if loop == "asyncio":  # libuv takes and closes what it cannot accept itself and tells uvloop nothing: no line
        assert "out of resources" in stderr
