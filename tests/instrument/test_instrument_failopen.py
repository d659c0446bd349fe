"""Fail open: instrumentation, export and store failures never reach the agent; they are counted.
The user's own exceptions still propagate unchanged and are recorded on the spans."""

from __future__ import annotations

import importlib
from typing import Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import handler as handler_module
from causal_middleware.integrations.langgraph import node_wrapper
from instrument_graphs import build_loop_graph, loop_input
from instrument_spans import attr
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.spans.export import build_otlp_processor
from causal_middleware.spans.health import health
from causal_middleware.store.memory import InMemorySpanStore

# the package re-exports the function instrument(), which shadows the module of the same name
instrument_module = importlib.import_module("causal_middleware.integrations.langgraph.instrument")
EXPECTED = build_loop_graph().invoke(loop_input())


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("instrumentation bug")


class RaisingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        raise ConnectionError("collector down")

    def shutdown(self) -> None:
        pass


@pytest.mark.parametrize(
    ("target", "site"),
    [
        ("document_attributes", "handler.on_retriever_end"),
        ("llm_result_attributes", "handler.on_llm_end"),
        ("input_message_attributes", "handler.on_chat_model_start"),
        ("route_choice", "handler.on_chain_end"),
        ("value_attributes", "handler.on_chain_start"),
    ],
)
def test_a_failing_handler_hook_does_not_change_the_run(make_instrumented, monkeypatch, target, site):
    ig = make_instrumented(build_loop_graph())
    monkeypatch.setattr(handler_module, target, _boom)
    assert ig.invoke(loop_input()) == EXPECTED
    assert health.errors.get(site, 0) >= 1
    assert "instrumentation bug" in health.last_error(site)
    assert ig.health is health


def test_failing_node_wrapper_bookkeeping_does_not_change_the_run(make_instrumented, spans, monkeypatch):
    ig = make_instrumented(build_loop_graph())
    monkeypatch.setattr(node_wrapper, "_node_checkpoint_id", _boom)
    assert ig.invoke(loop_input()) == EXPECTED
    assert health.errors.get("node_wrapper.before", 0) == 7  # once per node execution
    assert len(spans().of_trace(ig.last_run_id).typed("node")) == 7  # callbacks still made the spans


def test_a_raising_otlp_exporter_is_counted_not_raised(make_instrumented, tracer_provider):
    exporter = RaisingExporter()
    processor = build_otlp_processor(exporter)
    tracer_provider.add_span_processor(processor)
    ig = make_instrumented(build_loop_graph())
    assert ig.invoke(loop_input()) == EXPECTED
    processor.force_flush()
    assert exporter.calls >= 1
    assert health.errors["export.otlp"] == exporter.calls
    processor.shutdown()


def test_instrument_wraps_its_own_otlp_exporter_fail_open(monkeypatch):
    exporter = RaisingExporter()
    monkeypatch.setattr(instrument_module, "build_otlp_exporter", lambda settings: exporter)
    ig = instrument(build_loop_graph(), store=None, otlp_endpoint="http://127.0.0.1:9")
    assert ig.invoke(loop_input()) == EXPECTED
    ig.force_flush()
    ig.shutdown()
    assert exporter.calls >= 1 and health.errors["export.otlp"] == exporter.calls


def test_a_store_whose_write_fails_does_not_change_the_run(monkeypatch):
    store = InMemorySpanStore()
    monkeypatch.setattr(store, "write_spans", _boom)
    ig = instrument(build_loop_graph(), store=store)
    assert ig.invoke(loop_input()) == EXPECTED
    ig.shutdown()
    assert health.errors["store.export"] == 1  # one batch per run, refused as a whole
    assert "instrumentation bug" in health.last_error("store.export")
    with pytest.raises(KeyError):
        store.get_trajectory(ig.last_run_id)


def test_a_store_export_that_raises_is_counted(monkeypatch):
    store = InMemorySpanStore()
    monkeypatch.setattr(store, "export", _boom)
    ig = instrument(build_loop_graph(), store=store)
    assert ig.invoke(loop_input()) == EXPECTED
    ig.shutdown()
    assert health.errors["store.write"] == 1


class S(TypedDict, total=False):
    x: int


class AgentBug(ValueError):
    pass


def test_user_exceptions_propagate_unchanged_and_are_recorded(make_instrumented, spans):
    raised = AgentBug("bad input 42")

    def ok(state: S) -> dict[str, Any]:
        return {"x": 1}

    def broken(state: S) -> dict[str, Any]:
        raise raised

    g = StateGraph(S)
    g.add_node("ok", ok)
    g.add_node("broken", broken)
    g.add_edge(START, "ok")
    g.add_edge("ok", "broken")
    g.add_edge("broken", END)
    ig = make_instrumented(g.compile())
    with pytest.raises(AgentBug) as info:
        ig.invoke({"x": 0})
    assert info.value is raised
    tree = spans().of_trace(ig.last_run_id)
    (node,) = tree.named("broken", "node")
    assert node.status.status_code is StatusCode.ERROR
    assert node.status.description == "AgentBug: bad input 42"
    (event,) = [e for e in node.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("AgentBug")
    run = tree.one("run")
    assert run.status.status_code is StatusCode.ERROR
    assert tree.named("ok", "node")[0].status.status_code is StatusCode.OK
    assert attr(run, A.OUTPUT_VALUE) is None
    assert health.total_errors == 0
    assert ig.handler.open_spans == 0
