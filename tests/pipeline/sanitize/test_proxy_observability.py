"""What the proxy tells its operator about streams it repaired: the repairs and the finish in the metrics and the
access log, an OpenTelemetry span per request with the GenAI attributes, and /ready while draining."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sdk_cases import MESSAGES

from pipeline.emulator import Emulator
from pipeline.proxy import Proxy

pytestmark = pytest.mark.server  # tests/tiers.py

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _tracing() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)


@pytest.fixture(scope="module")
def proxy() -> Iterator[Proxy]:
    with Emulator() as emulator, Proxy(emulator.base_url, forward_headers="x-emulator-*", log_format="json") as p:
        yield p


def _eventually(found: Callable[[], list[Any]]) -> list[Any]:
    """What ``found`` finds once it finds something (the proxy records a request just after its last byte)."""
    deadline = time.monotonic() + 5
    while not (items := found()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return items


def _seed_bug(proxy: Proxy) -> httpx.Response:
    return httpx.post(f"{proxy.base_url}/chat/completions", json={"model": "m", "messages": MESSAGES, "stream": True,
                                                          "stream_options": {"include_usage": True}},
                      headers={"x-emulator-profile": "seed-bug"})


def test_repairs_and_the_finish_reach_the_metrics_and_the_access_log(
    proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="llm_stream.proxy.access"):
        response = _seed_bug(proxy)
        (record,) = _eventually(
            lambda: [json.loads(r.getMessage()) for r in caplog.records if r.name == "llm_stream.proxy.access"]
        )
    assert response.status_code == 200
    assert record["status"] == record["upstream_status"] == 200
    assert record["finish"] == "tool_calls"
    assert record["repairs"]["tool-call-identity"] > 0  # the seed's bug: continuations repeating id, type and name
    assert record["bytes"] == len(response.content)
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert 'llm_stream_proxy_requests_total{finish="tool_calls",status="200"}' in metrics
    for kind in record["repairs"]:
        assert f'llm_stream_proxy_repairs_total{{kind="{kind}"}}' in metrics
    assert "llm_stream_proxy_upstream_duration_seconds_count 1.0" in metrics or "duration_seconds_count" in metrics


@pytest.mark.parametrize(("path", "body", "kind"), [
    ("messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MESSAGES, "stream": True},
     "block-restarted"),
    ("responses", {"model": "m", "input": "hi", "stream": True}, "item-identity"),
])
def test_messages_and_responses_repairs_reach_the_access_log_and_the_metrics(
    proxy: Proxy, caplog: pytest.LogCaptureFixture, path: str, body: dict[str, Any], kind: str
) -> None:
    profile = "seed-bug" if path == "messages" else "rotated-ids"
    with caplog.at_level(logging.INFO, logger="llm_stream.proxy.access"):
        response = httpx.post(f"{proxy.base_url}/{path}", json=body, headers={"x-emulator-profile": profile})
        (record,) = _eventually(lambda: [json.loads(r.getMessage()) for r in caplog.records
                                         if r.name == "llm_stream.proxy.access" and path in r.getMessage()])
    assert response.status_code == 200
    assert record["repairs"][kind] > 0
    assert f'llm_stream_proxy_repairs_total{{kind="{kind}"}}' in httpx.get(f"{proxy.url}/metrics").text


def test_each_forwarded_request_is_a_client_span_with_the_genai_attributes(proxy: Proxy) -> None:
    EXPORTER.clear()
    _seed_bug(proxy)
    (span,) = _eventually(lambda: list(EXPORTER.get_finished_spans()))
    assert span.name == "chat m"
    assert span.kind == trace.SpanKind.CLIENT
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "m"
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["http.response.status_code"] == 200
    assert attributes["server.address"] == "127.0.0.1"


def test_a_path_outside_the_proxys_routes_is_404_and_ready_says_draining_on_shutdown() -> None:
    with Proxy("http://127.0.0.1:9/v1") as proxy:
        assert httpx.get(f"{proxy.url}/nowhere").status_code == 404
        assert httpx.get(f"{proxy.url}/ready").json() == {"status": "ready"}
        proxy.app.draining = True
        answer = httpx.get(f"{proxy.url}/ready")
    assert answer.status_code == 503
    assert answer.json() == {"status": "draining"}
