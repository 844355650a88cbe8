"""The proxy's connections to its upstream (``pipeline/proxy/_upstream.py``, decision 0073), against raw loopback
servers: kept alive when a response ended cleanly, closed otherwise; bodies read as framed; httpx's errors for a
refused connection, a timeout, a malformed or cut response; TLS with the given trust."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from pipeline.proxy._upstream import READ_AHEAD, Upstream, _Body

pytestmark = pytest.mark.server

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[bool]]
"""Answers the n-th request on a connection (its head already read); False to close the connection."""


@asynccontextmanager
async def _server(answer: Answer, tls: ssl.SSLContext | None = None) -> AsyncIterator[tuple[str, list[int]]]:
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            for n in range(100):
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                               if line.startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                if not await answer(reader, writer, n):
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", accepted
    finally:
        server.close()


def _writes(*parts: bytes, keep: bool = True) -> Answer:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        for part in parts:
            writer.write(part)
            await writer.drain()
        return keep

    return answer


CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


async def _get(client: httpx.AsyncClient, url: str, method: str = "POST") -> tuple[int, bytes]:
    async with client.stream(method, url + "/v1/chat/completions", content=b'{"model":"m"}') as response:
        return response.status_code, b"".join([piece async for piece in response.aiter_raw()])


async def test_a_response_read_to_its_end_leaves_its_connection_for_the_next() -> None:
    answer = _writes(CHUNKED, b"9\r\ndata: 1\n\n\r\n", b"9\r\ndata: 2\n\n\r\n0\r\n\r\n")
    async with _server(answer) as (url, accepted), httpx.AsyncClient(transport=Upstream()) as client:
        got = [await _get(client, url) for _ in range(3)]
    assert got == [(200, b"data: 1\n\ndata: 2\n\n")] * 3
    assert len(accepted) == 1


@pytest.mark.parametrize(("answer", "body"), [
    (_writes(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel", b"lo"), b"hello"),
    (_writes(b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"), b"ok"),
    (_writes(b"HTTP/1.1 204 No Content\r\n\r\n"), b""),
], ids=["content-length", "after-100-continue", "no-content"])
async def test_bodies_framed_by_length_or_without_one_keep_the_connection(answer: Answer, body: bytes) -> None:
    async with _server(answer) as (url, accepted), httpx.AsyncClient(transport=Upstream()) as client:
        got = [await _get(client, url) for _ in range(2)]
    assert [b for _, b in got] == [body, body]
    assert len(accepted) == 1


@pytest.mark.parametrize("answer", [
    _writes(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok", keep=False),
    _writes(b"HTTP/1.0 200 OK\r\n\r\nok", keep=False),  # to the close
    _writes(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA"),  # bytes after the body
], ids=["connection-close", "to-the-close", "bytes-after"])
async def test_a_connection_is_not_reused_unless_its_response_ended_cleanly(answer: Answer) -> None:
    async with _server(answer) as (url, accepted), httpx.AsyncClient(transport=Upstream()) as client:
        got = [await _get(client, url) for _ in range(2)]
    assert [b for _, b in got] == [b"ok", b"ok"]
    assert len(accepted) == 2


async def test_a_response_left_unread_closes_its_connection() -> None:
    closed = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        writer.write(CHUNKED + b"9\r\ndata: 1\n\n\r\n")
        await writer.drain()
        if not await reader.read(1):
            closed.set()
        return False

    async with _server(answer) as (url, _), httpx.AsyncClient(transport=Upstream()) as client:
        async with client.stream("POST", url + "/v1/chat/completions", content=b"{}") as response:
            async for _piece in response.aiter_raw():
                break
        await asyncio.wait_for(closed.wait(), 5)


@pytest.mark.parametrize(("answer", "error"), [
    (_writes(CHUNKED, b"9\r\ndata: 1\n\n\r\n", keep=False), httpx.RemoteProtocolError),  # cut before the last chunk
    (_writes(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", keep=False), httpx.RemoteProtocolError),
    (_writes(CHUNKED, b"zz\r\n"), httpx.RemoteProtocolError),  # a chunk size that is not hex
    (_writes(b"NOT HTTP\r\n\r\n"), httpx.RemoteProtocolError),
    (_writes(b"", keep=False), httpx.RemoteProtocolError),  # closed without an answer
], ids=["cut-chunked", "cut-length", "bad-chunk", "bad-head", "no-answer"])
async def test_a_malformed_or_cut_response_is_httpxs_error(answer: Answer, error: type[Exception]) -> None:
    async with _server(answer) as (url, _), httpx.AsyncClient(transport=Upstream()) as client:
        with pytest.raises(error):
            await _get(client, url)


async def test_a_body_to_the_close_cut_by_a_reset_is_an_error() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        writer.write(b"HTTP/1.0 200 OK\r\n\r\npartial")
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        writer.transport.abort()
        return False

    async with _server(answer) as (url, _), httpx.AsyncClient(transport=Upstream()) as client:
        with pytest.raises(httpx.HTTPError):
            await _get(client, url)


async def test_a_silent_upstream_is_a_read_timeout() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        writer.write(CHUNKED)
        await writer.drain()
        await asyncio.sleep(5)
        return False

    async with _server(answer) as (url, _), httpx.AsyncClient(transport=Upstream(), timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            await _get(client, url)


async def test_the_read_timeout_counts_from_each_wait_so_a_steady_trickle_is_never_cut() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        writer.write(CHUNKED)
        for _ in range(6):  # 1.2 s in all, each piece within the 0.3 s read timeout
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.write(b"9\r\ndata: 1\n\n\r\n")
        writer.write(b"0\r\n\r\n")
        return True

    async with _server(answer) as (url, _), httpx.AsyncClient(transport=Upstream(), timeout=0.3) as client:
        assert await _get(client, url) == (200, b"data: 1\n\n" * 6)


async def test_a_shorter_read_timeout_on_a_kept_connection_times_out_at_its_own_deadline() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        writer.write(CHUNKED + (b"9\r\ndata: 1\n\n\r\n0\r\n\r\n" if n == 0 else b""))
        await writer.drain()
        if n:
            await asyncio.sleep(5)
        return True

    async with _server(answer) as (url, accepted), httpx.AsyncClient(transport=Upstream(), timeout=30) as client:
        assert await _get(client, url) == (200, b"data: 1\n\n")  # its waits left a timer 30 s ahead
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(httpx.ReadTimeout):
            async with client.stream("POST", url + "/v1/chat/completions", content=b"{}", timeout=0.3) as response:
                await response.aread()
        assert loop.time() - started < 2
        assert accepted == [1]  # the same connection


async def test_a_refused_connection_is_a_connect_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with httpx.AsyncClient(transport=Upstream()) as client:
        with pytest.raises(httpx.ConnectError):
            await _get(client, f"http://127.0.0.1:{port}")


def _certificate(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context and a client's that trusts it."""
    x509 = pytest.importorskip("cryptography.x509")
    import ipaddress

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    (directory / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    client = ssl.create_default_context(cafile=str(directory / "cert.pem"))
    return server, client


async def test_tls_upstreams_are_verified_and_kept_alive(tmp_path: Path) -> None:
    server_tls, client_tls = _certificate(tmp_path)
    answer = _writes(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    async with _server(answer, server_tls) as (url, accepted):
        async with httpx.AsyncClient(transport=Upstream(tls=client_tls)) as client:
            assert [await _get(client, url) for _ in range(2)] == [(200, b"ok")] * 2
        assert len(accepted) == 1
        async with httpx.AsyncClient(transport=Upstream()) as client:  # the default trust: not this certificate
            with pytest.raises(httpx.ConnectError):
                await _get(client, url)


async def test_a_body_read_slowly_holds_at_most_the_read_ahead_and_arrives_whole() -> None:
    # the upstream writes 8 MiB as fast as it can, the reader takes a piece every few milliseconds: the connection
    # stops reading past READ_AHEAD (decision 0014: memory bounded whatever the upstream sends), then resumes
    size, block = 8 * 1024 * 1024, b"x" * 65536
    answer = _writes(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size, *[block] * (size // len(block)))
    held: list[int] = []
    upstream = Upstream()
    async with _server(answer) as (url, _):
        request = httpx.Request("POST", url + "/v1/chat/completions", content=b"{}")
        response = await upstream.handle_async_request(request)
        body = response.stream
        assert isinstance(body, _Body)
        connection = body._conn
        received = 0
        try:
            async for piece in body:
                received += len(piece)
                await asyncio.sleep(0.002)
                held.append(connection._buffered)
        finally:
            await response.aclose()
            await upstream.aclose()
    assert received == size
    assert max(held) <= READ_AHEAD + 256 * 1024  # one read past the bound at most (a read is up to 256 KiB)
    assert max(held) > 0  # the upstream did get ahead of the reader: the bound was exercised
