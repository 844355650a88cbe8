"""The Gemini peer corpus for the SDK sweep (``test_gemini_sdk_sweep.py``): every stream of
``tests/corpus/gemini-peers`` (``corpus.GEMINI_PEER_STREAMS``), served by one loopback gateway that picks the stream
by the path's model (``/v1beta/models/{stem}:streamGenerateContent?alt=sse``), one chunk per event; the library's own
reading of each; and what the unmodified google-genai SDK's ``models.generate_content_stream`` returns or raises (on
``httpx2.Client``, or ``httpx2.AsyncClient`` through ``client.aio``), as comparable values.

    with gemini_gateway() as gateway:
        sdk_readings("httpx2", gateway_root(gateway), transport=True)[stream.name]  # vs library_reading(stream)
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Iterable
from typing import Any

import httpx2
from corpus import GEMINI_PEER_STREAMS
from gateway import Gateway
from google import genai
from google.genai import errors, types
from sweep_corpus import Kind, Stream, served

import pipeline
from pipeline import RetryPolicy, SanitizingTransport

__all__ = ["GEMINI_KINDS", "GEMINI_STREAMS", "gateway_root", "gemini_gateway", "library_reading", "raw_readings",
           "sdk_readings"]

GEMINI_KINDS: tuple[Kind, ...] = ("httpx2", "httpx2-async")
"""The client kinds google-genai takes here: ``HttpOptions(httpx_client=...)`` and ``httpx_async_client``."""
GEMINI_STREAMS = [Stream(path, "gemini") for path in sorted(GEMINI_PEER_STREAMS.glob("*.sse"))]
"""Every Gemini peer stream, in a fixed order; a stream's model is its file's stem."""
_MODEL = re.compile(rb"/models/([^/:?]+):streamGenerateContent")


def model(stream: Stream) -> str:
    return stream.path.stem


def gemini_gateway() -> Gateway:
    """One gateway for the whole corpus: a request's path names the stream it gets (its model)."""
    bodies = {model(stream).encode(): served(stream.path.read_bytes()) for stream in GEMINI_STREAMS}

    def route(head: bytes, body: bytes) -> bytes:
        found = _MODEL.search(head.split(b"\r\n", 1)[0])
        assert found is not None, head
        return bodies[found.group(1)]

    return Gateway(route=route)


def gateway_root(gateway: Gateway) -> str:
    return gateway.base_url.removesuffix("/v1")


# -- the library's reading ----------------------------------------------------------------------------------------


@functools.cache
def library_reading(stream: Stream) -> dict[str, Any]:
    """``pipeline.assemble`` of the stream: text, reasoning, calls ``(id, name, arguments parsed)``, the finish as
    ``(kind, code)``, and a failure's message, status and retry classification."""
    message = pipeline.assemble(pipeline.collect(stream.path.read_bytes(), format="gemini"))
    failure = message.finish.failure
    return {"text": message.text, "reasoning": message.reasoning or "",
            "calls": [(c.id, c.name, json.loads(c.arguments or "{}")) for c in message.tool_calls],
            "finish": (message.finish.kind, message.finish.code),
            "failure": None if failure is None else {"message": failure.message, "status": failure.status,
                                                     "retry": RetryPolicy().is_retryable(failure)}}


# -- the SDK's reading --------------------------------------------------------------------------------------------


def _value(enum: Any) -> Any:
    return getattr(enum, "value", enum)


_NO_BLOCK = frozenset({"", "BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED"})


def _shape(chunks: list[Any]) -> dict[str, Any]:
    """The SDK's chunks read as a caller reads them, up to the first finish it reports (candidate 0's
    ``finish_reason``, or a ``prompt_feedback.block_reason`` that blocks): candidate 0's text and thought parts
    joined, its calls ``(id, name, args)``, that finish and block; and every chunk's ``model_dump()`` (without the
    HTTP headers: date, content-length)."""
    text: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[Any, ...]] = []
    finish = blocked = None
    for chunk in chunks:
        if finish is not None or blocked is not None:
            break
        feedback = chunk.prompt_feedback
        reason = None if feedback is None else _value(feedback.block_reason)
        if reason is not None and reason not in _NO_BLOCK:
            blocked = reason
        for candidate in chunk.candidates or ():
            if (candidate.index or 0) != 0:
                continue
            for part in (candidate.content.parts if candidate.content is not None else None) or ():
                if part.function_call is not None:
                    call = part.function_call
                    calls.append((call.id, call.name, call.args))
                elif part.text:
                    (thoughts if part.thought else text).append(part.text)
            if candidate.finish_reason is not None:
                finish = _value(candidate.finish_reason)
    return {"text": "".join(text), "reasoning": "".join(thoughts), "calls": calls, "finish": finish,
            "blocked": blocked, "dump": [c.model_dump(exclude={"sdk_http_response"}, mode="json") for c in chunks]}


