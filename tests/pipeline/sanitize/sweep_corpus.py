"""The whole shared corpus for the SDK sweep (``test_faithful_sweep.py``): every recorded stream of
the corpus (``corpus.py``: ``sse/real``, ``sse/peers``, ``messages``, ``responses``, ``peers-formats``), served by one
loopback gateway that picks the stream by the request's ``model``, one chunk per event; the library's own reading of
each stream; and what the unmodified SDK (openai chat and Responses, anthropic Messages) returns or raises, as
comparable values.

    with corpus_gateway() as gateway:
        sdk_readings("httpx2", gateway.base_url, STREAMS, transport=True)[stream.name]  # vs library_reading(stream)
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anthropic
import attrs
import httpx
import httpx2
import openai
from corpus import FIXTURES, MESSAGES_STREAMS, PEER_FORMAT_STREAMS, PEER_STREAMS, REAL_STREAMS, RESPONSES_STREAMS
from gateway import Gateway, chunk

import pipeline
from pipeline import RetryPolicy, SanitizingTransport
from pipeline.sanitize._formats import STREAM_FORMATS

__all__ = ["KINDS", "STREAMS", "Format", "Kind", "Stream", "Unparsed", "corpus_gateway", "forwarded_before_failing",
           "library_reading", "raw_readings", "sdk_readings", "served"]

Kind = Literal["httpx2", "httpx2-async", "httpx", "httpx-async"]
KINDS: tuple[Kind, ...] = ("httpx2", "httpx2-async", "httpx", "httpx-async")
Format = Literal["chat", "messages", "responses", "gemini"]


@attrs.frozen
class Stream:
    """One recorded stream: its name (its path under ``fixtures``, no suffix; the gateway's model name) and format."""

    path: Path
    format: Format

    @property
    def name(self) -> str:
        return self.path.relative_to(FIXTURES).with_suffix("").as_posix() if self.path.is_relative_to(FIXTURES) \
            else f"{self.path.parent.name}/{self.path.stem}"

    def __str__(self) -> str:
        return self.name


def _streams() -> list[Stream]:
    folders: list[tuple[Path, Format]] = [(REAL_STREAMS, "chat"), (PEER_STREAMS, "chat"),
                                          (MESSAGES_STREAMS, "messages"), (RESPONSES_STREAMS, "responses"),
                                          (PEER_FORMAT_STREAMS / "messages", "messages"),
                                          (PEER_FORMAT_STREAMS / "responses", "responses")]
    return [Stream(path, fmt) for folder, fmt in folders for path in sorted(folder.glob("*.sse"))]

STREAMS = _streams()
"""Every stream of the corpus, in a fixed order."""

_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n|\r\r)", re.DOTALL)


def _events(body: bytes) -> list[bytes]:
    events = _EVENT.findall(body)
    rest = body[sum(len(e) for e in events):]
    return [e for e in [*events, rest] if e]


def served(body: bytes) -> bytes:
    """``body`` as a 200 event stream, one chunk per event (so the transport reads it event by event); the gateway
    closes each connection after its answer, and says so."""
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
            b"connection: close\r\n\r\n")
    return head + b"".join(chunk(e) for e in _events(body)) + b"0\r\n\r\n"


def corpus_gateway() -> Gateway:
    """One gateway for the whole corpus: a request's ``model`` names the stream it gets."""
    bodies = {stream.name: served(stream.path.read_bytes()) for stream in STREAMS}
    return Gateway(route=lambda head, body: bodies[json.loads(body)["model"]])


# -- the library's reading, in each SDK's terms ------------------------------------------------------------------

@functools.cache
def library_reading(stream: Stream) -> dict[str, Any]:
    """``pipeline.assemble`` of the stream: text, reasoning, calls (arguments parsed for Messages, whose SDK parses
    them), the finish as ``(kind, code)``, and a failure's message, status and retry classification."""
    message = pipeline.assemble(pipeline.collect(stream.path.read_bytes(), format=stream.format))
    calls = [(c.id, c.name, _arguments(stream, c.arguments, c.kind)) for c in message.tool_calls]
    failure = message.finish.failure
    return {"text": message.text, "reasoning": message.reasoning, "calls": calls,
            "finish": (message.finish.kind, message.finish.code),
            "failure": None if failure is None else {"message": failure.message, "status": failure.status,
                                                     "retry": RetryPolicy().is_retryable(failure)}}


class Unparsed(str):
    """Arguments that are not whole JSON (cut by ``max_tokens``): the anthropic SDK gives its partial parse instead,
    so only the call's id and name compare."""

    __slots__ = ()


