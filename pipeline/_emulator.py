"""A fault-injecting, OpenAI-compatible gateway emulator: a real HTTP server for tests, the CLI and benchmarks.

    POST /v1/chat/completions   (also /chat/completions)   a scripted stream, chosen per request
    GET  /v1/models             (also /models)             one model "emulator/<profile>" per profile

The fault profile of a request comes from, in order:

    1. the ``x-emulator-profile`` header (or ``?profile=``);
    2. the model name: ``"emulator/<profile>"``, or a bare ``"<profile>"``;
    3. ``EmulatorConfig.default_profile`` ("clean"), for any other model name.

An unknown profile named in 1 or 2 is a 404 with an OpenAI-style JSON error. Per-request knobs (header, or the
query parameter in brackets):

    x-emulator-fail-first: N  [fail_first]   the first N requests with the same key get the profile ...
    x-emulator-then: P        [then]         ... later ones get P (default "clean"): retries testable end to end
    x-emulator-key: K         [key]          the counter key (default: the profile name)
    x-emulator-drip-ms        [drip_ms]      pause between events (slow-drip default 50; others 0)
    x-emulator-stall-s        [stall_s]      how long ``stall`` stalls (default 3600)
    x-emulator-retry-after    [retry_after]  Retry-After of ``rate-limit`` (default 2)
    x-emulator-file           [file]         ``replay``: absolute path under ``EmulatorConfig.replay_dirs``
    x-emulator-chunk-bytes    [chunk_bytes]  ``replay``: split the body into pieces of this many bytes

A ``"stream": false`` request gets the assembled ``chat.completion`` for stream profiles (faults that live in
the SSE framing then do not apply) and the same HTTP error for error profiles.

The server records every request and every client disconnect in an ``EmulatorState``. ``Emulator`` runs it in a
background thread with its own event loop (sync code, pytest, notebooks); ``run_emulator`` runs it in the
foreground for ``llm-stream emulate``. The scripted streams themselves live in ``pipeline._emulator_scripts``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import attrs
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ._emulator_scripts import (
    PROFILES,
    Pause,
    Script,
    ScriptOptions,
    Write,
    assemble_completion,
    build_script,
    replay_script,
)

__all__ = [
    "PROFILES",
    "Emulator",
    "EmulatorConfig",
    "EmulatorState",
    "RecordedRequest",
    "create_app",
    "run_emulator",
]

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie"})


def _paths(values: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    return tuple(Path(v) for v in values)


@attrs.frozen
class EmulatorConfig:
    """Server-wide settings."""

    replay_dirs: tuple[Path, ...] = attrs.field(default=(), converter=_paths)
    """Directories whose files (and subdirectories' files) the ``replay`` profile may serve."""
    default_profile: str = attrs.field(default="clean")

    @default_profile.validator
    def _known(self, attribute: attrs.Attribute[str], value: str) -> None:
        if value not in PROFILES or value == "replay":
            raise ValueError(f"default_profile must be a scripted profile, one of {', '.join(PROFILES)}; got {value!r}")


@attrs.frozen
class RecordedRequest:
    """One request as the emulator saw it."""

    profile: str
    """The profile that answered ("" when the request was rejected before a profile was chosen)."""
    method: str
    path: str
    body: Any
    """The parsed JSON body (``None`` when it was not JSON)."""
    headers: Mapping[str, str]
    """Request headers, lower-cased, without ``authorization`` and other credentials."""


class EmulatorState:
    """What the emulator observed. Written by the server thread, safe to read from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        """Streaming responses whose client went away before the end."""
        self._attempts: dict[str, int] = {}

    @property
    def attempts(self) -> Mapping[str, int]:
        """Requests seen so far per ``x-emulator-key`` (only requests carrying ``x-emulator-fail-first``)."""
        with self._lock:
            return dict(self._attempts)

    def wait_for_disconnects(self, count: int = 1, timeout: float = 2.0) -> bool:
        """Poll until ``disconnects >= count``; ``False`` if the timeout passed first."""
        deadline = time.monotonic() + timeout
        while self.disconnects < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def reset(self) -> None:
        """Forget every request, disconnect and fail-first counter."""
        with self._lock:
            self.requests.clear()
            self.disconnects = 0
            self._attempts.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _record_disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1

    def _next_attempt(self, key: str) -> int:
        """The number of earlier attempts under ``key``, counting this one for next time."""
        with self._lock:
            seen = self._attempts.get(key, 0)
            self._attempts[key] = seen + 1
            return seen


# --------------------------------------------------------------------------------------------------- the app


class _ConnectionCutError(Exception):
    """Raised inside a streaming response to make the server drop the connection (logged by nobody)."""


class _RequestError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def response(self) -> Response:
        return _error_response(self.status, self.message, "invalid_request_error", self.code, self.param)


def _error_response(
    status: int, message: str, error_type: str, code: str | None = None, param: str | None = None
) -> Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def _option(request: Request, header: str, query: str) -> str | None:
    value = request.headers.get(header)
    if value is None:
        value = request.query_params.get(query)
    return None if value is None else value.strip()


def _number_option(request: Request, header: str, query: str) -> float | None:
    value = _option(request, header, query)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:  # also rejects NaN
        raise _RequestError(400, f"{header} must be a non-negative number, got {value!r}")
    return number


def _int_option(request: Request, header: str, query: str) -> int | None:
    value = _option(request, header, query)
    if value is None:
        return None
    if not value.isdigit():
        raise _RequestError(400, f"{header} must be a non-negative integer, got {value!r}")
    return int(value)


def _estimate_prompt_tokens(body: Mapping[str, Any]) -> int:
    messages = body.get("messages")
    return max(1, len(json.dumps(messages)) // 4) if messages else 1


class _ScriptResponse(Response):
    """Replays a ``Script`` as a streamed body; detects a client that goes away before the end."""

    def __init__(self, script: Script, gateway: _Gateway) -> None:
        super().__init__(status_code=script.status, headers=dict(script.headers), media_type=script.content_type)
        # A stream has no Content-Length: the body goes out chunked.
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.script = script
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False

        async def produce() -> None:
            nonlocal finished
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            for step in self.script.steps:
                if isinstance(step, Write):
                    await send({"type": "http.response.body", "body": step.data, "more_body": True})
                elif isinstance(step, Pause):
                    if await self.gateway.pause(step.seconds):
                        raise _ConnectionCutError("the emulator is shutting down")
                else:
                    raise _ConnectionCutError(step.reason)
            finished = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        producer = asyncio.ensure_future(produce())
        listener = asyncio.ensure_future(listen())
        try:
            await asyncio.wait({producer, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            producer.cancel()
            listener.cancel()
            await asyncio.gather(producer, listener, return_exceptions=True)
        if producer.done() and not producer.cancelled():
            error = producer.exception()
            if error is None:
                return
            if not isinstance(error, OSError):
                raise error  # _ConnectionCutError: uvicorn closes the transport mid-body
        if not finished:
            self.gateway.state._record_disconnect()


class _Gateway:
    """The Starlette app plus what it needs at request time."""

    def __init__(self, config: EmulatorConfig, state: EmulatorState) -> None:
        self.config = config
        self.state = state
        self._closing: asyncio.Event | None = None
        self._closing_loop: asyncio.AbstractEventLoop | None = None
        routes = [
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/models", self.models, methods=["GET"]),
        ]
        self.app = Starlette(routes=routes, exception_handlers={HTTPException: self.http_error})
        self.app.state.emulator_state = state

    # -- shutdown: pauses (drip, stall) end early so the server can stop at once

    def _closing_event(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._closing is None or self._closing_loop is not loop:
            self._closing, self._closing_loop = asyncio.Event(), loop
        return self._closing

    def begin_shutdown(self) -> None:
        """Called on the server's loop when it starts shutting down."""
        self._closing_event().set()

    async def pause(self, seconds: float) -> bool:
        """Sleep ``seconds``; ``True`` when cut short because the server is shutting down."""
        closing = self._closing_event()
        if closing.is_set():
            return True
        if seconds <= 0:
            return False
        try:
            async with asyncio.timeout(seconds):
                await closing.wait()
        except TimeoutError:
            return False
        return True

    # -- endpoints

    async def http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = f"{request.method} {request.url.path}: {exc}. The emulator serves POST /v1/chat/completions "
        message += "and GET /v1/models."
        return _error_response(status, message, "invalid_request_error")

    async def models(self, request: Request) -> Response:
        data = [
            {"id": f"emulator/{name}", "object": "model", "created": 0, "owned_by": "llm-stream-emulator"}
            for name in PROFILES
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat_completions(self, request: Request) -> Response:
        raw = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS}
        try:
            body: Any = json.loads(raw) if raw.strip() else {}
        except ValueError:
            body = None
        profile = ""
        try:
            if not isinstance(body, dict):
                raise _RequestError(400, "The request body must be a JSON object (an OpenAI chat completion request).")
            profile = self._choose_profile(request, body)
            script = self._script(request, body, profile)
        except _RequestError as error:
            self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
            return error.response()
        self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
        if body.get("stream") is not True and script.is_event_stream and script.chunks:
            full = build_script(profile, self._options(request, body, include_usage=True))
            return JSONResponse(assemble_completion(full.chunks))
        if not script.is_event_stream and all(isinstance(step, Write) for step in script.steps):
            return Response(script.body, script.status, dict(script.headers), script.content_type)
        return _ScriptResponse(script, self)

    def _choose_profile(self, request: Request, body: Mapping[str, Any]) -> str:
        name = _option(request, "x-emulator-profile", "profile")
        model = body.get("model")
        if name is None and isinstance(model, str):
            if model.startswith("emulator/"):
                name = model.removeprefix("emulator/")
            elif model in PROFILES:
                name = model
        name = name or self.config.default_profile
        self._check_profile(name, "profile")
        if name == "agent":
            return self._agent_step(request, body)
        fail_first = _int_option(request, "x-emulator-fail-first", "fail_first")
        if not fail_first:
            return name
        then = _option(request, "x-emulator-then", "then") or "clean"
        self._check_profile(then, "x-emulator-then")
        key = _option(request, "x-emulator-key", "key") or name
        return name if self.state._next_attempt(key) < fail_first else then

    def _agent_step(self, request: Request, body: Mapping[str, Any]) -> str:
        """The ``agent`` profile: which step of the scripted conversation this request is."""
        messages = body.get("messages")
        step = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant") if isinstance(
            messages, list
        ) else 0
        if step == 0:
            return "seed-bug"
        if step == 1:
            key = _option(request, "x-emulator-key", "key") or "agent"
            return "never-identified" if self.state._next_attempt(f"{key}/agent-step-2") < 1 else "parallel"
        return "clean"

    @staticmethod
    def _check_profile(name: str, what: str) -> None:
        if name not in PROFILES:
            raise _RequestError(
                404,
                f"Unknown emulator {what} {name!r}. Expected one of: {', '.join(PROFILES)}. Choose it with the "
                "x-emulator-profile header or the model name 'emulator/<profile>'.",
                "model_not_found",
                "model",
            )

    def _options(
        self, request: Request, body: Mapping[str, Any], *, include_usage: bool | None = None
    ) -> ScriptOptions:
        stream_options = body.get("stream_options")
        if include_usage is None:
            include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
        model = body.get("model")
        stall_s = _number_option(request, "x-emulator-stall-s", "stall_s")
        retry_after = _number_option(request, "x-emulator-retry-after", "retry_after")
        return ScriptOptions(
            model=model if isinstance(model, str) and model else "emulator",
            include_usage=include_usage,
            prompt_tokens=_estimate_prompt_tokens(body),
            completion_id=f"chatcmpl-emu{uuid.uuid4().hex[:24]}",
            created=int(time.time()),
            drip_ms=_number_option(request, "x-emulator-drip-ms", "drip_ms"),
            stall_s=3600.0 if stall_s is None else stall_s,
            retry_after="2" if retry_after is None else f"{retry_after:g}",
        )

    def _script(self, request: Request, body: Mapping[str, Any], profile: str) -> Script:
        options = self._options(request, body)
        if profile != "replay":
            return build_script(profile, options)
        return replay_script(
            self._replay_file(request).read_bytes(),
            chunk_bytes=_int_option(request, "x-emulator-chunk-bytes", "chunk_bytes"),
            drip_ms=options.drip_ms,
        )

    def _replay_file(self, request: Request) -> Path:
        name = _option(request, "x-emulator-file", "file")
        if not name or not Path(name).is_absolute():
            raise _RequestError(
                400, "The replay profile needs x-emulator-file: the absolute path of a recorded .sse file."
            )
        path = Path(name).resolve()
        allowed = [d.resolve() for d in self.config.replay_dirs]
        if not any(path.is_relative_to(d) for d in allowed):
            raise _RequestError(
                403,
                f"{name} is not under a replay directory of this emulator "
                f"({', '.join(map(str, allowed)) or 'none configured'}); "
                "start it with EmulatorConfig(replay_dirs=[...]).",
            )
        if not path.is_file():
            raise _RequestError(404, f"Replay file {name} does not exist.")
        return path


def create_app(config: EmulatorConfig | None = None, state: EmulatorState | None = None) -> Starlette:
    """The emulator as a bare ASGI app (``app.state.emulator_state`` is its ``EmulatorState``)."""
    return _Gateway(config or EmulatorConfig(), state or EmulatorState()).app


# --------------------------------------------------------------------------------------------------- serving


class _QuietCuts(logging.Filter):
    """Drop uvicorn's traceback for connections the emulator cuts on purpose (or cancels at shutdown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, _ConnectionCutError | asyncio.CancelledError)


def _install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in logger.filters):
        logger.addFilter(_QuietCuts())


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: _Gateway) -> None:
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


def _uvicorn_config(gateway: _Gateway, *, embedded: bool) -> uvicorn.Config:
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
    """The emulator on a real loopback port, served from a background thread.

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
        self._gateway = _Gateway(self.config, self.state)
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
    gateway = _Gateway(config or EmulatorConfig(), EmulatorState())
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
