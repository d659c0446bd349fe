"""The node span is the active OTel context inside the node (item 5 g); provider handling (item 5 h)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import anthropic
import httpx2
from instrument_graphs import build_loop_graph, loop_input
from instrument_spans import SpanTree, attr
from langgraph.graph import END, START, StateGraph
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.store.memory import InMemorySpanStore

MESSAGE_BODY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "Quarn"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1},
}


class S(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]


class Inner(TypedDict):
    x: int


def _graph_with_user_spans(tracer: trace.Tracer, *, async_node: bool = True) -> Any:
    """work (sync, starts a span) -> awork (async, starts a span) -> sub (subgraph: inner starts a span)."""

    def work(state: S) -> dict[str, Any]:
        with tracer.start_as_current_span("user.sync") as span:
            span.set_attribute("user.x", state["x"])
            with tracer.start_as_current_span("user.sync.child"):
                pass
        return {"x": state["x"] + 1, "log": ["work"]}

    async def awork(state: S) -> dict[str, Any]:
        with tracer.start_as_current_span("user.async"):
            await asyncio.sleep(0)
        return {"x": state["x"] + 1, "log": ["awork"]}

    def swork(state: S) -> dict[str, Any]:
        with tracer.start_as_current_span("user.async"):  # same name: the sync run's stand-in
            pass
        return {"x": state["x"] + 1, "log": ["awork"]}

    def inner(state: Inner) -> dict[str, Any]:
        with tracer.start_as_current_span("user.inner"):
            pass
        return {"x": state["x"] + 10}

    sub = StateGraph(Inner)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)

    g = StateGraph(S)
    g.add_node("work", work)
    g.add_node("awork", awork if async_node else swork)
    g.add_node("sub", sub.compile())
    g.add_edge(START, "work")
    g.add_edge("work", "awork")
    g.add_edge("awork", "sub")
    g.add_edge("sub", END)
    return g.compile()


def _assert_user_spans_nest(tree: SpanTree) -> None:
    for user_name, node_name in [("user.sync", "work"), ("user.async", "awork"), ("user.inner", "inner")]:
        (user,) = tree.named(user_name)
        (node,) = tree.named(node_name, "node")
        assert tree.parent(user) is node, f"{user_name} should nest under node {node_name}:\n{tree.render()}"
    (child,) = tree.named("user.sync.child")
    assert tree.parent(child) is tree.named("user.sync")[0]
    assert attr(tree.named("user.sync")[0], "user.x") == 1


def test_spans_created_inside_nodes_nest_under_the_node_span(make_instrumented, spans, tracer_provider):
    ig = make_instrumented(_graph_with_user_spans(tracer_provider.get_tracer("user-code")))

    out = asyncio.run(ig.ainvoke({"x": 1}))  # async run: sync nodes run in an executor thread
    assert out == {"x": 13, "log": ["work", "awork"]}
    _assert_user_spans_nest(spans().of_trace(ig.last_run_id))


def test_user_spans_nest_in_sync_runs_and_the_context_is_restored(make_instrumented, spans, tracer_provider):
    tracer = tracer_provider.get_tracer("user-code")
    ig = make_instrumented(_graph_with_user_spans(tracer, async_node=False))
    before = trace.get_current_span()
    assert ig.invoke({"x": 1}) == {"x": 13, "log": ["work", "awork"]}
    assert trace.get_current_span() is before  # detached: nothing of the run stays current
    _assert_user_spans_nest(spans().of_trace(ig.last_run_id))


def test_anthropic_sdk_span_nests_under_the_node(make_instrumented, spans, tracer_provider):
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        return httpx2.Response(200, json=MESSAGE_BODY)

    client = anthropic.Anthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        open_telemetry={"tracer_provider": tracer_provider},
    )

    def ask(state: S) -> dict[str, Any]:
        reply = client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "q"}]
        )
        return {"log": [reply.content[0].text]}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    ig = make_instrumented(g.compile())
    assert ig.invoke({"x": 0})["log"] == ["Quarn"]
    assert seen == ["/v1/messages"]
    tree = spans().of_trace(ig.last_run_id)
    (sdk_span,) = tree.named("anthropic.messages.create")
    assert sdk_span.kind is SpanKind.CLIENT
    assert tree.parent(sdk_span) is tree.named("ask", "node")[0]
    assert attr(sdk_span, "gen_ai.usage.input_tokens") == 12


def test_a_run_started_inside_a_user_span_is_its_own_trace_linked_to_it(
    make_instrumented, spans, tracer_provider
):
    ig = make_instrumented(build_loop_graph())
    with tracer_provider.get_tracer("app").start_as_current_span("request") as request:
        ig.invoke(loop_input())
    run = spans().of_trace(ig.last_run_id).one("run")
    assert run.parent is None
    assert run.context.trace_id != request.get_span_context().trace_id
    assert [link.context.span_id for link in run.links] == [request.get_span_context().span_id]


def test_own_tracer_provider_and_the_global_provider_is_left_alone(span_exporter):
    global_before = trace.get_tracer_provider()
    store = InMemorySpanStore()
    ig = instrument(build_loop_graph(), store=store)
    try:
        assert isinstance(ig.tracer_provider, TracerProvider)
        assert ig.tracer_provider is not global_before
        ig.invoke(loop_input())
        assert trace.get_tracer_provider() is global_before
        assert store.get_trajectory(ig.last_run_id).answer == "Quarn"
        assert span_exporter.get_finished_spans() == ()  # nothing leaked to other providers
    finally:
        ig.shutdown()


def test_user_tracer_provider_gets_the_spans_and_the_store_too():
    user_exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(user_exporter))
    global_before = trace.get_tracer_provider()
    store = InMemorySpanStore()
    ig = instrument(build_loop_graph(), store=store, tracer_provider=provider)
    ig.invoke(loop_input())
    assert ig.tracer_provider is provider
    assert trace.get_tracer_provider() is global_before
    tree = SpanTree(user_exporter.get_finished_spans())
    assert tree.trace_ids == {int(ig.last_run_id, 16)}
    assert len(tree.typed("hop")) == 3
    assert len(store.get_spans(ig.last_run_id)) == len(tree.spans)
    ig.shutdown()
    # shutting the instrumentation down leaves the user's provider working
    with provider.get_tracer("app").start_as_current_span("after"):
        pass
    assert user_exporter.get_finished_spans()[-1].name == "after"
    assert attr(tree.one("run"), A.CAUSAL_RUN_GRAPH) == "LangGraph"
