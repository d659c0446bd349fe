"""The span tree for each graph shape the instrumentation must handle (issue #2, item 5 a-e)."""

from __future__ import annotations

import asyncio
import json

from instrument_graphs import (
    AGENT_CALLS,
    CHAINS,
    FAN_QUERIES,
    QUESTION,
    build_agent,
    build_async_loop_graph,
    build_fanout_graph,
    build_loop_graph,
    build_subgraph_graph,
    loop_input,
    new_saver,
)
from instrument_spans import attr, doc_ids, doc_scores
from opentelemetry.trace import StatusCode

from causal_middleware.spans import attributes as A

SUBQUERIES, ANSWER = CHAINS[QUESTION]


def _assert_loop_tree(tree, run_id: str) -> None:
    """The loop graph's run: 3 hops of retrieve > retrieval, read > llm + route; answer outside."""
    tree = tree.of_trace(run_id)
    run = tree.one("run")
    assert run.parent is None
    assert attr(run, A.OPENINFERENCE_SPAN_KIND) == "CHAIN"
    assert attr(run, A.GEN_AI_OPERATION_NAME) == "invoke_agent"
    assert json.loads(attr(run, A.INPUT_VALUE))["question"] == QUESTION
    assert json.loads(attr(run, A.OUTPUT_VALUE))["answer"] == ANSWER

    hops = tree.hops()
    assert sorted(hops) == [1, 2, 3], tree.render()
    for index, hop in hops.items():
        assert tree.parent(hop) is run
        assert hop.name == f"hop {index}"
        assert attr(hop, A.CAUSAL_HOP_SUB_QUERY) == SUBQUERIES[index - 1]
        nodes = tree.children(hop, "node")
        assert [n.name for n in nodes] == ["retrieve", "read"]
        retrieve, read = nodes
        assert attr(retrieve, A.CAUSAL_LANGGRAPH_STEP) == 2 * index - 1
        assert attr(read, A.CAUSAL_LANGGRAPH_STEP) == 2 * index
        (retrieval,) = tree.children(retrieve, "retrieval")
        assert attr(retrieval, A.INPUT_VALUE) == SUBQUERIES[index - 1]
        assert attr(retrieval, A.CAUSAL_HOP_INDEX) == index
        assert attr(retrieval, A.CAUSAL_NODE) == "retrieve"
        assert attr(retrieval, A.CAUSAL_RETRIEVER_NAME) == "KeywordRetriever"
        (llm,) = tree.children(read, "llm")
        assert attr(llm, A.LLM_MODEL_NAME) == "scripted-1"
        assert attr(llm, A.CAUSAL_HOP_INDEX) == index
        (decision,) = tree.children(read, "decision")
        assert decision.name == "route"
        assert attr(decision, A.CAUSAL_DECISION_CHOICE) == ("answer" if index == 3 else "retrieve")
        assert json.loads(attr(decision, A.CAUSAL_DECISION_OPTIONS)) == ["retrieve", "answer"]

    first = tree.children(tree.children(hops[1], "node")[0], "retrieval")[0]
    assert doc_ids(first) == ["p1", "p5"]  # "Zorvex Labs founded": p1 matches 3 words, p5 one
    assert doc_scores(first) == [1.0, 0.3333]
    assert json.loads(attr(first, "retrieval.documents.0.document.metadata")) == {
        "score": 1.0,
        "source": "wiki/p1",
    }
    assert attr(first, "retrieval.documents.0.document.content").startswith("Zorvex Labs was founded")

    (answer_node,) = tree.named("answer", "node")
    assert tree.parent(answer_node) is run and attr(answer_node, A.CAUSAL_HOP_INDEX) is None
    answer = tree.one("answer")
    assert tree.parent(answer) is answer_node
    assert attr(answer, A.CAUSAL_ANSWER_TEXT) == ANSWER
    for span in tree.spans:
        assert span.end_time is not None and span.end_time >= span.start_time
        if span is not run:
            assert span.context.trace_id == run.context.trace_id


