"""What the ``proxy`` fuzz target (scripts/fuzz_proxy.py) found in the proxy's request side, each held on a real
proxy over loopback: a request uvicorn accepts is answered by the proxy, never by a traceback, and only what is under
``/v1/`` as sent goes upstream."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from proxy_gateway import Gateway

from pipeline.proxy import Proxy


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(gateway: Gateway) -> Iterator[Proxy]:
    with Proxy(gateway.base_url, forward_headers="x-custom-*,proxy-*") as running:
        yield running


def exchange(proxy: Proxy, head: bytes) -> bytes:
    """One request written as is (``Connection: close``); the whole answer."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(head + b"Host: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    return answer


def test_a_header_value_with_a_non_ascii_byte_goes_upstream_as_sent(proxy: Proxy, gateway: Gateway) -> None:
    before = len(gateway.seen)

    answer = exchange(proxy, b"GET /v1/models HTTP/1.1\r\nUser-Agent: caf\xe9/1\r\nX-Custom-Id: \xff\r\n")

    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]  # was 500: httpx refused the header as str
    seen = gateway.seen[before:]
    assert [s.headers.get("user-agent") for s in seen] == ["caf\xe9/1"]
    assert seen[0].headers.get("x-custom-id") == "\xff"


@pytest.mark.parametrize("target", [b"/v1/models?a=1#b", b"/v1/models#x", b"/v1/a/%2e%2e/models#"])
def test_a_target_holding_a_hash_is_400_and_never_goes_upstream(proxy: Proxy, gateway: Gateway, target: bytes) -> None:
    before = len(gateway.seen)

    answer = exchange(proxy, b"GET " + target + b" HTTP/1.1\r\n")

    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]  # was 500: httpx.InvalidURL escaped the app
    assert b'"INVALID_REQUEST"' in answer
    assert len(gateway.seen) == before


@pytest.mark.parametrize("target", [b"/v1%2Fmodels", b"/v1%2F/models", b"/%761/models"])
def test_a_path_under_v1_only_once_decoded_is_not_forwarded(proxy: Proxy, gateway: Gateway, target: bytes) -> None:
    before = len(gateway.seen)

    answer = exchange(proxy, b"GET " + target + b" HTTP/1.1\r\n")

    assert answer.startswith(b"HTTP/1.1 404"), answer[:200]  # was forwarded to /v1/2Fmodels, /v1/2F/models, /v1/1/...
    assert len(gateway.seen) == before


def test_proxy_headers_never_go_upstream_whatever_forward_headers_says(proxy: Proxy, gateway: Gateway) -> None:
    before = len(gateway.seen)

    answer = exchange(proxy, b"GET /v1/models HTTP/1.1\r\nProxy-Foo: 1\r\nProxy-Authorization: Basic eDp5\r\n"
                             b"X-Custom-Kept: 1\r\n")

    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    headers = gateway.seen[before].headers
    assert headers.get("x-custom-kept") == "1"
    assert not [name for name in headers if name.startswith("proxy-")]  # proxy-foo was forwarded by "proxy-*"
