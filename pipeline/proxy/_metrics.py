"""The proxy's Prometheus metrics (``GET /metrics``) and, when ``opentelemetry-api`` is installed, one span per
forwarded request following the GenAI semantic conventions where they apply (docs/proxy.md)."""

from __future__ import annotations

from typing import Any

import msgspec
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from operators import LlmStreamError
from pipeline.formats import WIRE_REGISTRY

from ._log import Report

try:  # optional: spans only when the application has OpenTelemetry
    from opentelemetry import trace as _trace
    from opentelemetry.propagate import inject as _inject
except ImportError:  # pragma: no cover - exercised where opentelemetry-api is not installed
    _trace = None  # type: ignore[assignment]
    _inject = None  # type: ignore[assignment]

__all__ = ["Metrics", "TooDeep", "Tracing", "model_of", "operation_of"]

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class Metrics:
    """The proxy's Prometheus metrics, in a registry of its own (so two proxies in one process do not share)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        prefix = "llm_stream_proxy_"
        self.requests = Counter(
            prefix + "requests", "Requests answered, by HTTP status and finish (stop, tool_calls, length, a code, "
            "or none for a response that was not a sanitized stream)", ["status", "finish"], registry=self.registry)
        self.repairs = Counter(
            prefix + "repairs", "Repairs made to streamed responses, by anomaly kind", ["kind"], registry=self.registry)
        self.refused = Counter(
            prefix + "streams_refused", "Requests refused before anything went upstream, by reason", ["reason"],
            registry=self.registry)
        self.cut = Counter(
            prefix + "streams_cut", "Responses cut before their end, by reason (client, deadline, upstream, shutdown, "
            "error)",
            ["reason"], registry=self.registry)
        self.ttfb = Histogram(
            prefix + "upstream_ttfb_seconds", "Time from sending a request upstream to its first (clean) byte",
            buckets=_SECONDS, registry=self.registry)
        self.duration = Histogram(
            prefix + "upstream_duration_seconds", "Time from sending a request upstream to the end of its response",
            buckets=_SECONDS, registry=self.registry)
        self.in_flight = Gauge(
            prefix + "streams_in_flight", "Requests in flight to the upstream", registry=self.registry)

    def record(self, report: Report) -> None:
        self.requests.labels(str(report.status), report.finish or "none").inc()
        for kind, count in report.repairs.items():
            self.repairs.labels(kind).inc(count)
        if report.cut:
            self.cut.labels(report.cut).inc()
        if report.ttfb_s is not None:
            self.ttfb.observe(report.ttfb_s)
        if report.upstream_s is not None:
            self.duration.observe(report.upstream_s)


_OPERATIONS = {"completions": "text_completion", "embeddings": "embeddings"}
"""The GenAI operation of the endpoints that are no wire format's; a format's is its record's ``operation``."""


def operation_of(relative_path: str) -> str | None:
    """The ``gen_ai.operation.name`` of a request to ``relative_path``: its record's ``operation`` for a registered
    format's endpoint (``WIRE_REGISTRY.by_endpoint``), else by ``_OPERATIONS``."""
    record = WIRE_REGISTRY.by_endpoint(relative_path)
    return record.operation if record is not None else _OPERATIONS.get(relative_path.strip("/"))


class _Model(msgspec.Struct):
    model: str | None = None


class TooDeep(LlmStreamError, ValueError):
    """A request body whose JSON nests deeper than a decoder reads (about 1,000 levels): no API takes one."""


def model_of(body: bytes) -> str | None:
    """The request's ``model``, if its body is a JSON object naming one; ``TooDeep`` when its JSON nests too deep to
    decode (the transport's own reading of the body would fail the same way)."""
    try:
        model = msgspec.json.decode(body, type=_Model).model
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    except RecursionError:
        raise TooDeep("the request body's JSON nests too deep to read") from None
    return model


def _model_or_none(body: bytes) -> str | None:
    try:
        return model_of(body)
    except TooDeep:
        return None


class Tracing:
    """One OpenTelemetry span per forwarded request, when ``opentelemetry-api`` is installed (no-op otherwise, and
    whenever no tracer provider is configured)."""

    def __init__(self, server_address: str, server_port: int | None) -> None:
        self._tracer = _trace.get_tracer("llm_stream.proxy") if _trace is not None else None
        self._server = {"server.address": server_address}
        if server_port is not None:
            self._server["server.port"] = server_port  # type: ignore[assignment]

    def start(self, method: str, relative_path: str, body: bytes, headers: list[tuple[str, str]]) -> Any:
        """The span for a request about to go upstream (``None`` without a tracer); its context is injected into
        ``headers`` (``traceparent``) so the upstream's spans join the trace."""
        if self._tracer is None:
            return None
        operation = operation_of(relative_path)
        attributes: dict[str, Any] = {"http.request.method": method, **self._server}
        if operation is not None:
            model = _model_or_none(body)
            attributes["gen_ai.operation.name"] = operation
            if model:
                attributes["gen_ai.request.model"] = model
            name = f"{operation} {model}" if model else operation
        else:
            name = method
        span = self._tracer.start_span(name, kind=_trace.SpanKind.CLIENT, attributes=attributes)
        if span.is_recording() and _inject is not None:
            carrier: dict[str, str] = {}
            _inject(carrier, context=_trace.set_span_in_context(span))
            headers[:] = [(k, v) for k, v in headers if k not in carrier] + list(carrier.items())
        return span

    @staticmethod
    def end(span: Any, report: Report) -> None:
        if span is None:
            return
        report.settle()
        if report.upstream_status is not None:
            span.set_attribute("http.response.status_code", report.upstream_status)
        if report.finish is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [report.finish])
        error = report.cut or (report.finish if report.finish and report.finish.isupper() else None)
        if error is None and report.status >= 500:
            error = str(report.status)
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(_trace.Status(_trace.StatusCode.ERROR))
        span.end()
