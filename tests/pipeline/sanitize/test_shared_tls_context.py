"""A transport's set-up is paid once per process (issue 35 item 2): the transports ``SanitizingTransport`` builds share
one verifying TLS context per httpx module, built on the first ``https://`` request; ``http://`` requests load no CA
bundle at all; a ``verify`` of the transport's own is used as given. Behaviour, not timing (``benchmarks/
transport_setup.py`` times it)."""

from __future__ import annotations

import socket
import ssl
from typing import Any

import httpx
import pytest

import pipeline._tls as tls
from pipeline import SanitizingTransport
from pipeline.emulator import Emulator

httpx2 = pytest.importorskip("httpx2")
MODULES = [httpx, httpx2]
BODY = {"model": "seed-bug", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


class Built:
    """What the transports built: each inner transport's ``verify``, and the CA-loading contexts made."""

    def __init__(self) -> None:
        self.verify: list[Any] = []
        self.loaded = 0


@pytest.fixture(params=MODULES, ids=lambda hx: hx.__name__)
def hx(request: pytest.FixtureRequest) -> Any:
    return request.param


@pytest.fixture
def built(hx: Any, monkeypatch: pytest.MonkeyPatch) -> Built:
    seen = Built()
    monkeypatch.setattr(tls, "_verifying", {})  # as in a fresh process
    monkeypatch.setattr(tls, "_plain", [])
    create = hx.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        seen.loaded += 1
        return create(*args, **kwargs)  # type: ignore[no-any-return]

    def recording(base: type[Any]) -> type[Any]:
        class Recording(base):  # type: ignore[misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                seen.verify.append(kwargs.get("verify"))
                super().__init__(*args, **kwargs)
        return Recording

    monkeypatch.setattr(hx, "create_ssl_context", counting)
    monkeypatch.setattr(hx, "HTTPTransport", recording(hx.HTTPTransport))
    monkeypatch.setattr(hx, "AsyncHTTPTransport", recording(hx.AsyncHTTPTransport))
    return seen


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_http_requests_load_no_ca_bundle_and_share_one_context(hx: Any, built: Built, emu: Emulator) -> None:
    for _ in range(2):  # a transport per client
        with hx.Client(transport=SanitizingTransport()) as client:
            assert client.post(f"{emu.base_url}/chat/completions", json=BODY).status_code == 200
    assert built.loaded == 0
    assert len(built.verify) == 2
    assert built.verify[0] is built.verify[1] is tls.plain_context()


async def test_async_http_requests_load_no_ca_bundle(hx: Any, built: Built, emu: Emulator) -> None:
    for _ in range(2):
        async with hx.AsyncClient(transport=SanitizingTransport()) as client:
            assert (await client.post(f"{emu.base_url}/chat/completions", json=BODY)).status_code == 200
    assert built.loaded == 0
    assert built.verify[0] is built.verify[1]


def test_https_transports_share_one_verifying_context(hx: Any, built: Built) -> None:
    url = f"https://127.0.0.1:{_closed_port()}/v1/chat/completions"
    for _ in range(3):
        with hx.Client(transport=SanitizingTransport()) as client, pytest.raises(hx.ConnectError):
            client.post(url, json=BODY)
    assert built.loaded == 1  # the CA bundle loaded once, for the first transport
    assert len(built.verify) == 3
    assert all(verify is tls.verifying_context(hx) for verify in built.verify)
    assert built.verify[0].verify_mode == ssl.CERT_REQUIRED
    assert built.verify[0].check_hostname


def test_a_verify_of_its_own_is_used_as_given(hx: Any, built: Built, emu: Emulator) -> None:
    own = ssl.create_default_context()
    with hx.Client(transport=SanitizingTransport(verify=own)) as client:
        assert client.post(f"{emu.base_url}/chat/completions", json=BODY).status_code == 200
    with hx.Client(transport=SanitizingTransport(verify=False)) as client, pytest.raises(hx.ConnectError):
        client.post(f"https://127.0.0.1:{_closed_port()}/v1/models")
    assert built.verify == [own, False]
    assert built.loaded == 0


def test_the_plain_context_trusts_nothing() -> None:
    """Never used for TLS; were it used, the handshake would fail for want of trust anchors (it fails closed)."""
    context = tls.plain_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() == []