def test_loop_graph_with_conditional_edges(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    out = ig.invoke(loop_input())
    assert out["answer"] == ANSWER
    _assert_loop_tree(spans(), ig.last_run_id)
    assert ig.handler.open_spans == 0


def test_llm_span_messages_usage_and_parameters(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    ig.invoke(loop_input())
    llm = spans().typed("llm")[0]
    assert attr(llm, "llm.input_messages.0.message.role") == "user"
    assert attr(llm, "llm.input_messages.0.message.content").startswith(f"QUESTION: {QUESTION}")
    assert attr(llm, "llm.output_messages.0.message.role") == "assistant"
    assert attr(llm, "llm.output_messages.0.message.content") == f"NEXT: {SUBQUERIES[1]}"
    prompt_words = len(attr(llm, "llm.input_messages.0.message.content").split())
    assert attr(llm, A.LLM_TOKEN_COUNT_PROMPT) == prompt_words == attr(llm, A.GEN_AI_USAGE_INPUT_TOKENS)
    assert attr(llm, A.LLM_TOKEN_COUNT_COMPLETION) == 4 == attr(llm, A.GEN_AI_USAGE_OUTPUT_TOKENS)
    assert attr(llm, A.LLM_TOKEN_COUNT_TOTAL) == prompt_words + 4
    assert attr(llm, A.GEN_AI_REQUEST_TEMPERATURE) == 0.0
    assert attr(llm, A.GEN_AI_REQUEST_SEED) == 7
    params = json.loads(attr(llm, A.LLM_INVOCATION_PARAMETERS))
    assert params["model_name"] == "scripted-1" and params["seed"] == 7
    assert attr(llm, A.GEN_AI_OPERATION_NAME) == "chat"


def test_create_agent_tool_calls_are_hops(make_instrumented, spans):
    ig = make_instrumented(build_agent())
    out = ig.invoke({"messages": [("user", "Where was the founder of Zorvex Labs born?")]})
    assert out["messages"][-1].content == "Tessaly"
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    assert attr(run, A.OPENINFERENCE_SPAN_KIND) == "AGENT"
    assert tree.node_sequence() == [("model", None), ("tools", 1), ("model", 1), ("tools", 2), ("model", 2)]
    hops = tree.hops()
    assert sorted(hops) == [1, 2]
    for index, (name, args) in enumerate(AGENT_CALLS, start=1):
        hop = hops[index]
        assert attr(hop, A.CAUSAL_HOP_SUB_QUERY) == args["query"]
        tools_node, model_node = tree.children(hop, "node")
        assert (tools_node.name, model_node.name) == ("tools", "model")
        (tool_span,) = tree.children(tools_node, "tool")
        assert tool_span.name == name == attr(tool_span, A.TOOL_NAME)
        assert json.loads(attr(tool_span, A.TOOL_PARAMETERS)) == args
        assert attr(tool_span, A.TOOL_ID) == f"call_{index}" == attr(tool_span, A.GEN_AI_TOOL_CALL_ID)
        assert attr(tool_span, A.CAUSAL_HOP_INDEX) == index
        assert "[p" in attr(tool_span, A.OUTPUT_VALUE)
        # the retriever inside the tool nests under the tool span, in the same hop
        (retrieval,) = tree.children(tool_span, "retrieval")
        assert attr(retrieval, A.CAUSAL_HOP_INDEX) == index
    first_llm = tree.children(tree.named("model", "node")[0], "llm")[0]
    assert attr(first_llm, "llm.output_messages.0.message.tool_calls.0.tool_call.function.name") == "search"
    assert json.loads(
        attr(first_llm, "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments")
    ) == {"query": "Zorvex Labs founded"}
    assert attr(first_llm, "llm.output_messages.0.message.tool_calls.0.tool_call.id") == "call_1"
    # create_agent builds its router untraced; the instrumented copy traces it: one decision per model call
    routes = [tree.children(m, "decision") for m in tree.named("model", "node")]
    assert [[d.name for d in r] for r in routes] == [["model_to_tools"]] * 3
    assert [attr(r[0], A.CAUSAL_DECISION_CHOICE) for r in routes] == ["tools", "tools", "__end__"]
    assert json.loads(attr(routes[0][0], A.CAUSAL_DECISION_OPTIONS)) == ["tools", "__end__"]
    answer = tree.one("answer")
    assert attr(answer, A.CAUSAL_ANSWER_TEXT) == "Tessaly"
    assert tree.parent(answer) is tree.named("model", "node")[-1]


def test_subgraph_nodes_nest_under_the_subgraph_node(make_instrumented, spans):
    ig = make_instrumented(build_subgraph_graph(checkpointer=new_saver()))
    out = ig.invoke({"question": "who founded Zorvex Labs?"}, {"configurable": {"thread_id": "sub-1"}})
    assert out["answer"] == "Ilka Morrow"
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    (research,) = tree.named("research", "node")
    assert tree.parent(research) is run
    search, note = tree.named("search", "node")[0], tree.named("note", "node")[0]
    assert tree.parent(search) is research and tree.parent(note) is research
    # the inner retriever node opens hop 1 (a hop span under the run); the subgraph node takes its index
    hop = tree.one("hop")
    assert tree.parent(hop) is run
    assert attr(hop, A.CAUSAL_HOP_SUB_QUERY) == "Zorvex Labs founded"
    assert [attr(s, A.CAUSAL_HOP_INDEX) for s in (research, search, note)] == [1, 1, 1]
    assert attr(search, A.CAUSAL_CHECKPOINT_NS).startswith("research:")
    assert "|search:" in attr(search, A.CAUSAL_CHECKPOINT_NS)
    (retrieval,) = tree.children(search, "retrieval")
    assert doc_ids(retrieval) == ["p1", "p5"]
    assert tree.node_sequence() == [
        ("plan", None),
        ("research", 1),
        ("search", 1),
        ("note", 1),
        ("answer", None),
    ]
    assert attr(tree.one("answer"), A.CAUSAL_ANSWER_TEXT) == "Ilka Morrow"


def test_send_fanout_parallel_hops(make_instrumented, spans):
    ig = make_instrumented(build_fanout_graph())
    out = ig.invoke({"question": "q"})
    assert out["answer"] == "p1,p2,p3"
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    (fan,) = tree.typed("decision")
    assert fan.name == "fan_out" and attr(fan, A.CAUSAL_DECISION_CHOICE) == "retrieve"
    assert tree.parent(fan) is tree.named("plan", "node")[0]
    hops = tree.hops()
    assert sorted(hops) == [1, 2, 3]
    # parallel hops are numbered in the order their tasks started: compare as a mapping
    by_query = {}
    for index, hop in hops.items():
        (node,) = tree.children(hop, "node")
        assert node.name == "retrieve" and attr(node, A.CAUSAL_HOP_INDEX) == index
        assert json.loads(attr(node, A.CAUSAL_LANGGRAPH_PATH))[0] == "__pregel_push"
        (retrieval,) = tree.children(node, "retrieval")
        assert attr(retrieval, A.CAUSAL_HOP_INDEX) == index
        by_query[attr(hop, A.CAUSAL_HOP_SUB_QUERY)] = doc_ids(retrieval)
    assert by_query == {"Zorvex Labs founded": ["p1"], "Ilka Morrow born": ["p2"], "Tessaly country": ["p3"]}
    assert set(FAN_QUERIES) == set(by_query)
    (combine,) = tree.named("combine", "node")
    assert tree.parent(combine) is run  # combine's only edge goes to END: an answer node, outside hops


def test_ainvoke_with_async_nodes(make_instrumented, spans):
    ig = make_instrumented(build_async_loop_graph())

    async def main() -> tuple[dict, str | None]:
        out = await ig.ainvoke(loop_input())
        return out, ig.last_run_id

    out, run_id = asyncio.run(main())
    assert out["answer"] == ANSWER
    _assert_loop_tree(spans(), run_id)


def test_astream_yields_the_graphs_updates(make_instrumented, spans):
    ig = make_instrumented(build_async_loop_graph())

    async def main() -> tuple[list, str | None]:
        chunks = [chunk async for chunk in ig.astream(loop_input(), stream_mode="updates")]
        return chunks, ig.last_run_id

    chunks, run_id = asyncio.run(main())
    assert [next(iter(c)) for c in chunks] == ["retrieve", "read"] * 3 + ["answer"]
    _assert_loop_tree(spans(), run_id)


def test_stream_sync(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    chunks = list(ig.stream(loop_input(), stream_mode="updates"))
    assert chunks[-1] == {"answer": {"answer": ANSWER}}
    _assert_loop_tree(spans(), ig.last_run_id)


def test_a_stream_closed_early_ends_the_run_without_an_error(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    stream = ig.stream(loop_input(), stream_mode="updates")
    assert next(iter(next(stream))) == "retrieve"
    stream.close()
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    assert run.status.status_code is StatusCode.UNSET
    assert [e.name for e in run.events] == ["cancelled"]
    assert tree.node_sequence()[0] == ("retrieve", 1)
    assert ig.handler.open_spans == 0


def test_interrupt_and_resume_are_two_runs(make_instrumented, spans):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    class S(TypedDict, total=False):
        draft: str
        approved: bool

    def write(state: S) -> dict:
        return {"draft": "Quarn"}

    def review(state: S) -> dict:
        return {"approved": interrupt({"draft": state["draft"]}) == "yes"}

    g = StateGraph(S)
    g.add_node("write", write)
    g.add_node("review", review)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", END)
    ig = make_instrumented(g.compile(checkpointer=new_saver()))
    cfg = {"configurable": {"thread_id": "hitl"}}
    first = ig.invoke({}, cfg)
    assert "__interrupt__" in first
    paused = ig.last_run_id
    assert ig.invoke(Command(resume="yes"), cfg)["approved"] is True
    resumed = ig.last_run_id
    assert paused != resumed
    tree = spans()
    (review,) = tree.of_trace(paused).named("review", "node")
    assert review.status.status_code is StatusCode.UNSET
    assert [e.name for e in review.events] == ["langgraph.GraphInterrupt"]
    assert tree.of_trace(paused).one("run").status.status_code is StatusCode.OK
    assert tree.of_trace(resumed).node_sequence() == [("review", None)]
