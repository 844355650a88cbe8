"""Serving the gateway on a real port: ``Emulator`` in a background thread, ``run_emulator`` in the foreground
(needs the ``emulator`` extra: uvicorn)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette

from ._errors import ConnectionCutError
from ._gateway import Gateway
from ._profiles import PROFILES
from ._state import EmulatorConfig, EmulatorState

__all__ = ["Emulator", "run_emulator"]


class _QuietCuts(logging.Filter):
    """Drop uvicorn's traceback for connections the emulator cuts on purpose (or cancels at shutdown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, ConnectionCutError | asyncio.CancelledError)


def _install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in logger.filters):
        logger.addFilter(_QuietCuts())


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.gateway.begin_shutdown()
        await super().shutdown(sockets=sockets)


def _bind(host: str, port: int) -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without it,
    # Nagle holds each body write until the client's delayed ACK (~40 ms per response on loopback).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _uvicorn_config(gateway: Gateway, *, embedded: bool) -> uvicorn.Config:
    options: dict[str, Any] = {"log_config": None} if embedded else {}
    return uvicorn.Config(
        gateway.app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=1,
        **options,
    )


class Emulator:
    """The emulator on a real loopback port, served from a background thread with its own event loop.

    ::

        with Emulator() as emu:                     # or: async with Emulator() as emu:
            client = openai.OpenAI(base_url=emu.base_url, api_key="test")
            ...
            emu.state.requests, emu.state.disconnects
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1", config: EmulatorConfig | None = None) -> None:
        self.host = host
        self.config = config or EmulatorConfig()
        self.state = EmulatorState()
        self._gateway = Gateway(self.config, self.state)
        self.app: Starlette = self._gateway.app
        self._requested_port = port
        self._port: int | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("The emulator has no port yet: call start() (or use it as a context manager).")
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

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
        sock = _bind(self.host, self._requested_port)
        self._port = sock.getsockname()[1]
        _install_log_filter()
        server = _Server(_uvicorn_config(self._gateway, embedded=True), self._gateway)
        self._error = None
        thread = threading.Thread(
            target=self._run, args=(server, sock), name=f"llm-stream-emulator:{self._port}", daemon=True
        )
        thread.start()
        self._server, self._thread = server, thread
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                self._server = self._thread = None
                raise RuntimeError(f"The emulator failed to start on {self.url}: {self._error!r}") from self._error
            if time.monotonic() >= deadline:
                self.stop()
                raise TimeoutError(f"The emulator did not start within {timeout} s on {self.url}.")
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
            raise TimeoutError(f"The emulator on {self.url} did not stop within {timeout} s.")

    def _run(self, server: _Server, sock: socket.socket) -> None:
        try:
            asyncio.run(self._serve(server, sock))
        except BaseException as error:  # recorded for start(); uvicorn exits with SystemExit on startup errors
            self._error = error
        finally:
            sock.close()

    @staticmethod
    async def _serve(server: _Server, sock: socket.socket) -> None:
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
        return f"Emulator({where}, running={self.running})"


def run_emulator(host: str = "127.0.0.1", port: int = 8808, *, config: EmulatorConfig | None = None) -> None:
    """Serve the emulator in the foreground until Ctrl-C (``llm-stream emulate``)."""
    gateway = Gateway(config or EmulatorConfig(), EmulatorState())
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    _install_log_filter()
    server = _Server(_uvicorn_config(gateway, embedded=False), gateway)
    print(f"llm-stream emulator: base_url http://{shown}:{bound}/v1 ({len(PROFILES)} profiles). Ctrl-C stops it.")
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
