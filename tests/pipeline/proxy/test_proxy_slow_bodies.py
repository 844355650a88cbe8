"""Slow request bodies and the upstream URL (issue 31): the proxy reads a request's body before it takes a
``--max-streams`` slot, under its own deadline (``--body-timeout``), so clients dripping their bodies a byte a second
neither fill the slots nor fail ``/ready``; an upstream URL with credentials is refused at start without being shown.
Real servers on loopback: the proxy, a recording gateway."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from proxy_gateway import Gateway

from pipeline.proxy import Proxy, ProxyConfig

pytestmark = pytest.mark.server  # loopback servers (tests/tiers.py)


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as gw:
        yield gw


def _drip(port: int, seconds: float, answers: list[bytes]) -> None:
    """A client that sends a request's head, then its body one byte a second."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n")
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                sock.sendall(b" ")
                time.sleep(1)
            answers.append(sock.recv(65536))
        except OSError:
            answers.append(b"")


def test_twenty_clients_dripping_their_bodies_hold_no_slot_and_ready_stays_up(gateway: Gateway) -> None:
    with Proxy(gateway.base_url, max_streams=4, body_timeout=3, client_idle_timeout=30) as proxy:
        answers: list[bytes] = []
        drippers = [threading.Thread(target=_drip, args=(proxy.port, 8, answers)) for _ in range(20)]
        for thread in drippers:
            thread.start()
        time.sleep(1.5)
        try:
            assert httpx.get(f"{proxy.url}/ready", timeout=5).status_code == 200
            response = httpx.post(f"{proxy.base_url}/chat/completions", json={"model": "m"}, timeout=5)
            assert response.status_code == 200
            # the answer's slot is given back just after its last byte left: a moment to let the server finish,
            # well inside the drippers' 8 seconds, so a slot one of them held would still show
            settle = time.monotonic() + 2
            while proxy.app.in_flight and time.monotonic() < settle:
                time.sleep(0.02)
            assert proxy.app.in_flight == 0
        finally:
            for thread in drippers:
                thread.join(timeout=20)
    assert len(answers) == 20
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), {a[:20] for a in answers}
    assert all(b"--body-timeout" in answer for answer in answers)


def test_credentials_in_the_upstream_url_are_refused_at_start_and_never_shown(gateway: Gateway) -> None:
    upstream = gateway.base_url.replace("http://", "http://user:s3cret-pw@")
    with pytest.raises(ValueError, match="must not carry credentials") as raised:
        ProxyConfig(upstream=upstream)
    assert "s3cret-pw" not in str(raised.value)
    for args, env in (
        (["--upstream", upstream], {}),
        (["--upstream", "http://user:s3cret-pw@127.0.0.1:bad/v1"], {}),
        ([], {"LLM_STREAM_PROXY_UPSTREAM": upstream}),
    ):
        done = subprocess.run([sys.executable, "-m", "pipeline.cli", "proxy", "--port", "0", *args],
                              capture_output=True, text=True, timeout=60, env={**os.environ, **env})
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "must not carry credentials" in done.stderr
        assert "s3cret-pw" not in done.stdout + done.stderr
