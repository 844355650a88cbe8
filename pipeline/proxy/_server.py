"""The proxy served by uvicorn: ``Proxy`` (a background thread: tests, notebooks, benchmarks) and ``run_proxy``
(the foreground: ``llm-stream proxy``).

What the server adds to the app (docs/proxy.md):
- a header deadline (``header_timeout``) and a lingering close after an answer given before the request's body
  ended (``linger_timeout``, ``linger_bytes``): uvicorn's h11 protocol as ``_protocol.py`` extends it;
- the client idle deadline (``client_idle_timeout``: uvicorn's keep-alive timeout, and the body reads' own);
- a graceful SIGTERM: stop accepting, let requests in flight finish for up to ``grace_period`` seconds, exit 0;
- out of file descriptors, one line every 10 s instead of asyncio's traceback per failed accept;
- the access log on stderr (``run_proxy``).
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import logging
import signal
import socket
import sys
import threading
import time
from typing import Any

import uvicorn

from .._logging import get_logger
from .._serve import BackgroundServer, bind, serve, url_of, uvicorn_config
from ._app import ACCESS_LOG, ProxyApp, create_proxy_app
from ._config import ProxyConfig
from ._protocol import protocol

__all__ = ["Proxy", "run_proxy"]

_log = get_logger("proxy")
CUT_MARGIN = 2.0
"""Seconds uvicorn waits after the grace period, once the proxy has cut what was in flight, before its own cut."""
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _quiet_when_out_of_resources() -> Any:
    """A loop exception handler: running out of file descriptors is one line every 10 s, not a traceback per
    failed accept; everything else goes to asyncio's default handler."""
    last = [0.0]

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_RESOURCES:
            now = time.monotonic()
            if now - last[0] >= 10:
                last[0] = now
                _log.error("the proxy is out of resources (%s): lower --max-streams or raise the file limit", exc)
            return
        loop.default_exception_handler(context)

    return handle


class _Cut(logging.Filter):
    """uvicorn logs a response an app left without its end; the proxy does that on purpose to cut a response
    (the access log says why), so that line is dropped; and so is the traceback of a request uvicorn cancelled itself
    at shutdown (past the proxy's own cut: its access-log line says ``cut=shutdown``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            return False
        return record.getMessage() != "ASGI callable returned without completing response."


_cut_filter = _Cut()


def _check_loop(config: ProxyConfig) -> None:
    if config.loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise ValueError("loop uvloop: uvloop is not installed (pip install 'llm-stream-pipeline[proxy]' installs it "
                         "on Linux and macOS); or --loop auto, which takes asyncio where uvloop is missing")


class _ProxyServer(uvicorn.Server):
    """Deadlines for clients; on shutdown, ``/ready`` says so, requests in flight get the grace period, and the
    upstream's connections are closed."""

    def __init__(self, app: ProxyApp, *, embedded: bool) -> None:
        config = app.config
        super().__init__(uvicorn_config(
            app, embedded=embedded, http=protocol(config.header_timeout, config.linger_timeout, config.linger_bytes),
            timeout_keep_alive=config.client_idle_timeout,
            timeout_graceful_shutdown=config.grace_period + CUT_MARGIN,  # the proxy cuts first (``shutdown``)
            proxy_headers=False,  # the app never reads the client's address: no X-Forwarded-For rewrite per request
            loop=config.loop,  # uvicorn's names; "auto" is uvloop where installed (decision 0073, "The event loop")
        ))
        self.app = app
        logging.getLogger("uvicorn.error").addFilter(_cut_filter)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(_quiet_when_out_of_resources())
        await super().startup(sockets=sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.app.draining = True
        # At the end of the grace period the proxy cuts what is still in flight itself, each repaired stream with its
        # format's in-band error and cut=shutdown, so uvicorn's own cut (a cancel, a traceback per task) never comes.
        timer = asyncio.get_running_loop().call_later(self.app.config.grace_period, self.app.cut_all)
        try:
            await super().shutdown(sockets=sockets)
        finally:
            timer.cancel()
            await self.app.aclose()


class Proxy(BackgroundServer):
    """The proxy on a loopback port, served from a background thread (tests, notebooks, benchmarks)::

    with Proxy(upstream=emulator.base_url) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key=...)

    ``Proxy(config)`` or ``Proxy(upstream, max_streams=..., ...)`` with ``ProxyConfig``'s fields as keywords (the
    config's ``host`` and ``port`` are where it listens; port 0 by default here: any free port).
    """

    name = "proxy"

    def __init__(self, upstream: str | ProxyConfig, **options: Any) -> None:
        if isinstance(upstream, ProxyConfig):
            config = upstream
        else:
            options.setdefault("port", 0)
            config = ProxyConfig(upstream=upstream, **options)
        _check_loop(config)
        super().__init__(config.host, config.port)
        self.config = config
        self.app = create_proxy_app(config)

    def make_server(self) -> uvicorn.Server:
        return _ProxyServer(self.app, embedded=True)


def _log_to_stderr(access: bool) -> None:
    """The proxy's own lines on stderr: warnings and errors of ``llm_stream.proxy`` (running out of file
    descriptors), and the access log (one line per request) unless it is off."""
    targets = ((_log.name, logging.WARNING, True), (get_logger(ACCESS_LOG).name, logging.INFO, access))
    for name, level, wanted in targets:
        logger = logging.getLogger(name)
        if not wanted or any(getattr(handler, "_llm_stream_proxy", False) for handler in logger.handlers):
            continue
        handler = logging.StreamHandler(sys.stderr)
        shown = "%(message)s" if level == logging.INFO else "llm-stream proxy: %(message)s"
        handler.setFormatter(logging.Formatter(shown))
        handler._llm_stream_proxy = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def run_proxy(upstream: str | ProxyConfig, **options: Any) -> None:
    """Serve the proxy in the foreground until Ctrl-C or SIGTERM (graceful: requests in flight get the grace
    period, then it returns); ``OSError`` if the port cannot be bound, ``ValueError`` for a bad setting."""
    config = upstream if isinstance(upstream, ProxyConfig) else ProxyConfig(upstream=upstream, **options)
    _check_loop(config)
    app = create_proxy_app(config)
    sock = bind(config.host, config.port)
    _log_to_stderr(access=config.log_format != "off")
    if config.open_relay():  # allowed by --allow-open-relay: said once, loudly, before it serves
        _log.warning("WARNING: an open relay: listening on %s with the upstream key and no client keys "
                     "(--allow-open-relay): anyone who reaches the port spends the upstream key", config.host)
    print(f"llm-stream proxy: base_url {url_of(config.host, sock.getsockname()[1])}/v1 -> {config.upstream}. "
          "Ctrl-C stops it.", flush=True)
    # uvicorn handles SIGTERM itself, then raises it again once it has shut down: with this handler in place that
    # second SIGTERM does nothing, and the process exits 0 instead of dying by the signal.
    main = threading.current_thread() is threading.main_thread()  # signals are the main thread's only
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None) if main else None
    try:
        serve(_ProxyServer(app, embedded=False), sock)
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