def _error(exc: BaseException) -> dict[str, Any]:
    """An error the SDK raised: its type, whether it is the SDK's ``APIError`` (and its ``code``), the HTTP status and
    ``x-should-retry`` when it came as an HTTP error (``http``: None for an in-band error event), its text."""
    response = getattr(exc, "response", None)
    http = response if isinstance(response, httpx2.Response) else None
    return {"error": type(exc).__name__, "api_error": isinstance(exc, errors.APIError),
            "code": getattr(exc, "code", None), "http": None if http is None else http.status_code,
            "x-should-retry": None if http is None else http.headers.get("x-should-retry"), "message": str(exc)}


def _client(kind: Kind, root: str, transport: bool) -> tuple[Any, Any]:
    given = SanitizingTransport() if transport else None
    if kind == "httpx2":
        http: Any = httpx2.Client(transport=given)
        options = types.HttpOptions(base_url=root, api_version="v1beta", httpx_client=http)
    else:
        http = httpx2.AsyncClient(transport=given)
        options = types.HttpOptions(base_url=root, api_version="v1beta", httpx_async_client=http)
    return genai.Client(api_key="gemini-test-key", http_options=options), http


def sdk_readings(kind: Kind, root: str, *, transport: bool,
                 streams: Iterable[Stream] = GEMINI_STREAMS) -> dict[str, dict[str, Any]]:
    """What ``generate_content_stream`` gives for each stream (``_shape``), or the error it raised (``_error``), by
    stream name; one SDK client and one HTTP client of ``kind`` for all."""
    out: dict[str, dict[str, Any]] = {}
    sdk, http = _client(kind, root, transport)
    if kind == "httpx2":
        for stream in streams:
            try:
                out[stream.name] = _shape(list(sdk.models.generate_content_stream(model=model(stream),
                                                                                  contents="hi")))
            except Exception as exc:
                out[stream.name] = _error(exc)
        http.close()
        return out

    async def read_all() -> None:
        for stream in streams:
            try:
                chunks = await sdk.aio.models.generate_content_stream(model=model(stream), contents="hi")
                out[stream.name] = _shape([chunk async for chunk in chunks])
            except Exception as exc:
                out[stream.name] = _error(exc)
        await http.aclose()

    asyncio.run(read_all())
    return out


def raw_readings(kind: Kind, root: str, *, transport: bool) -> dict[str, tuple[Any, ...]]:
    """What a bare ``httpx2`` client of ``kind`` gets for each stream's request: ``(status, x-should-retry,
    retry-after-ms, body, the error that ended the body or None)``, by stream name."""
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    def url(stream: Stream) -> str:
        return f"{root}/v1beta/models/{model(stream)}:streamGenerateContent?alt=sse"

    def reading(response: Any, pieces: list[bytes], error: BaseException | None) -> tuple[Any, ...]:
        headers = response.headers
        return (response.status_code, headers.get("x-should-retry"), headers.get("retry-after-ms"), b"".join(pieces),
                None if error is None else type(error).__name__)

    out: dict[str, tuple[Any, ...]] = {}
    given = SanitizingTransport() if transport else None
    if kind == "httpx2":
        with httpx2.Client(transport=given) as http:
            for stream in GEMINI_STREAMS:
                with http.stream("POST", url(stream), json=body) as response:
                    pieces: list[bytes] = []
                    try:
                        pieces.extend(response.iter_raw())
                    except Exception as exc:
                        out[stream.name] = reading(response, pieces, exc)
                    else:
                        out[stream.name] = reading(response, pieces, None)
        return out

    async def read_all() -> None:
        async with httpx2.AsyncClient(transport=given) as http:
            for stream in GEMINI_STREAMS:
                async with http.stream("POST", url(stream), json=body) as response:
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
