"""Where spans go: OTLP exporter construction, fail-open wrappers and the run-batching store processor.

Core module: it needs only the OpenTelemetry SDK (the OTLP exporters are imported lazily, the gRPC
one only when asked for).

* :func:`resolve_otlp_settings` / :func:`build_otlp_exporter` pick the OTLP exporter from explicit
  arguments or the standard ``OTEL_EXPORTER_OTLP_*`` environment variables (none when neither names
  an endpoint).
* :func:`build_otlp_processor` puts it behind the content policy (:mod:`causal_middleware.spans.content`),
  a fail-open wrapper and a ``BatchSpanProcessor``.
* :class:`RunSpanProcessor` hands each run's spans to a local exporter (the span store) in one
  batch, synchronously, when the run's root span ends, so the run is readable from the store as
  soon as ``invoke`` returns.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal
from urllib.parse import urlparse

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pydantic import BaseModel

from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import CaptureContent, ContentFilterExporter, Redactor, default_redactor
from causal_middleware.spans.health import health

OtlpProtocol = Literal["http/protobuf", "grpc"]
OTLP_PROTOCOLS: tuple[str, ...] = ("http/protobuf", "grpc")
HTTP_TRACES_PATH = "/v1/traces"


class OtlpSettings(BaseModel):
    """The resolved OTLP destination."""

    endpoint: str
    protocol: OtlpProtocol
    headers: dict[str, str] | None = None
    source: Literal["argument", "environment"]


def _check_protocol(protocol: str, where: str) -> OtlpProtocol:
    value = protocol.strip().lower()
    if value not in OTLP_PROTOCOLS:
        raise ValueError(f"{where} must be one of {OTLP_PROTOCOLS}, got {protocol!r}")
    return value  # type: ignore[return-value]


def _http_traces_url(endpoint: str) -> str:
    """A base URL (no path) gets the standard ``/v1/traces`` path; a URL with a path is kept."""
    parsed = urlparse(endpoint)
    if not parsed.scheme or not parsed.netloc:
        raise ValueError(f"OTLP endpoint must be a URL like http://host:4318, got {endpoint!r}")
    if parsed.path in ("", "/"):
        return endpoint.rstrip("/") + HTTP_TRACES_PATH
    return endpoint


def resolve_otlp_settings(
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> OtlpSettings | None:
    """Decide whether and where to export over OTLP.

    Explicit ``endpoint`` wins; otherwise ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is) or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` appended for HTTP). The protocol is ``protocol``,
    else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else
    ``http/protobuf``. Returns None when no endpoint is named anywhere. Headers not given here are
    read by the exporter itself from ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``.
    """
    env = os.environ if environ is None else environ
    if protocol is not None:
        proto = _check_protocol(protocol, "otlp_protocol")
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        proto = _check_protocol(
            env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"], "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
        )
    elif env.get("OTEL_EXPORTER_OTLP_PROTOCOL"):
        proto = _check_protocol(env["OTEL_EXPORTER_OTLP_PROTOCOL"], "OTEL_EXPORTER_OTLP_PROTOCOL")
    else:
        proto = "http/protobuf"
    hdrs = dict(headers) if headers is not None else None

    if endpoint is not None:
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise ValueError(f"otlp_endpoint must be a non-empty URL string, got {endpoint!r}")
        url = _http_traces_url(endpoint.strip()) if proto == "http/protobuf" else endpoint.strip()
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="argument")
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="environment")
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        base = env["OTEL_EXPORTER_OTLP_ENDPOINT"].strip()
        url = base.rstrip("/") + HTTP_TRACES_PATH if proto == "http/protobuf" else base
        return OtlpSettings(endpoint=url, protocol=proto, headers=hdrs, source="environment")
    return None


def build_otlp_exporter(settings: OtlpSettings) -> SpanExporter:
    """The OTel SDK's OTLP span exporter for ``settings`` (HTTP/protobuf or gRPC)."""
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=settings.endpoint, headers=settings.headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=settings.endpoint, headers=settings.headers)


class FailOpenExporter(SpanExporter):
    """Never lets an exporter's exception out: it is logged and counted in ``health`` under ``site``.
    A ``FAILURE`` result is counted too (the OTLP exporters report unreachable endpoints that way)."""

    def __init__(self, inner: SpanExporter, site: str) -> None:
        self.inner = inner
        self.site = site

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:
            health.record_error(self.site, exc)
            return SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            health.record_error(f"{self.site}.failure")
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:
            health.record_error(f"{self.site}.shutdown", exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception as exc:
            health.record_error(f"{self.site}.force_flush", exc)
            return False


def build_otlp_processor(
    exporter: SpanExporter,
    *,
    capture_content: CaptureContent = "full",
    max_attribute_length: int = 4096,
    redact: Redactor | None = default_redactor,
) -> BatchSpanProcessor:
    """``BatchSpanProcessor`` > fail-open > content policy + redaction > ``exporter``."""
    filtered = ContentFilterExporter(
        exporter, capture_content=capture_content, max_attribute_length=max_attribute_length, redact=redact
    )
    return BatchSpanProcessor(FailOpenExporter(filtered, "export.otlp"))


def is_run_root(span: ReadableSpan) -> bool:
    """A run span as the instrumentation emits it: a root span with ``causal.span.type=run``."""
    return span.parent is None and (span.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == "run"


class RunSpanProcessor(SpanProcessor):
    """Buffers the spans of each run (trace whose root is a run span) and exports them in one
    batch on the thread that ends the run span, so ``store.get_trajectory(run_id)`` works right
    after the run returns. Spans of traces that are not runs are ignored; spans of a run that end
    after it (rare: background work) are exported on their own. Failures are counted in ``health``.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        is_root: Callable[[ReadableSpan], bool] = is_run_root,
        max_buffered_spans: int = 10_000,
        shutdown_exporter: bool = True,
        site: str = "store.write",
    ) -> None:
        self.exporter = exporter
        self._is_root = is_root
        self._max = max_buffered_spans
        self._shutdown_exporter = shutdown_exporter
        self._site = site
        self._lock = threading.Lock()
        self._open: dict[int, list[ReadableSpan]] = {}
        self._recent: OrderedDict[int, None] = OrderedDict()
        self._closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            if not self._closed and self._is_root(span):
                with self._lock:
                    self._open[span.context.trace_id] = []
        except Exception as exc:
            health.record_error(f"{self._site}.on_start", exc)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            trace_id = span.context.trace_id
            batch: list[ReadableSpan] | None = None
            with self._lock:
                buf = self._open.get(trace_id)
                if buf is None:
                    if trace_id in self._recent:
                        batch = [span]
                else:
                    buf.append(span)
                    if span.parent is None and self._is_root(span):
                        batch = self._open.pop(trace_id)
                        self._recent[trace_id] = None
                        if len(self._recent) > 1024:
                            self._recent.popitem(last=False)
                    elif len(buf) >= self._max:
                        batch = buf[:]
                        buf.clear()
            if batch:
                self._export(batch)
        except Exception as exc:
            health.record_error(f"{self._site}.on_end", exc)

    def _export(self, batch: list[ReadableSpan]) -> None:
        try:
            result = self.exporter.export(batch)
        except Exception as exc:
            health.record_error(self._site, exc)
            return
        if result is SpanExportResult.FAILURE:
            health.record_error(f"{self._site}.failure")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Exports what is buffered for runs still open (partial runs) and flushes the exporter."""
        with self._lock:
            pending = [spans for spans in self._open.values() if spans]
            for spans in self._open.values():
                spans.clear()
        for spans in pending:
            self._export(spans)
        try:
            return bool(self.exporter.force_flush(timeout_millis))
        except Exception as exc:
            health.record_error(f"{self._site}.force_flush", exc)
            return False

    def shutdown(self) -> None:
        if self._closed:
            return
        self.force_flush()
        self._closed = True
        if self._shutdown_exporter:
            try:
                self.exporter.shutdown()
            except Exception as exc:
                health.record_error(f"{self._site}.shutdown", exc)
