"""Serving an ASGI app on a real port with uvicorn: in a background thread with its own event loop
(``BackgroundServer``, for tests, notebooks and benchmarks) or in the foreground until Ctrl-C (``serve``).

Shared by the emulator and the proxy (both need the ``emulator`` extra: starlette and uvicorn). The socket is bound
here, before uvicorn starts, so a busy port is an ``OSError`` the caller can report in one line (uvicorn itself
would log it and exit the process).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn

__all__ = ["BackgroundServer", "bind", "serve", "url_of", "uvicorn_config"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port); ``OSError`` if it cannot be bound."""
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without it,
    # Nagle holds each body write until the client's delayed ACK (~40 ms per response on loopback).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def uvicorn_config(app: Any, *, embedded: bool, **overrides: Any) -> uvicorn.Config:
    """uvicorn's settings for our servers (``overrides`` are more ``uvicorn.Config`` keywords)."""
    options: dict[str, Any] = {"log_config": None} if embedded else {}
    options.setdefault("timeout_graceful_shutdown", 1)
    options.update(overrides)
    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        server_header=False,
        **options,
    )


def url_of(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(server: uvicorn.Server, sock: socket.socket) -> None:
    """Serve in the foreground until Ctrl-C."""
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


class BackgroundServer:
    """One uvicorn server on a bound socket, run in a daemon thread (the base of ``Emulator`` and ``Proxy``):
    ``start`` returns once it accepts connections, ``stop`` cuts open connections (even stalled streams) and joins
    the thread; a context manager, sync and async. A subclass gives ``make_server`` and its ``name``."""

    name = "server"

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def make_server(self) -> uvicorn.Server:
        raise NotImplementedError

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"The {self.name} has no port yet: call start() (or use it as a context manager).")
        return self._port

    @property
    def url(self) -> str:
        return url_of(self.host, self.port)

    @property
    def base_url(self) -> str:
        """The OpenAI ``base_url``: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.url}/v1"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> Self:
        """Bind the port, start serving, and return once the server accepts connections."""
        if self.running:
            return self
        sock = bind(self.host, self._requested_port)
        self._port = sock.getsockname()[1]
        server = self.make_server()
        self._error = None
        thread = threading.Thread(target=self._run, args=(server, sock), name=f"{self.name}:{self._port}", daemon=True)
        thread.start()
        self._server, self._thread = server, thread
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                self._server = self._thread = None
                raise RuntimeError(f"The {self.name} failed to start on {self.url}: {self._error!r}") from self._error
            if time.monotonic() >= deadline:
                self.stop()
                raise TimeoutError(f"The {self.name} did not start within {timeout} s on {self.url}.")
            time.sleep(0.002)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop at once: open streams (even stalled ones) are cut. Idempotent."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        server.should_exit = True
        server.force_exit = True
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"The {self.name} on {self.url} did not stop within {timeout} s.")

    def _run(self, server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            factory = getattr(server.config, "get_loop_factory", None)  # uvicorn 0.36 and later: uvloop, as served
            with asyncio.Runner(loop_factory=factory() if factory else None) as runner:
                runner.run(self._serve(server, sock))
        except BaseException as error:  # recorded for start(); uvicorn exits with SystemExit on startup errors
            self._error = error
        finally:
            sock.close()

    @staticmethod
    async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            for connection in list(server.server_state.connections):
                transport = getattr(connection, "transport", None)
                if isinstance(transport, asyncio.BaseTransport):
                    transport.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"{type(self).__name__}({where}, running={self.running})"
