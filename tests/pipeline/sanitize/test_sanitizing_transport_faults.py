"""Retries before the first forwarded byte, in-band errors after it, ``mode="buffered"``, and what passes through."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import uuid

import httpx
import pytest

from operators import RetryPolicy
from pipeline import SanitizingTransport
from pipeline.emulator import Emulator

FAST = RetryPolicy(initial_delay_ms=1, max_delay_ms=50, max_retries=2)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def _fail_first(profile: str, then: str = "clean") -> dict[str, str]:
    return {
        "x-emulator-profile": profile,
        "x-emulator-fail-first": "1",
        "x-emulator-then": then,
        "x-emulator-key": uuid.uuid4().hex,
    }


def _payloads(text: str) -> list[object]:
    out: list[object] = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            data = block[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def _text(payloads: list[object]) -> str:
    return "".join(
        p["choices"][0]["delta"].get("content") or ""
        for p in payloads
        if isinstance(p, dict) and p.get("choices")
    )


def _post(emu: Emulator, transport: SanitizingTransport, headers: dict[str, str]) -> list[object]:
    with httpx.Client(transport=transport) as http:
        response = http.post(f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return _payloads(response.text)


def _read_until_cut(
    emu: Emulator, transport: SanitizingTransport, headers: dict[str, str]
) -> tuple[bytes, Exception | None]:
    got = b""
    with httpx.Client(transport=transport) as http, http.stream(
        "POST", f"{emu.base_url}/chat/completions", json=BODY, headers=headers
    ) as response:
        try:
            for piece in response.iter_bytes():
                got += piece
        except httpx.HTTPError as exc:
            return got, exc
    return got, None


@pytest.mark.parametrize(("profile", "code"), [("drop-mid-stream", "TRANSPORT"), ("error-midstream", "SERVER")])
def test_in_stream_mode_a_failure_after_text_ends_with_the_in_band_error_and_no_done(
    emu: Emulator, profile: str, code: str
) -> None:
    got, cut = _read_until_cut(emu, SanitizingTransport(retry_policy=FAST), _fail_first(profile))
    out = _payloads(got.decode())
    assert _text(out)
    last = out[-1]
    assert isinstance(last, dict)
    assert last["error"]["code"] == code
    assert "[DONE]" not in out
    # issue 20: a body the upstream cut stays cut (the client's own error after the in-band event)
    assert isinstance(cut, httpx.RemoteProtocolError) == (profile == "drop-mid-stream")


@pytest.mark.parametrize("profile", ["drop-mid-stream", "error-midstream"])
def test_in_buffered_mode_a_failure_after_text_is_retried_and_the_client_sees_only_the_good_attempt(
    emu: Emulator, profile: str
) -> None:
    out = _post(emu, SanitizingTransport(retry_policy=FAST, mode="buffered"), _fail_first(profile))
    assert _text(out) == "Hello from the emulator."
    assert out[-1] == "[DONE]"
    assert not any(isinstance(p, dict) and "error" in p for p in out)


def test_a_refusal_before_any_byte_is_retried_until_the_budget_ends_then_answered_as_an_http_error(
    emu: Emulator,
) -> None:
    # issue 20: a failure before any byte is an HTTP error in OpenAI's shape the client's own retry loop reads
    headers = {"x-emulator-profile": "never-identified", "x-emulator-key": uuid.uuid4().hex}
    before = len(emu.state.requests)
    with httpx.Client(transport=SanitizingTransport(retry_policy=FAST)) as http:
        response = http.post(f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
    assert len(emu.state.requests) - before == 1 + 2  # the first attempt and max_retries=2 retries
    assert response.status_code == 502
    assert response.headers["x-should-retry"] == "true"
    error = response.json()["error"]
    assert error["code"] == "MALFORMED_TOOL_CALL"
    assert error["type"] == "llm_stream_error"
    assert "never identified" in error["message"]


def test_an_html_200_passes_as_the_upstream_sent_it(emu: Emulator) -> None:
    # issue 20: a response that is not an event stream reaches the client as sent (its SDK decides)
    headers = {"x-emulator-profile": "html-200"}
    direct = httpx.post(f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
    for retry in (None, RetryPolicy(max_retries=0)):
        with httpx.Client(transport=SanitizingTransport(retry=retry)) as http:
            through = http.post(f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
        assert (through.status_code, through.headers["content-type"], through.text) == (
            direct.status_code, direct.headers["content-type"], direct.text)


def test_a_429_with_retry_after_is_waited_for_and_retried_transparently(emu: Emulator) -> None:
    headers = _fail_first("rate-limit") | {"x-emulator-retry-after": "0.05"}
    out = _post(emu, SanitizingTransport(retry_policy=RetryPolicy(max_retries=1)), headers)
    assert _text(out) == "Hello from the emulator."


def test_a_final_http_error_is_passed_on_with_its_status_headers_and_body(emu: Emulator) -> None:
    with httpx.Client(transport=SanitizingTransport(retry_policy=RetryPolicy(max_retries=0))) as http:
        through = http.post(f"{emu.base_url}/chat/completions", json=BODY, headers={"x-emulator-profile": "rate-limit"})
    direct = httpx.post(f"{emu.base_url}/chat/completions", json=BODY, headers={"x-emulator-profile": "rate-limit"})
    assert through.status_code == direct.status_code == 429
    assert through.headers["retry-after"] == direct.headers["retry-after"]
    assert through.json() == direct.json()


async def test_the_async_client_gets_the_same_retried_stream(emu: Emulator) -> None:
    async with httpx.AsyncClient(transport=SanitizingTransport(retry_policy=FAST, mode="buffered")) as http:
        response = await http.post(
            f"{emu.base_url}/chat/completions", json=BODY, headers=_fail_first("drop-mid-stream")
        )
    assert _text(_payloads(response.text)) == "Hello from the emulator."


def test_a_wrapped_transport_is_used_for_every_request(emu: Emulator) -> None:
    sent: list[str] = []

    class Counting(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.url.path)
            return super().handle_request(request)

    with httpx.Client(transport=SanitizingTransport(Counting(), retry_policy=FAST)) as http:
        http.get(f"{emu.base_url}/models")
        http.post(f"{emu.base_url}/chat/completions", json=BODY, headers=_fail_first("never-identified"))
    assert sent == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]


def test_a_sync_transport_in_an_async_client_is_refused_with_a_clear_error(emu: Emulator) -> None:
    transport = SanitizingTransport(httpx.HTTPTransport())

    async def send() -> None:
        async with httpx.AsyncClient(transport=transport) as http:
            await http.get(f"{emu.base_url}/models")

    with pytest.raises(TypeError, match=r"not an async httpx transport"):
        asyncio.run(send())


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'stream' or 'buffered'"):
        SanitizingTransport(mode="eager")  # type: ignore[arg-type]


def test_a_connection_failure_is_retried_then_raised_as_the_clients_own_error() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    tries: list[str] = []

    class Counting(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            tries.append(request.url.path)
            return super().handle_request(request)

    with (
        httpx.Client(transport=SanitizingTransport(Counting(), retry_policy=FAST)) as http,
        pytest.raises(httpx.ConnectError),
    ):
        http.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=BODY)
    assert len(tries) == 3  # the first attempt and max_retries=2 retries


def test_each_retry_and_the_final_failure_are_logged_without_the_key(
    emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-secret-0123456789abcdef"
    headers = {"x-emulator-profile": "never-identified", "x-emulator-key": uuid.uuid4().hex}
    with caplog.at_level(logging.INFO, logger="llm_stream"):
        transport = SanitizingTransport(retry_policy=FAST)
        with httpx.Client(transport=transport, headers={"authorization": f"Bearer {key}"}) as http:
            http.post(f"{emu.base_url}/chat/completions", json=BODY, headers=headers)
    records = [r for r in caplog.records if r.name == "llm_stream.sanitize"]
    assert [r.levelname for r in records] == ["INFO", "INFO", "WARNING"]
    assert "retry 1 before the first byte" in records[0].getMessage()
    assert "MALFORMED_TOOL_CALL" in records[2].getMessage()
    assert all(key not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("path", ["messages", "responses"])
def test_the_messages_and_responses_formats_pass_through_untouched(emu: Emulator, path: str) -> None:
    body = {"model": "clean-tool", "stream": True, "messages": [{"role": "user", "content": "hi"}], "input": "hi"}
    direct = httpx.post(f"{emu.base_url}/{path}", json=body)
    with httpx.Client(transport=SanitizingTransport()) as http:
        through = http.post(f"{emu.base_url}/{path}", json=body)
    assert through.status_code == direct.status_code == 200
    assert through.headers["content-type"] == direct.headers["content-type"]
    # per request: ids and timestamps
    strip = re.compile(rb'(msg|resp|call|toolu|fc|item)_emu[0-9a-zA-Z_]*|"(created|completed)(_at)?":\s*[0-9]+')
    assert strip.sub(b"ID", through.content) == strip.sub(b"ID", direct.content)
    assert b"chat.completion.chunk" not in through.content
