"""Fixtures for the instrumentation tests: instrument a graph onto the shared in-memory exporter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from instrument_spans import SpanTree
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware import InstrumentedGraph, instrument


@pytest.fixture(autouse=True)
def _no_otlp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's OTLP environment must not make tests export anywhere."""
    for var in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def make_instrumented(tracer_provider: TracerProvider) -> Iterator[Callable[..., InstrumentedGraph]]:
    """``make_instrumented(graph, **kwargs)``: instrument onto the test's provider (store=None unless given)."""
    made: list[InstrumentedGraph] = []

    def factory(graph: Any, **kwargs: Any) -> InstrumentedGraph:
        kwargs.setdefault("store", None)
        kwargs.setdefault("tracer_provider", tracer_provider)
        ig = instrument(graph, **kwargs)
        made.append(ig)
        return ig

    yield factory
    for ig in made:
        ig.shutdown()


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Callable[[], SpanTree]:
    """``spans()``: every finished span so far, as a :class:`SpanTree`."""
    return lambda: SpanTree(span_exporter.get_finished_spans())
