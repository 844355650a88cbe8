"""A ``WireFormat`` record says the query its requests carry (``query``: Gemini's ``alt=sse``) and whether the key
also goes as ``Authorization: Bearer`` (``bearer``: not to Google, which reads that header as an OAuth token); the
client follows the record. A made-up record in the shape of Gemini's stands in for the messages one (so any record
with a query and without Bearer is followed, not only the registered Gemini one), as
tests/pipeline/test_wire_registry.py does for the emulator."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import httpx
import pytest
from reactivex import operators as ops

from pipeline.client import ChatClient, ClientConfig
from pipeline.client import _client as client_module
from pipeline.client import _config as config_module
from pipeline.formats import WIRE_FORMATS, WireFormat, chat_request, gemini_request, url_says_stream

KEY = "AIza-url-Kp2Ht9Zs"
GEMINI_LIKE = attrs.evolve(
    WIRE_FORMATS["messages"],
    path="/models/{model}:streamGenerateContent",
    build=gemini_request,
    headers={},
    streams=url_says_stream(":streamGenerateContent", {"alt": "sse"}),
    key_header="x-goog-api-key",
    query={"alt": "sse"},
    bearer=False,
)


@pytest.fixture
def gemini_like(monkeypatch: pytest.MonkeyPatch) -> None:
    """The made-up record in place of the messages one, for the client's config and headers."""
    formats = {**WIRE_FORMATS, "messages": GEMINI_LIKE}
    monkeypatch.setattr(config_module, "WIRE_FORMATS", formats)
    monkeypatch.setattr(client_module, "WIRE_FORMATS", formats)


def test_a_record_without_a_query_posts_to_its_path_alone() -> None:
    for record in WIRE_FORMATS.values():
        if record.name == "gemini":  # the one registered format spoken with a query and without Bearer
            assert (dict(record.query), record.bearer) == ({"alt": "sse"}, False)
            assert record.target("m") == "/models/m:streamGenerateContent?alt=sse"
            continue
        assert (dict(record.query), record.bearer) == ({}, True)
        assert record.target("m") == record.url_path("m")


def test_a_records_query_follows_its_filled_path() -> None:
    record = WireFormat("chat", "t", "/models/{model}:go", chat_request, query={"alt": "sse", "x": "a b"})

    assert record.target("gem-1") == "/models/gem-1:go?alt=sse&x=a+b"
    with pytest.raises(TypeError):
        record.query["alt"] = "json"  # type: ignore[index]


def test_a_record_that_sends_no_bearer_key_must_name_another_key_header() -> None:
    with pytest.raises(ValueError, match="key_header must be another header"):
        WireFormat("chat", "t", "/x", chat_request, bearer=False)
    assert WireFormat("chat", "t", "/x", chat_request, key_header="x-goog-api-key", bearer=False).key_headers == (
        "x-goog-api-key",)


def test_the_client_url_carries_the_records_query(gemini_like: None) -> None:
    config = ClientConfig(base_url="https://generativelanguage.googleapis.com/v1beta", model="gemini-2.5-flash",
                          api="messages")

    assert config.url == ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
                          ":streamGenerateContent?alt=sse")


async def _sent(api: Any, api_key: str | None = KEY, headers: dict[str, str] | None = None) -> httpx.Request:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=httpx.ByteStream(b"data: {}\n\n"))

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    async with http, ChatClient("http://127.0.0.1:9/v1beta", model="gem-1", api_key=api_key, api=api,
                                http_client=http, headers=headers) as client:
        body = client.request_body([{"role": "user", "content": "hi"}])
        async with asyncio.timeout(10):
            await client.response(body).pipe(ops.to_list())
    (request,) = seen
    return request


async def test_a_record_without_bearer_sends_the_key_only_in_its_key_header(gemini_like: None) -> None:
    request = await _sent("messages")

    assert str(request.url) == "http://127.0.0.1:9/v1beta/models/gem-1:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers
    assert KEY not in str(request.url)
    assert b'"contents"' in request.content
    assert b'"stream"' not in request.content


async def test_a_record_without_bearer_keeps_an_authorization_header_the_caller_gives(gemini_like: None) -> None:
    request = await _sent("messages", api_key=None, headers={"Authorization": "Bearer oauth-token"})

    assert request.headers["authorization"] == "Bearer oauth-token"
    assert "x-goog-api-key" not in request.headers


async def test_the_other_formats_still_send_the_bearer_key() -> None:
    chat = await _sent("chat")
    messages = await _sent("messages")

    assert (str(chat.url), chat.headers["authorization"]) == ("http://127.0.0.1:9/v1beta/chat/completions",
                                                              f"Bearer {KEY}")
    assert (messages.headers["authorization"], messages.headers["x-api-key"]) == (f"Bearer {KEY}", KEY)
