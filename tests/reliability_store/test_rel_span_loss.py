"""Item 3: every span that does not reach the collector or the store is counted in health."""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from benchmarks.reliability.harness import closed_port, slow_collector_loss
from causal_middleware.spans.export import BoundedBatchSpanProcessor, FailOpenExporter, build_otlp_processor
from causal_middleware.spans.health import health


def test_spans_dropped_under_a_slow_collector_are_all_counted() -> None:
    # before: 3,916 of 7,500 spans dropped with health.errors == {}
    result = slow_collector_loss(n_spans=2000, delay_s=0.3, queue=256, batch=64)
    assert result["lost"] > 0, result  # the queue did overflow
    assert result["uncounted"] == 0, result
    assert result["counted_dropped"] == result["lost"], result
    assert "otlp.queue_full" in result["counted_by_reason"]


class _Failing(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


def _emit(provider: TracerProvider, n: int) -> None:
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(f"s{i}"):
            pass


def test_export_failures_are_counted_per_span() -> None:
    exporter = _Failing()
    processor = build_otlp_processor(exporter)
    assert isinstance(processor, BatchSpanProcessor)  # still a BatchSpanProcessor for users who check
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    _emit(provider, 30)
    assert processor.force_flush()
    assert health.dropped == {"otlp.export_failed": 30}
    assert health.errors.get("export.otlp.failure") == exporter.calls
    provider.shutdown()


def test_a_down_collector_is_counted_within_the_export_timeout(monkeypatch: Any) -> None:
    from causal_middleware.spans.export import build_otlp_exporter, resolve_otlp_settings

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    exporter = build_otlp_exporter(resolve_otlp_settings(f"http://127.0.0.1:{closed_port()}", environ={}))
    processor = BoundedBatchSpanProcessor(FailOpenExporter(exporter, "export.otlp"), schedule_delay_millis=10)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    _emit(provider, 5)
    t0 = time.monotonic()
    processor.force_flush(10_000)
    assert time.monotonic() - t0 < 3.0
    assert health.dropped.get("otlp.export_failed") == 5
    provider.shutdown()


def test_spans_after_shutdown_are_counted() -> None:
    processor = BoundedBatchSpanProcessor(_Failing(), schedule_delay_millis=10)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    processor.shutdown()
    _emit(provider, 3)
    assert health.dropped.get("otlp.after_shutdown") == 3


def test_health_snapshot_is_json_ready() -> None:
    import json

    health.record_drop("store.queue_full", 4)
    snap = health.snapshot()
    assert json.loads(json.dumps(snap))["dropped"] == {"store.queue_full": 4}
    assert snap["total_dropped"] == 4 and set(snap) >= {"pid", "errors", "counts", "last_errors"}
