"""A SQLite store whose background writes wait for a gate (a busy disk), to hold runs queued,
and the tracer provider that records into it through the run span processor."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

from causal_middleware.spans.export import RunSpanProcessor
from causal_middleware.store.sqlite import SqliteSpanStore


class GatedStore(SqliteSpanStore):
    """Each ``write_batch`` waits for ``gate`` (closed at first), then records ``(spans,
    annotations)`` in ``batches`` and writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.batches: list[tuple[int, int]] = []  # (spans, annotations) per write_batch call

    def write_batch(self, records: Any, **kwargs: Any) -> None:
        self.gate.wait(10)
        self.batches.append((len(records), len(kwargs.get("annotations", ()))))
        super().write_batch(records, **kwargs)


def recording(store: SqliteSpanStore) -> tuple[TracerProvider, RunSpanProcessor]:
    processor = RunSpanProcessor(store, shutdown_exporter=False)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider, processor
