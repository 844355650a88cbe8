"""The Starlette app: the HTTP face of the emulator (needs the ``emulator`` extra).

    POST /v1/chat/completions   (also /chat/completions)   a scripted stream, chosen per request (``_routing.py``)
    GET  /v1/models             (also /models)             a model per profile of each format (``listed_models``)
    POST /v1/messages           (also /messages)           Anthropic Messages streaming (``_formats.py``)
    POST /v1/responses          (also /responses)          OpenAI Responses streaming (``_formats.py``)
    POST <each other format's record's path, under its prefixes>  (``_formats.py``; Gemini's carries ``{model}``)

A ``"stream": false`` request gets the ``chat.completion`` the pipeline assembles from the profile's stream
(``_completion.py``; faults that live in the SSE framing then do not apply) and the same HTTP error for error
profiles. Every request and every client disconnect is recorded in the ``EmulatorState``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from pipeline.formats import WIRE_FORMATS, WIRE_REGISTRY

from ._completion import completion
from ._errors import ConnectionCutError, RequestError, error_body
from ._formats import FORMATS, choose_format_profile, format_error, format_script, listed_models
from ._profiles import build_script
from ._routing import Knobs, choose_profile, request_script, script_options
from ._script import Pause, Script, Write
from ._state import EmulatorConfig, EmulatorState, RecordedRequest

__all__ = ["Gateway", "create_app"]

_SECRET_HEADERS = frozenset({"proxy-authorization", "api-key", "cookie"}) | WIRE_REGISTRY.secret_headers
"""Not recorded: credentials, the key headers of every wire-format record among them."""


class _ScriptResponse(Response):
    """Replays a ``Script`` as a streamed body; detects a client that goes away before the end."""

    def __init__(self, script: Script, gateway: Gateway) -> None:
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
                        raise ConnectionCutError("the emulator is shutting down")
                else:
                    raise ConnectionCutError(step.reason)
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
                raise error  # ConnectionCutError: uvicorn closes the transport mid-body
        if not finished:
            self.gateway.state._record_disconnect()


class Gateway:
    """The Starlette app plus what it needs at request time."""

    def __init__(self, config: EmulatorConfig, state: EmulatorState) -> None:
        self.config = config
        self.state = state
        self._closing: asyncio.Event | None = None
        self._closing_loop: asyncio.AbstractEventLoop | None = None
        routes = [
            Route(f"/v1{WIRE_FORMATS['chat'].path}", self.chat_completions, methods=["POST"]),
            Route(WIRE_FORMATS["chat"].path, self.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/models", self.models, methods=["GET"]),
        ]
        for api in FORMATS.values():  # each format's record says where it is posted
            routes += [Route(path, self._format_endpoint_of(api.name), methods=["POST"]) for path in api.paths]
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
        served = ", ".join(f"POST /v1{WIRE_FORMATS[name].path}" for name in ("chat", *FORMATS))
        message = f"{request.method} {request.url.path}: {exc}. The emulator serves {served} and GET /v1/models."
        return JSONResponse(error_body(message, "invalid_request_error"), status_code=status)

    async def models(self, request: Request) -> Response:
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "llm-stream-emulator"}
            for model in listed_models()
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat_completions(self, request: Request) -> Response:
        body, headers, knobs = await _read(request)
        profile = ""
        try:
            if not isinstance(body, dict):
                raise RequestError(400, "The request body must be a JSON object (an OpenAI chat completion request).")
            profile = choose_profile(knobs, body, self.config, self.state)
            script = request_script(knobs, body, profile, self.config)
        except RequestError as error:
            self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
            return JSONResponse(error.body(), status_code=error.status)
        self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
        streams = WIRE_FORMATS["chat"].asks_stream(request.method, request.url.path, request.url.query, body)
        if not streams and profile != "replay" and script.is_event_stream and script.body:
            options = script_options(knobs, body, include_usage=True)
            return JSONResponse(completion(build_script(profile, options), options))
        if not script.is_event_stream and all(isinstance(step, Write) for step in script.steps):
            return Response(script.body, script.status, dict(script.headers), script.content_type)
        return _ScriptResponse(script, self)

    def _format_endpoint_of(self, format_name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await self._format_endpoint(request, format_name)

        return endpoint

    async def _format_endpoint(self, request: Request, format_name: str) -> Response:
        """``POST /v1/messages``, ``POST /v1/responses`` (and any format ``FORMATS`` lists): stream only, errors in
        the API's own shape."""
        api = FORMATS[format_name]
        body, headers, knobs = await _read(request)
        profile = ""
        try:
            if not isinstance(body, dict):
                raise RequestError(400, f"The request body must be a JSON object (a request in {api.title}).")
            where = (request.url.path, request.url.query)
            asked = _with_path_model(body, request)
            profile = choose_format_profile(api, knobs, asked, self.config, self.state, where)
            script = format_script(api, knobs, asked, profile)
        except RequestError as error:
            self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
            return JSONResponse(format_error(api, error), status_code=error.status)
        self.state._record(RecordedRequest(profile, request.method, request.url.path, body, headers))
        if not script.is_event_stream:
            return Response(script.body, script.status, dict(script.headers), script.content_type)
        return _ScriptResponse(script, self)


def _with_path_model(body: dict[str, Any], request: Request) -> dict[str, Any]:
    """The body as the profile is chosen from: a path that carries the model (``{model}``, Gemini's) gives the
    request's model when the body names none, as the body's ``model`` does for the other formats (the recorded body
    stays as sent)."""
    model = request.path_params.get("model")
    return body if model is None or "model" in body else {**body, "model": model}


async def _read(request: Request) -> tuple[Any, dict[str, str], Knobs]:
    """The request's JSON body (``None`` when it is not JSON, ``{}`` when empty), its headers without credentials,
    and its ``x-emulator-*`` knobs."""
    raw = await request.body()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS}
    try:
        body: Any = json.loads(raw) if raw.strip() else {}
    except ValueError:
        body = None
    return body, headers, Knobs(request.headers, request.query_params)


def create_app(config: EmulatorConfig | None = None, state: EmulatorState | None = None) -> Starlette:
    """The emulator as a bare ASGI app (``app.state.emulator_state`` is its ``EmulatorState``)."""
    return Gateway(config or EmulatorConfig(), state or EmulatorState()).app
