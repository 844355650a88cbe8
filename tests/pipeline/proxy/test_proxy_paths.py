"""The proxy's path rule (``upstream_path``): whatever the client's path, what goes upstream stays under the
upstream's base path, with no dot segment left for the upstream to resolve (hypothesis), and a body the client stops
sending is answered 408."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proxy_gateway import Gateway

from pipeline.proxy import Proxy
from pipeline.proxy._headers import OutsideBase, api_relative, upstream_path

pytestmark = pytest.mark.server  # tests/tiers.py

SEGMENTS = st.sampled_from(["a", "models", "", ".", "..", "%2e", "%2e%2e", "%2E%2e", ".%2e", "%2e%2e%2fx",
                            "..%5cx", "b%2Fc", "%252e%252e", "x%20y"])


@given(st.sampled_from(["/v1", "/api/v1", "/"]), st.lists(SEGMENTS, max_size=8))
def test_the_upstream_path_stays_under_the_base_path_with_no_dot_segment(base: str, segments: list[str]) -> None:
    raw = "/".join(segments).encode()
    try:
        path = upstream_path(base, raw)
    except OutsideBase:
        return
    prefix = base.rstrip("/") + "/"
    assert path.startswith(prefix)
    for segment in path[len(prefix):].split("/"):
        parts = unquote(segment).replace("\\", "/").split("/")
        assert "." not in parts, (raw, path)
        assert ".." not in parts, (raw, path)


@pytest.fixture(scope="module")
def proxy() -> Iterator[Proxy]:
    with Gateway() as gateway, Proxy(gateway.base_url, client_idle_timeout=1) as running:
        yield running


def test_a_body_the_client_stops_sending_is_answered_408(proxy: Proxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{\"model\":")
        started = time.monotonic()
        answer = b""
        while b'"TIMEOUT"' not in answer and time.monotonic() - started < 5:
            piece = sock.recv(65536)  # the head and the body may come in two reads
            if not piece:
                break
            answer += piece
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"TIMEOUT"' in answer
    assert time.monotonic() - started < 5


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_an_idle_keep_alive_connection_is_closed_after_the_client_idle_deadline(proxy: Proxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert _closed_within(sock, 5)  # client_idle_timeout=1


def test_a_connection_that_never_sends_its_headers_is_closed_after_the_header_deadline() -> None:
    with Gateway() as gateway, Proxy(gateway.base_url, header_timeout=1) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        started = time.monotonic()
        assert _closed_within(sock, 5)
        assert time.monotonic() - started >= 0.9


def test_googles_version_segments_are_forwarded_as_v1_is_and_nothing_else_is() -> None:
    assert api_relative(b"/v1/chat/completions") == b"chat/completions"
    assert api_relative(b"/v1beta/models/m:streamGenerateContent") == b"models/m:streamGenerateContent"
    assert api_relative(b"/v1beta1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent") == (
        b"projects/p/locations/l/publishers/google/models/m:streamGenerateContent")
    for path in (b"/v1", b"/v2/x", b"/v1%2Fx", b"/v1betax/y", b"/health", b"/v1beta"):
        assert api_relative(path) is None, path


def test_googles_version_paths_reach_the_upstreams_base_path() -> None:
    with Gateway() as gateway, Proxy(gateway.base_url) as running:
        for sent in ("/v1beta/models/m:countTokens", "/v1beta1/projects/p/locations/l/publishers/google/models/m",
                     "/v1/models"):
            with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
                sock.sendall(f"GET {sent}?alt=sse HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
                answer = b""
                while piece := sock.recv(65536):
                    answer += piece
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            relative = sent.split("/", 2)[2]
            assert gateway.seen[-1].target == "/v1/" + relative + "?alt=sse"
