"""The trusted span starter's fast child start (``SpanStarter._start_child``) makes exactly the
spans ``Tracer.start_span`` makes, and is used only where it repeats the SDK step for step."""

from __future__ import annotations

from typing import Any

import pytest
from instrument_graphs import build_loop_graph, build_subgraph_graph, loop_input, new_saver
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased
from opentelemetry.trace import set_span_in_context
from span_dump import _plain_span, _source_roots, normalise

from causal_middleware import instrument
from causal_middleware.spans import trusted
from causal_middleware.spans.trusted import SpanStarter


def _spans(fast: bool, make: Any, inputs: Any, config: dict[str, Any] | None = None) -> list[Any]:
    ig = instrument(make(), store=None)
    exporter = InMemorySpanExporter()
    ig.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    starter = ig.handler._starter
    if not fast:
        starter._fast = False
    for i in range(2):
        cfg = {"configurable": {"thread_id": f"fast-{i}"}} if config is not None else None
        ig.invoke(inputs(), cfg)
    ig.shutdown()
    return normalise([_plain_span(s) for s in exporter.get_finished_spans()], True, _source_roots())


def test_the_fast_start_is_on_for_our_own_provider_with_this_sdk():
    ig = instrument(build_loop_graph(), store=None)
    try:
        assert ig.handler._starter.trusted
        assert ig.handler._starter._fast == trusted._fast_start_ok(ig.handler._starter.tracer)
    finally:
        ig.shutdown()


@pytest.mark.parametrize(
    ("make", "inputs", "config"),
    [
        (build_loop_graph, loop_input, None),
        (lambda: build_subgraph_graph(checkpointer=new_saver()), lambda: {"question": "q"}, {}),
    ],
)
def test_fast_and_sdk_starts_give_the_same_spans(make, inputs, config):
    fast_ig = instrument(make(), store=None)
    on = fast_ig.handler._starter._fast
    fast_ig.shutdown()
    if not on:
        pytest.skip("this opentelemetry-sdk is not one the fast start repeats")
    assert _spans(True, make, inputs, config) == _spans(False, make, inputs, config)


def test_fast_child_matches_start_span_field_by_field():
    provider = TracerProvider(sampler=ALWAYS_ON)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t", "1")
    starter = SpanStarter(tracer, trusted=True)
    if not starter._fast:
        pytest.skip("this opentelemetry-sdk is not one the fast start repeats")
    root = tracer.start_span("root", context=Context())
    ctx = set_span_in_context(root, Context())
    a = starter._start_child("child", ctx, 123)
    b = tracer.start_span("child", context=ctx, start_time=123)
    assert a is not None
    for field in ("name", "parent", "kind", "resource", "instrumentation_scope", "start_time", "status"):
        assert getattr(a, field) == getattr(b, field), field
    ca, cb = a.get_span_context(), b.get_span_context()
    assert (ca.trace_id, ca.is_remote, ca.trace_flags, ca.trace_state) == (
        cb.trace_id,
        cb.is_remote,
        cb.trace_flags,
        cb.trace_state,
    )
    assert type(a) is type(b) and dict(a.attributes) == dict(b.attributes) == {}
    assert a._limits is b._limits and a._span_processor is b._span_processor
    # no valid parent: the SDK's own path
    assert starter._start_child("orphan", Context(), None) is None


def test_the_fast_start_is_off_where_it_would_not_repeat_the_sdk(monkeypatch):
    for sampler in (ALWAYS_OFF, ParentBased(ALWAYS_ON)):
        tracer = TracerProvider(sampler=sampler).get_tracer("t")
        assert not SpanStarter(tracer, trusted=True)._fast
    tracer = TracerProvider(sampler=ALWAYS_ON).get_tracer("t")
    assert not SpanStarter(tracer, trusted=False)._fast
    monkeypatch.setattr(trusted, "_KNOWN_START_SPAN", frozenset())  # another SDK's start_span
    assert not SpanStarter(tracer, trusted=True)._fast