def _arguments(stream: Stream, arguments: str, kind: str) -> Any:
    if stream.format != "messages" and kind in ("function", "custom"):
        return arguments
    if stream.format != "messages":  # a built-in call's action or operation, compared as the SDK parsed it (0072)
        return json.loads(arguments)
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return Unparsed(arguments)


@functools.cache
def forwarded_before_failing(stream: Stream) -> bool | None:
    """Whether the stream's repairer released a byte before its failure, fed one event per read as the gateway serves
    it (so the transport answers the failure in-band, not as an HTTP error); None when it does not fail."""
    repair = next(f for f in STREAM_FORMATS if f.name == stream.format).repair(limits=None, api_key=None, strict=False)
    released = False  # what a read releases goes out only when that read did not end the stream
    for event in _events(stream.path.read_bytes()):
        out = repair.feed(event)
        if repair.failure is not None or repair.finish is not None:
            break
        released = released or bool(out)
    else:
        repair.close()
    return released if repair.failure is not None else None


# -- the SDK's reading --------------------------------------------------------------------------------------------


def _http(kind: Kind, transport: bool) -> Any:
    module: Any = httpx2 if kind.startswith("httpx2") else httpx
    client_class = module.AsyncClient if kind.endswith("async") else module.Client
    return client_class(transport=SanitizingTransport()) if transport else client_class()


def _error(exc: BaseException) -> dict[str, Any]:
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    retry = response.headers.get("x-should-retry") if status is not None and response is not None else None
    return {"error": type(exc).__name__, "api_error": isinstance(exc, openai.APIError | anthropic.APIError),
            "status": status, "x-should-retry": retry, "message": str(exc)}


def _chat(completion: Any) -> dict[str, Any]:
    choice = next((c for c in completion.choices if c.index == 0), None)
    if choice is None:
        return {"text": "", "reasoning": "", "calls": [], "finish": None}
    message = choice.message
    extra = message.model_extra or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    details = extra.get("reasoning_details")
    if reasoning is None and isinstance(details, list):
        reasoning = "".join(d.get("text") or d.get("summary") or "" for d in details if isinstance(d, dict))
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]
    return {"text": message.content or "", "reasoning": reasoning if isinstance(reasoning, str) else None,
            "calls": calls, "finish": choice.finish_reason, "refusal": message.refusal}


def _messages(message: Any) -> dict[str, Any]:
    content = message.content
    return {"text": "".join(b.text for b in content if b.type == "text"),
            "reasoning": "".join(b.thinking for b in content if b.type == "thinking"),
            "calls": [(b.id, b.name, b.input) for b in content if b.type == "tool_use"],
            "finish": message.stop_reason}


def _responses(response: Any) -> dict[str, Any]:
    reasoning = [part.text for item in response.output if item.type == "reasoning"
                 for part in [*(item.summary or ()), *(item.content or ())]]
    calls = [call for item in response.output if (call := _client_call(item)) is not None]
    incomplete = response.incomplete_details.reason if response.incomplete_details else None
    return {"text": response.output_text, "reasoning": "".join(reasoning), "calls": calls,
            "finish": (response.status, incomplete)}


def _client_call(item: Any) -> tuple[Any, ...] | None:
    """An output item the client runs, as the Responses API reference describes it (decision 0072): (id, name,
    arguments), a built-in call's arguments the fields the SDK parsed; None for any other item."""
    def fields(*names: str) -> dict[str, Any]:
        values = {name: getattr(item, name, None) for name in names}
        return {name: v.model_dump(exclude_unset=True) if hasattr(v, "model_dump") else
                [e.model_dump(exclude_unset=True) for e in v] if isinstance(v, list) else v
                for name, v in values.items() if v is not None}

    kind = item.type
    if kind == "function_call":
        return item.call_id, item.name, item.arguments
    if kind == "custom_tool_call":
        return item.call_id, item.name, item.input
    if kind in ("local_shell_call", "shell_call", "apply_patch_call"):
        field = "operation" if kind == "apply_patch_call" else "action"
        return item.call_id, kind.removesuffix("_call"), fields(field)[field]
    if kind == "computer_call":
        return item.call_id, "computer", fields("action", "actions", "pending_safety_checks")
    if kind == "mcp_approval_request":
        return item.id, "mcp_approval", fields("server_label", "name", "arguments")
    return None


_REQUEST = [{"role": "user", "content": "hi"}]
_SHAPES = {"chat": ("get_final_completion", _chat), "messages": ("get_final_message", _messages),
           "responses": ("get_final_response", _responses)}


def _shaped(shape: Callable[[Any], dict[str, Any]], result: Any) -> dict[str, Any]:
    """The normalized reading, and the whole result as the SDK's model dumps it (``dump``: every field it read)."""
    return {**shape(result), "dump": result.model_dump()}


