"""``ChatClient(api="gemini")`` against the emulator's Gemini profiles over loopback: the URL
(``{base}/models/{model}:streamGenerateContent?alt=sse``), the key in ``x-goog-api-key`` only, the body from the
same request options as every format, a key given in the base URL (``?key=``, Google's documented style) never in a
URL, a log line, an error or a chunk, and the client's own retry of Gemini's retryable failures."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from operators import Finish, Retry, RetryPolicy
from pipeline import _secrets
from pipeline.client import ChatClient
from pipeline.emulator import Emulator
from pipeline.emulator.gemini._profiles import ARGS

pytestmark = pytest.mark.server  # tests/tiers.py

KEY = "AIzaSyGemLive-Qx7Vb3Zq8uLw4Jk9"
FAST = RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=1000)
ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function",
          "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": CITY}}]


@pytest.fixture(autouse=True)
def _forget_keys() -> Iterator[None]:
    """The key registered by a ``?key=`` URL is forgotten after each test (tests/pipeline/client/test_url_key.py)."""
    saved = dict(_secrets._patterns)
    yield
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


def base(emu: Emulator, query: str = "") -> str:
    return emu.base_url.removesuffix("/v1") + "/v1beta" + query


def recording(sent: list[httpx.Request]) -> httpx.AsyncClient:
    async def hook(request: httpx.Request) -> None:
        sent.append(request)

    return httpx.AsyncClient(event_hooks={"request": [hook]})


async def chunks_of(client: ChatClient, messages: list[dict[str, Any]] = ASK, **request: Any) -> list[Any]:
    return [chunk async for chunk in client.stream(messages, anomalies=True, **request)]


async def test_the_request_goes_to_the_models_stream_url_with_the_key_in_x_goog_api_key_only() -> None:
    sent: list[httpx.Request] = []
    async with Emulator() as emu, recording(sent) as http:
        client = ChatClient(base(emu), model="emulator-gemini-clean", api="gemini", api_key=KEY, http_client=http)
        chunks = await chunks_of(client, tools=TOOLS, tool_choice="required", max_tokens=64, temperature=0.2,
                                 stop="END")
        (recorded,) = emu.state.requests

    (request,) = sent
    assert str(request.url) == f"{base(emu)}/models/emulator-gemini-clean:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers
    assert isinstance(chunks[-1], Finish)
    assert chunks[-1].reason.kind == "stop"
    assert recorded.body == {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather in a city.",
                                             "parametersJsonSchema": CITY}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0.2, "stopSequences": ["END"]},
    }
    assert "x-goog-api-key" not in recorded.headers  # the emulator keeps no credential either


@pytest.mark.parametrize(
    ("model", "headers"),
    [
        ("emulator-gemini-clean", {}),
        ("emulator-gemini-rate-limit", {"x-emulator-fail-first": "1", "x-emulator-retry-after": "0.01"}),
        ("emulator-gemini-error-midstream", {}),  # in-band 503, retried until the policy gives up
        ("emulator-gemini-no-such-profile", {}),  # 404 NOT_FOUND in Google's shape
    ],
)
async def test_a_key_in_the_base_url_is_in_no_url_log_line_error_or_chunk(
    caplog: pytest.LogCaptureFixture, model: str, headers: dict[str, str]
) -> None:
    caplog.set_level(logging.DEBUG)
    sent: list[httpx.Request] = []
    async with Emulator() as emu, recording(sent) as http:
        client = ChatClient(base(emu, f"?key={KEY}"), model=model, api="gemini", http_client=http, headers=headers,
                            retry_policy=FAST)
        chunks = await chunks_of(client)
        shown = repr(client) + repr(client.config)

    assert sent
    assert all(KEY not in str(r.url) and r.headers["x-goog-api-key"] == KEY for r in sent)
    assert all(str(r.url).endswith(":streamGenerateContent?alt=sse") for r in sent)
    text = "\n".join(chunk.to_json() for chunk in chunks)
    log = "\n".join(logging.Formatter().format(record) for record in caplog.records)
    assert any("HTTP Request: POST" in record.getMessage() for record in caplog.records)  # httpx logs the URL
    for where in (text, log, shown):
        assert KEY not in where
        assert KEY[:12] not in where


async def test_a_key_a_server_echoes_in_a_google_error_is_redacted_from_the_chunk_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    def answer(request: httpx.Request) -> httpx.Response:
        key = request.headers["x-goog-api-key"]
        error = {"error": {"code": 400, "message": f"API key not valid: {key}. Please pass a valid API key.",
                           "status": "INVALID_ARGUMENT",
                           "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                        "reason": "API_KEY_INVALID", "metadata": {"key": key}}]}}
        body = httpx.ByteStream(json.dumps(error).encode())
        return httpx.Response(400, headers={"content-type": "application/json; charset=UTF-8"}, stream=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        client = ChatClient(f"https://generativelanguage.googleapis.com/v1beta?key={KEY}", model="gemini-2.5-flash",
                            api="gemini", http_client=http)
        chunks = await chunks_of(client)

    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.failure is not None
    assert finish.reason.failure.code == "AUTH"
    text = "\n".join(chunk.to_json() for chunk in chunks)
    log = "\n".join(logging.Formatter().format(record) for record in caplog.records)
    assert "API key not valid" in text
    assert KEY[:12] not in text
    assert KEY[:12] not in log


@pytest.mark.parametrize(
    ("profile", "code"), [("malformed-function-call", "MALFORMED_TOOL_CALL"), ("error-midstream", "SERVER")]
)
async def test_a_retryable_gemini_failure_is_retried_by_the_clients_policy(profile: str, code: str) -> None:
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean-tool"}
    async with Emulator() as emu:
        client = ChatClient(base(emu), model=f"emulator-gemini-{profile}", api="gemini", headers=headers,
                            retry_policy=FAST)
        message = await client.complete(ASK, tools=TOOLS)
        profiles = [r.profile for r in emu.state.requests]

    assert profiles == [profile, "clean-tool"]
    assert message.retries == 1
    assert message.finish.kind == "tool-calls"
    (call,) = message.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("gemini-made-0", "get_weather", ARGS)


async def test_retry_false_leaves_a_malformed_function_call_as_the_answer() -> None:
    async with Emulator() as emu:
        client = ChatClient(base(emu), model="emulator-gemini-malformed-function-call", api="gemini")
        chunks = await chunks_of(client, retry=False)

    assert not any(isinstance(chunk, Retry) for chunk in chunks)
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.failure is not None
    assert finish.reason.failure.code == "MALFORMED_TOOL_CALL"
    assert len(emu.state.requests) == 1
