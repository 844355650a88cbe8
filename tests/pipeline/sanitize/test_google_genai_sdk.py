"""The unmodified google-genai SDK (on httpx2, sync and async) against a loopback server serving Gemini bytes
(``/v1beta/models/{model}:streamGenerateContent?alt=sse``), issue 32 item 4:

- served ``GeminiRepair``'s output (no registration needed): where the plain SDK silently returns a cut answer or a
  call without a name, it raises ``ServerError`` naming our code; framing it cannot read is read;
- through ``SanitizingTransport``: on every sound peer stream
  its whole result (every chunk's ``model_dump()``) equals the plain SDK's; a 429 reaches the upstream as often with
  the transport as without (the SDK's own ``retry_options``); a cut and a nameless call raise where the plain SDK
  returns; a cut before any byte is an HTTP error the SDK's retry answers;
- the SDK's retry options (``HttpRetryOptions``) key on the HTTP status alone (408, 429, 500, 502, 503, 504), never on
  ``x-should-retry``: the transport's HTTP error for a failure before the first byte has a status the SDK retries
  exactly when ``x-should-retry`` says so (by the library's classification, or the transport's own policy).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

genai = pytest.importorskip("google.genai")
httpx2 = pytest.importorskip("httpx2")

from bytes_server import BytesServer  # noqa: E402
from corpus import GEMINI_PEER_STREAMS  # noqa: E402
from google.genai import errors, types  # noqa: E402

from operators import Code, RetryPolicy  # noqa: E402
from pipeline import SanitizingTransport  # noqa: E402
from pipeline.sanitize import GeminiRepair  # noqa: E402

pytestmark = pytest.mark.server

KINDS = ("sync", "async")
CRLF = b"\r\n\r\n"
RETRY = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.02, jitter=0)
GOOD = [p for p in sorted(GEMINI_PEER_STREAMS.glob("*.sse"))
        if json.loads(p.with_suffix(".expected.json").read_text(encoding="utf-8"))["finish"]["code"] != "STREAM_CLOSED"
        and b'"error"' not in p.read_bytes()]


def event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + CRLF


def chunk(*parts: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    return event({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 4, "totalTokenCount": 4}})


CUT = chunk({"text": "The answer is"}) + chunk({"text": " forty"})
NAMELESS = chunk({"text": "Checking."}) + chunk({"functionCall": {"args": {"city": "Paris"}}}, finish="STOP")
SILENT = chunk({"text": ""})  # a cut before anything was said: found before the first byte


def repaired(body: bytes) -> bytes:
    repair = GeminiRepair()
    return repair.feed(body) + repair.close()


@pytest.fixture
def server() -> Iterator[BytesServer]:
    with BytesServer() as running:
        yield running


def client(server: BytesServer, kind: str, *, transport: bool | SanitizingTransport,
           retry: types.HttpRetryOptions | None = None) -> Any:
    given = transport if isinstance(transport, SanitizingTransport) else SanitizingTransport() if transport else None
    if kind == "sync":
        http = {"httpx_client": httpx2.Client(transport=given)}
    else:
        http = {"httpx_async_client": httpx2.AsyncClient(transport=given)}
    options = types.HttpOptions(base_url=server.base_url, api_version="v1beta", retry_options=retry, **http)
    return genai.Client(api_key="k", http_options=options)


def result(server: BytesServer, kind: str, *, transport: bool | SanitizingTransport,
           retry: types.HttpRetryOptions | None = None) -> Any:
    """Every chunk's ``model_dump()`` (without the HTTP headers: date, content-length), or the error raised."""
    sdk = client(server, kind, transport=transport, retry=retry)

    def dump(chunk: Any) -> Any:
        return chunk.model_dump(exclude={"sdk_http_response"})

    async def chunks() -> list[Any]:
        return [dump(c) async for c in await sdk.aio.models.generate_content_stream(model="m", contents="hi")]

    try:
        if kind == "sync":
            return [dump(c) for c in sdk.models.generate_content_stream(model="m", contents="hi")]
        return asyncio.run(chunks())
    except Exception as exc:
        return exc


def comparable(outcome: Any) -> Any:
    """A result as compared: the chunks, or the error's type and text (the SDK's own limits: stream 31's inline data
    is not valid base64, which the SDK refuses with or without the transport)."""
    return (type(outcome), str(outcome)) if isinstance(outcome, Exception) else outcome


# -- GeminiRepair's bytes, served to the plain SDK ------------------------------------------------------------------


@pytest.mark.parametrize(("body", "code"), [(CUT, "STREAM_CLOSED"), (NAMELESS, "MALFORMED_TOOL_CALL")])
@pytest.mark.parametrize("kind", KINDS)
def test_the_repaired_bytes_raise_where_the_plain_sdk_returns_silently(server: BytesServer, kind: str, body: bytes,
                                                                       code: str) -> None:
    server.serve(body)
    plain = result(server, kind, transport=False)
    assert isinstance(plain, list)  # the plain SDK: a short answer, or a call named None, and no error
    server.serve(repaired(body))
    raised = result(server, kind, transport=False)
    assert isinstance(raised, errors.ServerError)
    assert raised.message is not None
    assert raised.message.startswith(f"{code}: ")
    assert server.requests[-1] == "/v1beta/models/m:streamGenerateContent?alt=sse"


@pytest.mark.parametrize("kind", KINDS)
def test_framing_the_plain_sdk_cannot_read_is_read_once_repaired(server: BytesServer, kind: str) -> None:
    clean = chunk({"text": "Hi"}) + chunk({"text": "!"}, finish="STOP")
    framed = b": keep-alive" + CRLF + clean.replace(b"data: ", b"data:")
    server.serve(framed)
    assert isinstance(result(server, kind, transport=False), errors.UnknownApiResponseError)
    server.serve(repaired(framed))
    server.serve(clean)
    assert result(server, kind, transport=False) == result(server, kind, transport=False)