def _clients(kind: Kind, base_url: str, transport: bool, streams: list[Stream]) -> dict[str, Any]:
    """One SDK client per format, all on one HTTP client of ``kind`` (one SSL context: building one costs ~90 ms);
    the anthropic SDK (>= 2 takes only httpx2 clients) only where Messages streams are read."""
    sync = not kind.endswith("async")
    http = _http(kind, transport)
    setup: dict[str, Any] = {"api_key": "sk-test-key-123456", "max_retries": 0, "http_client": http}
    gpt = (openai.OpenAI if sync else openai.AsyncOpenAI)(base_url=base_url, **setup)
    clients: dict[str, Any] = {"chat": gpt, "responses": gpt, "http": http}
    if any(stream.format == "messages" for stream in streams):
        claude = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        clients["messages"] = claude(base_url=base_url.removesuffix("/v1"), **setup)
    return clients


def _opened(client: Any, stream: Stream) -> Any:
    if stream.format == "messages":
        return client.messages.stream(model=stream.name, max_tokens=64, messages=_REQUEST)
    if stream.format == "chat":
        return client.chat.completions.stream(model=stream.name, messages=_REQUEST)
    return client.responses.stream(model=stream.name, input="hi")


def sdk_readings(kind: Kind, base_url: str, streams: list[Stream], *, transport: bool) -> dict[str, dict[str, Any]]:
    """What the unmodified SDK of each stream's format returns from its stream helper's final result (normalized,
    with ``dump``), or the error it raised (``{"error": type name, "api_error", "status", "x-should-retry",
    "message"}``), by stream name."""
    out: dict[str, dict[str, Any]] = {}
    if not kind.endswith("async"):
        clients = _clients(kind, base_url, transport, streams)
        for stream in streams:
            final, shape = _SHAPES[stream.format]
            try:
                with _opened(clients[stream.format], stream) as events:
                    out[stream.name] = _shaped(shape, getattr(events, final)())
            except Exception as exc:
                out[stream.name] = _error(exc)
        clients["http"].close()
        return out

    async def read_all() -> None:
        clients = _clients(kind, base_url, transport, streams)
        for stream in streams:
            final, shape = _SHAPES[stream.format]
            try:
                async with _opened(clients[stream.format], stream) as events:
                    out[stream.name] = _shaped(shape, await getattr(events, final)())
            except Exception as exc:
                out[stream.name] = _error(exc)
        await clients["http"].aclose()

    asyncio.run(read_all())
    return out


_BODIES: dict[Format, tuple[str, dict[str, Any]]] = {
    "chat": ("/chat/completions", {"messages": _REQUEST}),
    "messages": ("/messages", {"max_tokens": 64, "messages": _REQUEST}),
    "responses": ("/responses", {"input": "hi"}),
}


def raw_readings(kind: Kind, base_url: str, streams: list[Stream], *, transport: bool) -> dict[str, tuple[Any, ...]]:
    """What a bare HTTP client of ``kind`` gets for each stream's streamed request: ``(status, x-should-retry,
    retry-after-ms, body, the error that ended the body or None)``, by stream name."""

    def request(stream: Stream) -> tuple[str, str, dict[str, Any]]:
        path, body = _BODIES[stream.format]
        return "POST", base_url + path, {**body, "model": stream.name, "stream": True}

    def reading(response: Any, pieces: list[bytes], error: BaseException | None) -> tuple[Any, ...]:
        headers = response.headers
        return (response.status_code, headers.get("x-should-retry"), headers.get("retry-after-ms"), b"".join(pieces),
                None if error is None else type(error).__name__)

    out: dict[str, tuple[Any, ...]] = {}
    if not kind.endswith("async"):
        with _http(kind, transport) as http:
            for stream in streams:
                method, url, body = request(stream)
                with http.stream(method, url, json=body) as response:
                    pieces: list[bytes] = []
                    try:
                        pieces.extend(response.iter_raw())
                    except Exception as exc:
                        out[stream.name] = reading(response, pieces, exc)
                    else:
                        out[stream.name] = reading(response, pieces, None)
        return out

    async def read_all() -> None:
        async with _http(kind, transport) as http:
            for stream in streams:
                method, url, body = request(stream)
                async with http.stream(method, url, json=body) as response:
                    pieces: list[bytes] = []
                    try:
                        async for piece in response.aiter_raw():
                            pieces.append(piece)
                    except Exception as exc:
                        out[stream.name] = reading(response, pieces, exc)
                    else:
                        out[stream.name] = reading(response, pieces, None)

    asyncio.run(read_all())
    return out
