"""Serving the gateway on a real port: ``Emulator`` in a background thread, ``run_emulator`` in the foreground
(needs the ``emulator`` extra: uvicorn)."""

from __future__ import annotations

import asyncio
import logging
import socket

import uvicorn
from starlette.applications import Starlette

from .._serve import BackgroundServer, bind, serve, url_of, uvicorn_config
from ._errors import ConnectionCutError
from ._formats import profile_summary
from ._gateway import Gateway
from ._state import EmulatorConfig, EmulatorState

__all__ = ["Emulator", "run_emulator", "start_line"]


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


class Emulator(BackgroundServer):
    """The emulator on a real loopback port, served from a background thread with its own event loop.

    ::

        with Emulator() as emu:                     # or: async with Emulator() as emu:
            client = openai.OpenAI(base_url=emu.base_url, api_key="test")
            ...
            emu.state.requests, emu.state.disconnects
    """

    name = "emulator"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", config: EmulatorConfig | None = None) -> None:
        super().__init__(host, port)
        self.config = config or EmulatorConfig()
        self.state = EmulatorState()
        self._gateway = Gateway(self.config, self.state)
        self.app: Starlette = self._gateway.app

    def make_server(self) -> uvicorn.Server:
        _install_log_filter()
        return _Server(uvicorn_config(self._gateway.app, embedded=True), self._gateway)


def start_line(base: str) -> str:
    """The line ``run_emulator`` (``llm-stream emulate``) starts with: the base URL and the profiles per format."""
    return f"llm-stream emulator: base_url {base}/v1 ({profile_summary()}). Ctrl-C stops it."


def run_emulator(host: str = "127.0.0.1", port: int = 8808, *, config: EmulatorConfig | None = None) -> None:
    """Serve the emulator in the foreground until Ctrl-C (``llm-stream emulate``); ``OSError`` if the port is busy."""
    gateway = Gateway(config or EmulatorConfig(), EmulatorState())
    sock = bind(host, port)
    _install_log_filter()
    server = _Server(uvicorn_config(gateway.app, embedded=False), gateway)
    print(start_line(url_of(host, sock.getsockname()[1])), flush=True)
    serve(server, sock)