# -- through SanitizingTransport -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", GOOD, ids=lambda path: path.name[:2])
def test_a_sound_stream_gives_the_sdk_the_plain_result_through_the_transport(server: BytesServer, kind: str,
                                                                             path: Path) -> None:
    server.serve(path.read_bytes())
    server.serve(path.read_bytes())
    plain = result(server, kind, transport=False)
    assert comparable(result(server, kind, transport=True)) == comparable(plain)


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_reaches_the_upstream_as_often_with_the_transport_as_without(server: BytesServer, kind: str) -> None:
    error = b'{"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}}'
    counts = []
    for transport in (False, True):
        before = len(server.requests)
        for _ in range(RETRY.attempts or 0):
            server.serve(error, status=429, content_type="application/json")
        raised = result(server, kind, transport=transport, retry=RETRY)
        assert isinstance(raised, errors.ClientError)
        assert raised.code == 429
        counts.append(len(server.requests) - before)
    assert counts == [3, 3]


@pytest.mark.parametrize(("body", "code"), [(CUT, "STREAM_CLOSED"), (NAMELESS, "MALFORMED_TOOL_CALL"),
                                            (SILENT, "STREAM_CLOSED")])
@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_and_a_nameless_call_raise_through_the_transport(server: BytesServer, kind: str, body: bytes,
                                                               code: str) -> None:
    server.serve(body)
    assert isinstance(result(server, kind, transport=False), list)
    server.serve(body)
    raised = result(server, kind, transport=True)
    assert isinstance(raised, errors.ServerError)
    assert raised.message is not None
    assert raised.message.startswith(f"{code}: ")


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_before_any_byte_is_an_http_error_the_sdks_own_retry_answers(server: BytesServer, kind: str) -> None:
    good = chunk({"text": "Hi"}, finish="STOP")
    server.serve(good)
    plain = result(server, kind, transport=False)
    server.serve(SILENT)
    server.serve(good)
    before = len(server.requests)
    assert result(server, kind, transport=True, retry=RETRY) == plain
    assert len(server.requests) - before == 2  # the HTTP 503 the transport answered, then the good stream


# -- the SDK's retry options against the transport's HTTP errors ------------------------------------------------------

CHAT_CHUNK = event({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "x"}}]})


def google_error(code: int, status: str, message: str, **extra: Any) -> bytes:
    return event({"error": {"code": code, "message": message, "status": status, **extra}})


PER_DAY = {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}
BEFORE_THE_FIRST_BYTE = [  # (the upstream's body, our code, the status the SDK sees, its attempts of RETRY's 3)
    pytest.param(SILENT, Code.STREAM_CLOSED, 503, 3, id="cut"),
    pytest.param(NAMELESS.split(CRLF, 1)[1], Code.MALFORMED_TOOL_CALL, 503, 3, id="nameless-call"),
    pytest.param(google_error(503, "UNAVAILABLE", "overloaded"), Code.SERVER, 503, 3, id="unavailable"),
    pytest.param(google_error(501, "UNIMPLEMENTED", "not here"), Code.SERVER, 503, 3, id="501-retried-as-503"),
    pytest.param(google_error(429, "RESOURCE_EXHAUSTED", "per minute"), Code.RATE_LIMIT, 429, 3, id="rate-limit"),
    pytest.param(google_error(429, "RESOURCE_EXHAUSTED", "per day", **PER_DAY), Code.QUOTA, 400, 1, id="quota"),
    pytest.param(google_error(400, "INVALID_ARGUMENT", "bad"), Code.INVALID_REQUEST, 400, 1, id="invalid"),
    pytest.param(CHAT_CHUNK, Code.MALFORMED_RESPONSE, 400, 1, id="another-format"),
]


@pytest.mark.parametrize("kind", KINDS)
def test_the_sdk_reads_the_status_alone_not_x_should_retry(server: BytesServer, kind: str) -> None:
    """Why the status must carry the classification: a 503 that says ``x-should-retry: false`` is retried."""
    for _ in range(3):
        server.serve(b'{"error": {"code": 503, "message": "m", "status": "UNAVAILABLE"}}', status=503,
                     content_type="application/json")  # BytesServer sends ``x-should-retry: false``
    raised = result(server, kind, transport=False, retry=RETRY)
    assert isinstance(raised, errors.ServerError)
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("body", "code", "status", "attempts"), BEFORE_THE_FIRST_BYTE)
def test_the_sdks_retry_options_retry_a_failure_before_the_first_byte_exactly_when_we_would(
    server: BytesServer, kind: str, body: bytes, code: str, status: int, attempts: int
) -> None:
    for _ in range(3):
        server.serve(body)
    raised = result(server, kind, transport=True, retry=RETRY)
    assert isinstance(raised, errors.ServerError if status >= 500 else errors.ClientError)
    assert (raised.code, str(raised.message).split(":")[0]) == (status, code)
    assert len(server.requests) == attempts


@pytest.mark.parametrize("kind", KINDS)
def test_the_transports_own_policy_decides_the_status_too(server: BytesServer, kind: str) -> None:
    """A policy that calls ``MALFORMED_RESPONSE`` retryable, with no retry inside: the SDK retries it."""
    policy = SanitizingTransport(retry=RetryPolicy(max_retries=0, retryable_codes=(Code.MALFORMED_RESPONSE,)))
    for _ in range(3):
        server.serve(CHAT_CHUNK)
    raised = result(server, kind, transport=policy, retry=RETRY)
    assert isinstance(raised, errors.ServerError)
    assert raised.code == 503
    assert len(server.requests) == 3
