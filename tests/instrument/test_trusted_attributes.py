"""Issue 16: child spans of instrument()'s own provider take their attributes without the SDK
cleaning each value again (causal_middleware.spans.trusted). The spans must come out exactly as
the SDK's own path makes them: same attributes, same order, same fallbacks."""

from __future__ import annotations

import importlib
import json
import logging
import operator
from typing import Annotated, Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph.extract import to_json
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider, sampling
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware import instrument
from causal_middleware.spans.trusted import SpanStarter, put_attributes, sampler_ignores_attributes
from causal_middleware.store.memory import InMemorySpanStore

instrument_module = importlib.import_module("causal_middleware.integrations.langgraph.instrument")


def _provider(limits: SpanLimits | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits or SpanLimits(max_attribute_length=None))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _both(attrs: list[dict[str, Any]], limits: SpanLimits | None = None) -> tuple[Any, Any]:
    """The attributes after each dict is set in turn, the SDK's way and put_attributes' way."""
    provider, exporter = _provider(limits)
    tracer = provider.get_tracer("t")
    sdk, ours = tracer.start_span("sdk", context=Context()), tracer.start_span("ours", context=Context())
    for a in attrs:
        sdk.set_attributes(a)
        put_attributes(ours, a)
    sdk.end()
    ours.end()
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    return list(by_name["sdk"].attributes.items()), list(by_name["ours"].attributes.items())


@pytest.mark.parametrize(
    "attrs",
    [
        [{"a": "x", "b": 1, "c": 2.5, "d": True}],
        [{"a": "x", "b": 1}, {"c": "y", "a": "moved to the end"}],  # a re-set key moves to the end
        [{"a": ["l", "i", "s", "t"], "b": 1}],  # a sequence: the SDK's tuple
        [{"a": {"not": "allowed"}, "b": None}],  # values the SDK cleans or turns into str / None
        [{"": "empty key", "b": 1}],  # dropped by the SDK
        [{"a": "x"}, {}],
    ],
)
def test_put_attributes_matches_the_sdk(attrs: list[dict[str, Any]]) -> None:
    sdk, ours = _both(attrs)
    assert ours == sdk


def test_put_attributes_keeps_the_span_limits() -> None:
    limits = SpanLimits(max_span_attributes=3, max_attribute_length=4)
    sdk, ours = _both([{"a": "long value", "b": "x"}, {"c": "y", "d": "z"}], limits)
    assert ours == sdk
    assert len(ours) == 3 and all(len(v) <= 4 for _, v in ours)


def test_put_attributes_on_an_ended_span_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    provider, exporter = _provider()
    span = provider.get_tracer("t").start_span("s", context=Context(), attributes={"a": "x"})
    span.end()
    with caplog.at_level(logging.WARNING):
        put_attributes(span, {"b": "y"})
    assert dict(exporter.get_finished_spans()[0].attributes or {}) == {"a": "x"}
    assert "ended span" in caplog.text


def test_only_the_sdks_samplers_count_as_ignoring_attributes() -> None:
    class ByAttribute(sampling.Sampler):
        def should_sample(self, *args: Any, **kwargs: Any) -> sampling.SamplingResult:
            return sampling.SamplingResult(sampling.Decision.RECORD_AND_SAMPLE)

        def get_description(self) -> str:
            return "by attribute"

    assert sampler_ignores_attributes(sampling.ALWAYS_ON)
    assert sampler_ignores_attributes(sampling.ParentBased(sampling.TraceIdRatioBased(0.5)))
    assert not sampler_ignores_attributes(ByAttribute())
    assert not sampler_ignores_attributes(sampling.ParentBased(ByAttribute()))
    provider, _ = _provider()
    tracer = provider.get_tracer("t")
    assert SpanStarter.for_provider(tracer, provider, own_provider=True).trusted
    assert not SpanStarter.for_provider(tracer, provider, own_provider=False).trusted
    custom = TracerProvider(sampler=ByAttribute())
    assert not SpanStarter.for_provider(custom.get_tracer("t"), custom, own_provider=True).trusted


class St(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    answer: str


class Docs(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document(id=f"d{i}", page_content=f"{query} passage {i}", metadata={"score": 1.0 - i / 10})
            for i in range(3)
        ]


def _graph() -> Any:
    retriever = Docs()

    def retrieve(state: St) -> dict[str, Any]:
        return {"evidence": [d.page_content for d in retriever.invoke(state["query"])]}

    def read(state: St) -> dict[str, Any]:
        if len(state["evidence"]) >= 6:
            return {"answer": "Paris"}
        return {"query": f"next {len(state['evidence'])}"}

    g = StateGraph(St)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: END if s.get("answer") else "retrieve", ["retrieve", END])
    return g.compile(checkpointer=InMemorySaver())


def _spans(trusted: bool, monkeypatch: pytest.MonkeyPatch) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()

    class Recording(TracerProvider):  # instrument()'s own provider, with a window onto its spans
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.add_span_processor(SimpleSpanProcessor(exporter))

    monkeypatch.setattr(instrument_module, "TracerProvider", Recording)
    graph = instrument(_graph(), store=InMemorySpanStore())
    assert graph.handler._starter.trusted  # instrument() owns the provider: the fast path is on
    graph.handler._starter.trusted = trusted
    graph.invoke(
        {"question": "Where?", "query": "start"},
        {"configurable": {"thread_id": "t"}, "metadata": {"causal_reference": "Paris"}},
    )
    graph.shutdown()
    return sorted(exporter.get_finished_spans(), key=lambda s: (s.start_time or 0, s.name))


def _comparable(span: ReadableSpan) -> tuple[Any, ...]:
    varying = {"causal.checkpoint.id", "causal.checkpoint.ns"}  # ids LangGraph draws per run
    attrs = [(k, v) for k, v in (span.attributes or {}).items() if k not in varying]
    return span.name, span.status.status_code, attrs


def test_trusted_spans_equal_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _spans(True, monkeypatch), _spans(False, monkeypatch)
    assert len(fast) == len(slow) > 10
    assert [_comparable(s) for s in fast] == [_comparable(s) for s in slow]
    kinds = {dict(s.attributes or {}).get("causal.span.type") for s in fast}
    assert {"run", "hop", "node", "retrieval", "decision", "answer"} <= kinds


def test_own_sampler_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    assert instrument_module._own_sampler() is sampling.ALWAYS_ON
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    assert instrument_module._own_sampler() is None  # the SDK reads the variable itself


def test_to_json_equals_json_dumps() -> None:
    from causal_middleware.integrations.langgraph import extract
    from langchain_core.messages import AIMessage

    values: list[Any] = [
        {"a": [1, 2.5, None, True], "é": "ü", "nan": float("nan")},
        'text with "quotes" and ü',
        [Document(id="x", page_content="p", metadata={"score": 1.0})],
        {1: "int key"},
        {"m": [AIMessage("hi")], "t": (1, 2), "s": b"xy"},
    ]
    for value in values:
        assert to_json(value) == json.dumps(value, default=extract._default, ensure_ascii=False)
    assert to_json({(1, 2): "tuple key"}) == '{"(1, 2)": "tuple key"}'
