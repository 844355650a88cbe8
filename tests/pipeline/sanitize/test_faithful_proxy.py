"""Issue 20 through ``llm-stream proxy``: a cut body stays cut on every path, nothing is retried unless asked, and the
openai SDK pointed at the proxy gets the same answers as pointed at the upstream; issue 21: the transport's read
timeout applies to content, not to keep-alive bytes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import httpx2
import openai
import pytest
from faithful import KINDS, Kind, chunks, final
from gateway import Gateway, http_json, sse
from hostile_server import HostileServer
from test_faithful_chat import _NEVER, _SEED, KEEP, _429, _text_stream

from operators import RetryPolicy
from pipeline import SanitizingTransport
from pipeline.proxy import Proxy

pytestmark = pytest.mark.server  # tests/tiers.py

STREAM = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _raw_reply(base_url: str, path: str, body: bytes) -> bytes:
    """The proxy's raw HTTP reply on its own connection (to see whether a chunked body got its last chunk)."""
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = f"POST /v1/{path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
        sock.sendall(head.encode() + b"\r\nconnection: close\r\n\r\n" + body)
        out = b""
        while more := sock.recv(65536):
            out += more
    return out


@pytest.mark.parametrize(
    ("upstream", "path", "request_body"),
    [
        (sse(_text_stream("Hello", " there")[:-2], cut="chunked"), "chat/completions", STREAM),
        (sse(_text_stream("Hello", " there")[:-2], cut="close"), "chat/completions", STREAM),
        (sse(_text_stream("Hello")[:-2], cut="chunked"), "embeddings", STREAM),
        (http_json(200, {"id": "x", "choices": []}, cut="length"), "chat/completions", {"model": "m"}),
    ],
    ids=["sanitized-chunked", "sanitized-close", "pass-through-stream", "pass-through-short-length"],
)
def test_a_cut_upstream_body_is_aborted_by_the_proxy_never_ended_cleanly(
    upstream: bytes, path: str, request_body: dict[str, Any]
) -> None:
    with Gateway(upstream) as gateway, Proxy(gateway.base_url) as proxy:
        reply = _raw_reply(proxy.base_url, path, json.dumps(request_body).encode())
        assert reply.startswith(b"HTTP/1.1 200")
        assert not reply.endswith(b"0\r\n\r\n")  # no terminating chunk: the client sees the cut
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{proxy.base_url}/{path}", json=request_body).read()
        if path == "chat/completions" and request_body.get("stream"):
            assert b'"code": "' in reply  # the in-band error event came first


@pytest.mark.parametrize("kind", ["httpx2", "httpx-async"])
def test_through_the_proxy_the_sdks_retries_are_the_only_ones(kind: Kind) -> None:
    with Gateway(_429) as gateway, Proxy(gateway.base_url) as proxy:
        assert final(kind, proxy.base_url, transport=False)[0] == "RateLimitError"
        assert gateway.count == 3
    with Gateway(sse(_NEVER), sse(_text_stream("ok"))) as gateway, Proxy(gateway.base_url) as proxy:
        assert final(kind, proxy.base_url, transport=False)["choices"][0]["message"]["content"] == "ok"
        assert gateway.count == 2


def test_the_proxy_retries_only_when_told() -> None:
    with Gateway(_429, sse(_text_stream("ok"))) as gateway, Proxy(
        gateway.base_url, retry_policy=RetryPolicy(max_retries=1, initial_delay_ms=1)
    ) as proxy:
        result = final("httpx2", proxy.base_url, transport=False, max_retries=0)
        assert result["choices"][0]["message"]["content"] == "ok"
        assert gateway.count == 2


@pytest.mark.parametrize("kind", KINDS)
def test_the_sdk_through_the_proxy_reads_a_sound_stream_as_it_reads_the_upstream(kind: Kind) -> None:
    events = _text_stream("Hello", system_fingerprint="fp_1", service_tier="default")
    with Gateway(sse(events)) as gateway, Proxy(gateway.base_url) as proxy:
        assert chunks(kind, proxy.base_url, transport=False) == chunks(kind, gateway.base_url, transport=False)


@pytest.mark.parametrize("case", sorted(KEEP))
def test_every_keep_case_reads_the_same_through_the_proxy(case: str) -> None:
    with Gateway(sse(KEEP[case])) as gateway, Proxy(gateway.base_url) as proxy:
        assert chunks("httpx2", proxy.base_url, transport=False) == chunks("httpx2", gateway.base_url, transport=False)
        assert final("httpx2", proxy.base_url, transport=False) == final("httpx2", gateway.base_url, transport=False)


def test_the_seeds_bug_is_repaired_through_the_proxy() -> None:
    with Gateway(sse(_SEED)) as gateway, Proxy(gateway.base_url) as proxy:
        message = final("httpx2", proxy.base_url, transport=False)["choices"][0]["message"]
        calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
        assert calls == [("call_1", "get_weather", '{"city": "Paris"}')]


async def test_keep_alive_bytes_alone_do_not_hold_the_sdk_past_its_timeout() -> None:
    # issue 21: timeout=4 on an upstream sending only ": keep-alive" raises within 15 s (SDK retries included)
    async with HostileServer("keepalive-forever", interval=0.2) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", timeout=4,
                                    http_client=httpx2.AsyncClient(transport=SanitizingTransport()))
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            async with client:
                await client.chat.completions.create(stream=True, model="m", messages=[{"role": "user",
                                                                                          "content": "hi"}])
        assert time.monotonic() - started < 15


async def test_a_response_head_dripped_a_byte_a_second_does_not_hold_the_async_sdk_past_its_timeout() -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            for byte in b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-padding: " + b"x" * 100:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.5)
        writer.close()

    server = await asyncio.start_server(drip, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", timeout=2, max_retries=0,
                                http_client=httpx2.AsyncClient(transport=SanitizingTransport()))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        async with client:
            await client.chat.completions.create(stream=True, model="m", messages=[{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 6
    server.close()


@pytest.mark.parametrize(("flags", "requests"), [([], 1), (["--retries", "1"], 2)])
def test_the_proxy_command_retries_only_with_retries_n(flags: list[str], requests: int) -> None:
    with Gateway(_429, sse(_text_stream("ok"))) as gateway:
        command = [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", gateway.base_url, "--port", "0", *flags]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().split("base_url ", 1)[1].split(" ", 1)[0]
            result = final("httpx2", base_url, transport=False, max_retries=0)
        finally:
            process.send_signal(signal.SIGINT)  # our own child, by its handle
            process.wait(timeout=15)
        assert gateway.count == requests
        if requests == 1:
            assert result[0] == "RateLimitError"
        else:
            assert result["choices"][0]["message"]["content"] == "ok"
