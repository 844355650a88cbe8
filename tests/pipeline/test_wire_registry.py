"""The registry is the only place that knows a format: a made-up fourth ``WireFormat`` record (a path template that
carries the model, a stream asked for by the URL, a key header of its own) is registered in this test only, by
building the lookups over a list of records, and the transport's choice of streamed format, the key it redacts, the
proxy's header allow-list, client keys, upstream key header and span names, the log filter, and the emulator's route
and stream check follow the record with no other change."""

from __future__ import annotations

import logging
from typing import Any, cast

import attrs
import httpx
import pytest

from pipeline import SanitizingTransport
from pipeline._logging import get_logger
from pipeline.formats import WIRE_FORMATS, WIRE_REGISTRY, WireFormat, WireRegistry, chat_request, url_says_stream
from pipeline.proxy import _metrics as _proxy_metrics
from pipeline.proxy._headers import Keys, forwarded_headers
from pipeline.sanitize import _formats
from pipeline.sanitize._formats import STREAM_FORMATS, StreamFormat, streamed_format

FAKE = WireFormat(
    cast(Any, "fake"),
    "a made-up format",
    "/v9/models/{model}:streamIt",
    chat_request,
    streams=url_says_stream(":streamIt", {"alt": "sse"}),
    key_header="x-fake-key",
    forward_headers=("fake-version",),
    operation="generate_content",
    secret_headers=("x-fake-session",),
)
REGISTRY = WireRegistry([*WIRE_FORMATS.values(), FAKE])
KEY = "fake-key-0123456789"
PATH = "/v9/models/gem-1:streamIt"
STREAM = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
          b'"delta":{"role":"assistant","content":"your key is ' + KEY.encode() + b'"},"finish_reason":null}]}\n\n'
          b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
          b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake format registered with the sanitizer: the registry's lookups, and its repairer (chat's)."""
    chat = STREAM_FORMATS[0]
    monkeypatch.setattr(_formats, "WIRE_REGISTRY", REGISTRY)
    monkeypatch.setattr(_formats, "STREAM_FORMATS",
                        (*STREAM_FORMATS, StreamFormat("fake", FAKE.path, chat.make, chat.error_body)))
    monkeypatch.setattr(_proxy_metrics, "WIRE_REGISTRY", REGISTRY)


def test_a_path_template_matches_the_model_as_one_segment_and_fills_it_in() -> None:
    assert REGISTRY.by_path("/gateway" + PATH) is FAKE
    assert REGISTRY.by_path(PATH + "/") is FAKE
    assert REGISTRY.by_path("/v9/models/a/b:streamIt") is None
    assert REGISTRY.by_path("/v9/models/:streamIt") is None
    assert FAKE.url_path("gem-1") == PATH
    with pytest.raises(ValueError, match="carries the model"):
        FAKE.url_path()


def test_the_three_formats_keep_their_fixed_paths_and_body_stream_test() -> None:
    for name, record in WIRE_FORMATS.items():
        if name == "gemini":  # streams by its URL, under a {model} path (decision 0071)
            continue
        assert record.url_path() == record.path
        assert REGISTRY.streamed("POST", f"/v1{record.path}", "", b'{"stream": true}') is record, name
        assert REGISTRY.streamed("POST", f"/v1{record.path}", "alt=sse", b'{"stream": false}') is None
        assert REGISTRY.streamed("GET", f"/v1{record.path}", "", b'{"stream": true}') is None


def test_the_made_up_format_streams_by_its_url_not_its_body() -> None:
    assert REGISTRY.streamed("POST", PATH, "alt=sse", b"{}") is FAKE
    assert REGISTRY.streamed("POST", PATH, "key=x&alt=sse", b"not json") is FAKE
    assert REGISTRY.streamed("POST", PATH, "", b'{"stream": true}') is None
    assert REGISTRY.streamed("POST", PATH, "alt=json", b"{}") is None
    assert WIRE_REGISTRY.streamed("POST", PATH, "alt=sse", b"{}") is None  # unknown to the real registry


def test_the_sanitizers_choice_of_format_follows_the_record(registered: None) -> None:
    found = streamed_format("POST", PATH, b"{}", "alt=sse")
    chat = streamed_format("POST", "/v1/chat/completions", b'{"stream": true}')

    assert (found.name if found else None, chat.name if chat else None) == ("fake", "chat")
    assert streamed_format("POST", PATH, b'{"stream": true}') is None


def _through_transport(headers: dict[str, str], query: str) -> bytes:
    upstream = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM))
    with httpx.Client(transport=SanitizingTransport(upstream)) as client:
        return client.post(f"http://127.0.0.1:9{PATH}?{query}", content=b"{}", headers=headers).content


def test_the_transport_repairs_the_made_up_format_and_redacts_the_key_from_its_own_header(registered: None) -> None:
    body = _through_transport({"x-fake-key": KEY}, "alt=sse")

    assert KEY.encode() not in body
    assert b"your key is [redacted]" in body


def test_without_the_record_the_same_request_passes_untouched() -> None:
    assert _through_transport({"x-fake-key": KEY}, "alt=sse") == STREAM


def test_the_key_is_read_from_every_key_header_a_record_names() -> None:
    def get(headers: dict[str, str]) -> Any:
        return headers.get

    assert REGISTRY.key_headers == ("authorization", "x-api-key", "x-goog-api-key", "x-fake-key")
    assert REGISTRY.api_key(get({"x-fake-key": f" {KEY} "})) == KEY
    assert REGISTRY.api_key(get({"authorization": "Bearer b-key", "x-fake-key": KEY})) == "b-key"
    assert WIRE_REGISTRY.api_key(get({"x-fake-key": KEY})) is None
    assert WIRE_REGISTRY.api_key(get({"authorization": "Basic x", "x-api-key": "a-key"})) == "a-key"


def _pairs(**headers: str) -> list[tuple[bytes, bytes]]:
    return [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]


def test_the_proxy_forwards_the_records_own_headers_and_never_its_secret_ones() -> None:
    client = _pairs(x_fake_key=KEY, x_fake_session="s-0123456789", fake_version="3", accept="*/*")
    keys = Keys(formats=REGISTRY)

    forwarded = forwarded_headers(client, keys=keys, extra=(), relative="v9/models/gem-1:streamIt")
    refused = forwarded_headers(client, keys=Keys(client=("c-0123456789",), formats=REGISTRY), extra=(),
                                relative="v9/models/gem-1:streamIt")
    without = forwarded_headers(client, keys=Keys(), extra=(), relative="v9/models/gem-1:streamIt")

    assert forwarded == [("x-fake-key", KEY), ("x-fake-session", "s-0123456789"), ("fake-version", "3"),
                         ("accept", "*/*")]  # no proxy keys: the client's credentials go as they came
    assert refused == [("fake-version", "3"), ("accept", "*/*")]
    assert without == [("accept", "*/*")]  # unknown to the real registry: not on the allow-list


def test_the_proxys_upstream_key_goes_in_the_records_key_header() -> None:
    keys = Keys(upstream="up-0123456789", formats=REGISTRY)

    fake = forwarded_headers(_pairs(x_fake_key=KEY), keys=keys, extra=(), relative="v9/models/gem-1:streamIt")
    messages = forwarded_headers([], keys=keys, extra=(), relative="messages/count_tokens")
    chat = forwarded_headers([], keys=keys, extra=(), relative="chat/completions")

    assert fake == [("x-fake-key", "up-0123456789")]
    assert messages == [("x-api-key", "up-0123456789")]
    assert chat == [("authorization", "Bearer up-0123456789")]
    assert Keys(upstream="up-0123456789").formats.upstream_key("v9/x", "k") == ("authorization", "Bearer k")


def test_the_proxys_upstream_key_follows_a_record_whose_template_ends_a_longer_path() -> None:
    keys = Keys(upstream="up-0123456789", formats=REGISTRY)  # Vertex AI: the template ends a project's path
    vertex = "projects/p/locations/l/publishers/google/v9/models/gem-1:streamIt"

    assert forwarded_headers([], keys=keys, extra=(), relative=vertex) == [("x-fake-key", "up-0123456789")]
    assert forwarded_headers([], keys=keys, extra=(), relative=vertex + "?alt=sse") == [("x-fake-key", "up-0123456789")]
    assert forwarded_headers([], keys=keys, extra=(), relative="projects/p/chat") == [
        ("authorization", "Bearer up-0123456789")]


def test_the_proxy_admits_a_client_key_in_the_records_key_header() -> None:
    presented = _pairs(x_fake_key="c-0123456789")

    assert Keys(client=("c-0123456789",), formats=REGISTRY).admits(presented)
    assert not Keys(client=("c-0123456789",)).admits(presented)


def test_the_proxys_span_names_the_records_endpoint_by_its_operation(registered: None) -> None:
    assert _proxy_metrics.operation_of("v9/models/gem-1:streamIt") == "generate_content"
    assert _proxy_metrics.operation_of("chat/completions") == "chat"
    assert _proxy_metrics.operation_of("embeddings") == "embeddings"
    assert _proxy_metrics.operation_of("x/v9/models/gem-1:streamIt") is None


@pytest.mark.parametrize("quoted", [
    "x-fake-key: {key}", "'x-fake-key': '{key}'", "(b'x-fake-key', b'{key}')", '"X-Fake-Session": "{key}"',
    "x-api-key={key}", "authorization: Bearer {key}",
])
def test_the_log_filter_redacts_the_value_of_every_key_header_a_record_names(
    quoted: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "never-registered-0123456789"  # not registered with register_secret: only the header names it
    caplog.set_level(logging.INFO, logger="llm_stream")
    assert REGISTRY.secret_headers >= {"x-fake-key", "x-fake-session"}

    get_logger("transport").info("sent %s", quoted.format(key=secret))

    (record,) = [r for r in caplog.records if r.name == "llm_stream.transport"]
    assert secret not in record.getMessage()
    assert "[redacted]" in record.getMessage()


def test_the_log_filter_keeps_a_short_value_and_other_headers() -> None:
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logger = get_logger("transport")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("authorization: failed; x-request-id: 0123456789abcdef")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)

    assert records == ["authorization: failed; x-request-id: 0123456789abcdef"]


async def test_the_emulator_serves_a_records_model_path_and_its_url_stream_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("starlette")
    from pipeline.emulator import _api_format as emulated  # the records ApiFormat reads
    from pipeline.emulator import create_app

    messages = attrs.evolve(WIRE_FORMATS["messages"], path=FAKE.path, streams=FAKE.streams)
    monkeypatch.setattr(emulated, "WIRE_FORMATS", {**WIRE_FORMATS, "messages": messages})
    body = {"model": "clean", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        streamed = await client.post(f"/v1{PATH}?alt=sse", json=body)
        refused = await client.post(f"/v1{PATH}", json={**body, "stream": True})
        gone = await client.post("/v1/messages", json={**body, "stream": True})

    assert (streamed.status_code, streamed.headers["content-type"].split(";")[0]) == (200, "text/event-stream")
    assert b"event: message_stop" in streamed.content
    assert (refused.status_code, refused.json()["error"]["type"]) == (400, "invalid_request_error")
    assert gone.status_code == 404


def test_the_upstream_key_goes_by_endpoint_family_so_openais_models_stay_bearer() -> None:
    assert WIRE_REGISTRY.upstream_key_header("models") == "authorization"  # OpenAI's model list
    assert WIRE_REGISTRY.upstream_key_header("models/gpt-4o") == "authorization"
    assert WIRE_REGISTRY.upstream_key_header("models/gemini-2.5-flash:countTokens") == "x-goog-api-key"
    assert WIRE_REGISTRY.upstream_key_header("models/gemini-2.5-flash:streamGenerateContent?alt=sse") == (
        "x-goog-api-key")
    assert WIRE_REGISTRY.upstream_key_header("messages/count_tokens") == "x-api-key"
    assert WIRE_REGISTRY.upstream_key_header("messagesx") == "authorization"
