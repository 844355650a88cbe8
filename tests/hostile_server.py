"""Misbehaving HTTP servers on 127.0.0.1, raw ``asyncio.start_server``: each answers every connection one bad way.

    async with HostileServer("status-only") as server:
        client = ChatClient(server.base_url, model="m", idle_timeout=0.3)

Modes: ``never-answers`` (accepts, reads, says nothing), ``status-only`` (``HTTP/1.1 200 OK`` and nothing more),
``headers-stall`` (a 200 event-stream's headers, then nothing), ``error-body-stalls`` (a 500 with Content-Length,
part of its body, then nothing), ``endless-error-body`` (a chunked 500 body that never ends), ``gzip-bomb`` (a 500
whose ``Content-Encoding: gzip`` body inflates to ``bomb_bytes``), ``keepalive-forever`` (a 200 event stream with a
``: keep-alive`` comment every ``interval`` seconds, forever), ``gzip-comments`` (a 200 event stream whose
``Content-Encoding: gzip`` body of ``: x`` comment lines inflates to ``bomb_bytes``). ``closed`` is set when a
connection was closed by the client (the server saw EOF or a reset).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from typing import Any

__all__ = ["MODES", "HostileServer", "gzip_bomb", "gzip_comments"]

MODES = (
    "never-answers",
    "status-only",
    "headers-stall",
    "error-body-stalls",
    "endless-error-body",
    "gzip-bomb",
    "keepalive-forever",
    "gzip-comments",
)

_SSE_HEADERS = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed (about 1000:1)."""
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    parts = [z.compress(block) for _ in range(size >> 20)]
    parts.append(z.compress(bytes(size & ((1 << 20) - 1))))
    parts.append(z.flush())
    return b"".join(parts)


def gzip_comments(size: int) -> bytes:
    """About ``size`` bytes of ``: x`` comment lines, gzip-compressed (about 1000:1). Built from one compressed
    MiB repeated: after a full flush the compressor starts afresh, so each MiB compresses to the same bytes."""
    block = b": x\n" * (1 << 18)
    count = max(1, size >> 20)
    z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    piece = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    assert z.compress(block) + z.flush(zlib.Z_FULL_FLUSH) == piece
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, (len(block) * count) & 0xFFFFFFFF)
    return header + piece * count + z.flush() + trailer


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class HostileServer:
    def __init__(self, mode: str, *, interval: float = 0.05, bomb_bytes: int = 1 << 30) -> None:
        assert mode in MODES, mode
        self.mode = mode
        self.interval = interval
        self.bomb_bytes = bomb_bytes
        self.connections = 0
        self.closed = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._bomb: bytes | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def __aenter__(self) -> HostileServer:
        if self.mode == "gzip-bomb":
            self._bomb = gzip_bomb(self.bomb_bytes)
        elif self.mode == "gzip-comments":
            self._bomb = gzip_comments(self.bomb_bytes)
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            talker = asyncio.ensure_future(self._talk(writer))
            try:
                while await reader.read(65536):  # the request body, then wait for the client to go away
                    pass
            finally:
                talker.cancel()
                with contextlib.suppress(BaseException):
                    await talker
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            writer.close()

    async def _talk(self, writer: asyncio.StreamWriter) -> None:
        mode = self.mode
        if mode == "status-only":
            writer.write(b"HTTP/1.1 200 OK\r\n")
        elif mode == "headers-stall":
            writer.write(_SSE_HEADERS)
        elif mode == "error-body-stalls":
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 1000\r\n\r\n{\"error\": ")
        elif mode == "endless-error-body":
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n")
            block = _chunk(b"x" * 65536)
            while True:
                writer.write(block)
                await writer.drain()
        elif mode == "gzip-bomb":
            assert self._bomb is not None
            head = b"HTTP/1.1 500 Internal Server Error\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n"
            writer.write(head % len(self._bomb) + self._bomb)
        elif mode == "gzip-comments":
            assert self._bomb is not None
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
            writer.write(head + b"content-length: %d\r\n\r\n" % len(self._bomb) + self._bomb)
        elif mode == "keepalive-forever":
            writer.write(_SSE_HEADERS)
            while True:
                writer.write(_chunk(b": keep-alive\n\n"))
                await writer.drain()
                await asyncio.sleep(self.interval)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        await asyncio.Event().wait()  # and say nothing more
