"""A plain-http base URL to a host that is not loopback warns (the key would travel in clear); loopback and https do
not; TLS verification stays on. Nothing here contacts a host that is not loopback: configs are only constructed."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import warnings
from pathlib import Path

import pytest

import pipeline
from operators import Code, Finish
from pipeline.client import ChatClient, ClientConfig, InsecureBaseUrlWarning


def test_a_plain_http_base_url_to_a_remote_host_warns() -> None:
    with pytest.warns(InsecureBaseUrlWarning, match="plain http") as record:
        ClientConfig.resolve(base_url="http://gateway.example/v1", model="m", api_key="sk-x")
    assert record[0].filename == __file__  # points at the caller, not at the library
    assert "sk-x" not in str(record[0].message)


def test_a_chat_client_for_a_plain_http_remote_url_warns_at_the_callers_line() -> None:
    with pytest.warns(InsecureBaseUrlWarning) as record:
        ChatClient("http://user:pw@10.1.2.3:8080/v1", model="m", api_key="sk-x")
    assert record[0].filename == __file__
    assert "pw" not in str(record[0].message)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8808/v1", "http://localhost/v1", "http://[::1]:9/v1", "https://api.example/v1"]
)
def test_loopback_and_https_urls_do_not_warn(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ClientConfig(base_url=url, model="m")


def test_the_warning_is_on_the_public_faces() -> None:
    assert pipeline.InsecureBaseUrlWarning is InsecureBaseUrlWarning
    assert issubclass(InsecureBaseUrlWarning, UserWarning)


async def test_the_client_chat_client_makes_verifies_certificates() -> None:
    async with ChatClient("https://api.example/v1", model="m", api_key="sk-x") as client:
        pool = client._client._transport._pool  # type: ignore[attr-defined]
        context: ssl.SSLContext = pool._ssl_context
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True


@pytest.mark.server
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
async def test_a_self_signed_certificate_on_loopback_is_refused(tmp_path: Path) -> None:
    """TLS verification stays on: a loopback https server with a self-signed certificate is a TRANSPORT failure."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        async with asyncio.timeout(10), ChatClient(f"https://127.0.0.1:{port}/v1", model="m") as client:
            chunks = [c async for c in client.stream([{"role": "user", "content": "hi"}], retry=False)]
    finally:
        server.close()
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.code == Code.TRANSPORT
    assert "CERTIFICATE_VERIFY_FAILED" in (finish.reason.failure.message if finish.reason.failure else "")
