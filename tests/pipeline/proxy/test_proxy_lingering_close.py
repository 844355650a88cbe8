"""A body over ``--max-body-bytes`` is answered 413 before the proxy reads it; a client that sends its whole body
before it reads (most do) still gets that 413, never a reset: the proxy lingers, reading and discarding what the client
still sends, within ``linger_bytes`` and ``linger_timeout`` (docs/proxy.md, "A body over the limit"). Real servers on
loopback: the proxy (uvicorn) and a recording gateway; raw-socket clients."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from proxy_gateway import Gateway

from pipeline.proxy import Proxy

MiB = 1024 * 1024
BODY = 64 * MiB  # past what the kernel buffers on both ends of a loopback connection (tcp_rmem max is 32 MiB here)
BLOCK = b"x" * (256 * 1024)


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as gw:
        yield gw


@pytest.fixture(scope="module")
def proxy(gateway: Gateway) -> Iterator[Proxy]:
    with Proxy(gateway.base_url, max_body_bytes=MiB, log_format="off") as running:
        yield running


def _port(proxy: Proxy) -> int:
    return int(httpx.URL(proxy.base_url).port or 0)


def _send_all_then_read(port: int, head: bytes, body: Iterator[bytes]) -> tuple[bytes, bool]:
    """Writes the request whole, then reads the answer to the connection's end: (what came, whether it ended
    cleanly rather than by a reset)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        for piece in body:
            sock.sendall(piece)  # a reset here is the defect: the proxy closed with our bytes unread
        received = b""
        while True:
            try:
                piece = sock.recv(65536)
            except ConnectionResetError:
                return received, False
            if not piece:
                return received, True
            received += piece


def _declared(size: int) -> Iterator[bytes]:
    for _ in range(size // len(BLOCK)):
        yield BLOCK


def _chunked(size: int) -> Iterator[bytes]:
    for piece in _declared(size):
        yield b"%x\r\n" % len(piece) + piece + b"\r\n"
    yield b"0\r\n\r\n"


def _answer(received: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("connection", ["close", "keep-alive"])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_client_that_sends_its_whole_oversized_body_first_reads_the_413(
    proxy: Proxy, gateway: Gateway, connection: str, framing: str
) -> None:
    before = len(gateway.seen)
    length = f"Content-Length: {BODY}" if framing == "content-length" else "Transfer-Encoding: chunked"
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
            f"Connection: {connection}\r\n{length}\r\n\r\n").encode()
    started = time.monotonic()

    received, clean = _send_all_then_read(_port(proxy), head, _declared(BODY) if framing == "content-length"
                                          else _chunked(BODY))

    status, headers, body = _answer(received)
    assert status == 413
    assert headers["content-type"] == "application/json"
    error = json.loads(body[: int(headers["content-length"])])["error"]
    assert error["code"] == "LIMIT_EXCEEDED"
    assert "--max-body-bytes" in error["message"]
    assert clean  # the proxy closed after the answer with a FIN, having read what we sent
    assert time.monotonic() - started < 20  # the client's end ended the lingering, not a timer
    assert len(gateway.seen) == before  # nothing went upstream
    assert httpx.get(f"{proxy.url}/health", timeout=10).status_code == 200


def test_an_http_1_0_client_and_a_404_with_a_body_also_read_their_answer(proxy: Proxy) -> None:
    for request_line, expected in ((b"POST /v1/chat/completions HTTP/1.0", 413), (b"POST /elsewhere HTTP/1.1", 404)):
        head = request_line + b"\r\nHost: proxy\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % BODY
        received, clean = _send_all_then_read(_port(proxy), head, _declared(BODY))
        assert _answer(received)[0] == expected
        assert clean


def test_httpx_posting_an_oversized_body_sees_the_413(proxy: Proxy) -> None:
    for headers in ({}, {"connection": "close"}):
        response = httpx.post(f"{proxy.base_url}/chat/completions", content=b"x" * BODY, headers=headers,
                              timeout=60)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "LIMIT_EXCEEDED"


def _send_until_cut(port: int, seconds: float, pause: float = 0.0) -> tuple[int, float]:
    """A client that never stops sending its body: (bytes it got out, seconds) until the proxy cut it, or until
    ``seconds`` passed."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % (
        1 << 40)
    sent = 0
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as sock:
        sock.sendall(head)
        try:
            while time.monotonic() - started < seconds:
                sock.sendall(BLOCK)
                sent += len(BLOCK)
                if pause:
                    time.sleep(pause)
        except OSError:  # reset, broken pipe, or a send blocked past the timeout: cut
            return sent, time.monotonic() - started
    return sent, time.monotonic() - started


def test_a_client_that_never_stops_sending_is_cut_after_linger_timeout(gateway: Gateway) -> None:
    with Proxy(gateway.base_url, max_body_bytes=MiB, linger_timeout=1, log_format="off") as proxy:
        sent, elapsed = _send_until_cut(_port(proxy), seconds=30, pause=0.01)  # about 25 MiB/s: under the byte bound
        assert elapsed < 15, f"still sending after {elapsed:.1f} s ({sent} bytes)"
        assert httpx.get(f"{proxy.url}/health", timeout=10).status_code == 200


def test_a_client_that_never_stops_sending_is_cut_after_linger_bytes(gateway: Gateway) -> None:
    with Proxy(gateway.base_url, max_body_bytes=MiB, linger_timeout=120, linger_bytes=8 * MiB,
               log_format="off") as proxy:
        sent, elapsed = _send_until_cut(_port(proxy), seconds=60)
        assert elapsed < 30, f"still sending after {elapsed:.1f} s ({sent} bytes)"
        assert sent < 8 * MiB + 64 * MiB  # the bound, plus what the kernel buffers on both ends
        assert httpx.get(f"{proxy.url}/health", timeout=10).status_code == 200


def test_stopping_the_proxy_does_not_wait_for_a_lingering_client(gateway: Gateway) -> None:
    proxy = Proxy(gateway.base_url, max_body_bytes=MiB, linger_timeout=120, grace_period=20, log_format="off")
    with proxy:
        cut: list[float] = []
        sender = threading.Thread(target=lambda: cut.append(_send_until_cut(_port(proxy), seconds=60, pause=0.01)[1]))
        sender.start()
        time.sleep(1.0)  # answered 413 at the headers; lingering on what keeps coming
        assert not cut
        stopping = time.monotonic()
    stopped = time.monotonic() - stopping
    sender.join(timeout=60)
    assert stopped < 10, f"the stop waited {stopped:.1f} s for a lingering connection"
    assert cut
    assert cut[0] < 30
