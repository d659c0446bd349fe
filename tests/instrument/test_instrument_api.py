"""The public API of instrument(): stores, run ids, run labels, markers, hop rules, the replay hook,
checkpoint ids, passthrough methods, the standalone handler and bad input."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import threading
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import OVERRIDE_KEY
from instrument_graphs import (
    CHAINS,
    QUESTION,
    KeywordRetriever,
    ScriptedChatModel,
    build_agent,
    build_loop_graph,
    loop_input,
    new_saver,
)
from instrument_spans import SpanTree, attr, doc_ids
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from causal_middleware import CausalCallbackHandler, hop_node, instrument, side_effecting
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Lineage
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

SUBQUERIES, ANSWER = CHAINS[QUESTION]


def test_importing_the_core_does_not_import_langgraph():
    code = (
        "import sys, causal_middleware, causal_middleware.spans.export, causal_middleware.spans.content;"
        "assert 'langgraph' not in sys.modules, 'langgraph imported';"
        "print(' '.join(causal_middleware.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    exported = set(out.stdout.split())
    assert {
        "CausalCallbackHandler",
        "InstrumentedGraph",
        "hop_node",
        "instrument",
        "side_effecting",
    } <= exported


def test_the_facade_resolves_lazily_to_the_integration():
    from causal_middleware.integrations.langgraph import instrument as module_level

    import causal_middleware

    assert causal_middleware.instrument is module_level
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        causal_middleware.nope  # noqa: B018


# --- stores ---------------------------------------------------------------------------------
def test_store_path_opens_sqlite_and_the_run_is_readable_at_once(tmp_path):
    path = tmp_path / "runs.db"
    ig = instrument(build_loop_graph(), store=str(path))
    try:
        assert isinstance(ig.store, SqliteSpanStore)
        ig.invoke(
            loop_input(), {"metadata": {"causal_reference": ANSWER, "causal_labels": {"fault": "none"}}}
        )
        traj = ig.store.get_trajectory(ig.last_run_id)
    finally:
        ig.shutdown()
    assert traj.run_id == ig.last_run_id
    assert traj.answer == ANSWER and traj.reference == ANSWER and traj.labels == {"fault": "none"}
    assert [h.index for h in traj.hops] == [1, 2, 3]
    assert [h.sub_query for h in traj.hops] == SUBQUERIES
    assert [d.id for d in traj.hops[0].documents] == ["p1", "p5"]
    assert traj.hops[0].documents[0].score == 1.0
    assert traj.cost.llm_calls == 3 and traj.cost.retrievals == 3 and traj.cost.input_tokens > 0
    # the store was opened by instrument(): shutdown closed it; the file is complete
    reopened = SqliteSpanStore(path, create=False)
    assert reopened.get_trajectory(traj.run_id).answer == ANSWER
    reopened.close()


def test_store_instance_is_used_and_left_open():
    store = InMemorySpanStore()
    with instrument(build_agent(), store=store) as ig:
        ig.invoke(
            {"messages": [("user", "Where was the founder of Zorvex Labs born?")]},
            {"configurable": {"thread_id": "t9"}},
        )
        run_id = ig.last_run_id
    traj = store.get_trajectory(run_id)  # still usable after shutdown
    assert traj.thread_id == "t9" and traj.answer == "Tessaly"
    assert [h.sub_query for h in traj.hops] == ["Zorvex Labs founded", "Ilka Morrow born"]
    assert traj.cost.tool_calls == 2


def test_last_run_id_is_per_thread(make_instrumented):
    ig = make_instrumented(build_loop_graph())
    seen: dict[str, str | None] = {}
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        barrier.wait()
        ig.invoke(loop_input(), {"configurable": {"thread_id": name}})
        seen[name] = ig.last_run_id

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["a"] != seen["b"] and None not in seen.values()
    assert ig.last_run_id in (seen["a"], seen["b"])  # this thread ran nothing: the latest run overall
    own = ig.invoke(loop_input()) and ig.last_run_id
    assert own not in seen.values()


def test_user_run_id_and_callbacks_are_kept(make_instrumented, spans):
    from langchain_core.callbacks import BaseCallbackHandler

    class Counter(BaseCallbackHandler):
        starts = 0

        def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
            Counter.starts += 1

    ig = make_instrumented(build_loop_graph())
    lc_run_id = uuid.uuid4()
    ig.invoke(loop_input(), {"callbacks": [Counter()], "run_id": lc_run_id})
    assert Counter.starts > 7
    assert spans().of_trace(ig.last_run_id).one("run") is not None


# --- run annotations from config metadata ------------------------------------------------------
def test_reference_labels_lineage_and_metadata_reach_the_run_span(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    lineage = Lineage(parent_run_id="ab" * 16, fork_hop=2, fork_node="retrieve", mode="frozen")
    ig.invoke(
        loop_input(),
        {
            "configurable": {"thread_id": "t-1"},
            "metadata": {
                "causal_reference": ANSWER,
                "causal_labels": {"fault": "distractor", "hop": 2},
                "causal_lineage": lineage,
                "user": "alice",
            },
        },
    )
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    assert attr(run, A.CAUSAL_RUN_REFERENCE) == ANSWER
    assert json.loads(attr(run, A.CAUSAL_RUN_LABELS)) == {"fault": "distractor", "hop": 2}
    assert attr(run, A.CAUSAL_LINEAGE_PARENT_RUN_ID) == "ab" * 16
    assert attr(run, A.CAUSAL_LINEAGE_FORK_HOP) == 2 and attr(run, A.CAUSAL_LINEAGE_MODE) == "frozen"
    assert json.loads(attr(run, A.METADATA)) == {"user": "alice"}
    assert attr(run, A.SESSION_ID) == "t-1" == attr(run, A.GEN_AI_CONVERSATION_ID)
    assert all(attr(s, A.CAUSAL_RUN_COUNTERFACTUAL) is True for s in tree.spans)


def test_bad_labels_are_rejected_before_the_run(make_instrumented):
    ig = make_instrumented(build_loop_graph())
    with pytest.raises(ValueError, match=r"causal_labels'\] must be a dict"):
        ig.invoke(loop_input(), {"metadata": {"causal_labels": ["x"]}})
    with pytest.raises(ValueError, match="must be a uuid.UUID"):
        ig.invoke(loop_input(), {"run_id": "not-a-uuid"})
    with pytest.raises(TypeError, match="config must be a dict"):
        ig.invoke(loop_input(), "thread-1")


# --- markers and hop rules ----------------------------------------------------------------------
class S(TypedDict, total=False):
    query: str
    hops: int
    sent: Annotated[list[str], operator.add]
    answer: str


def _marked_graph() -> Any:
    retriever = KeywordRetriever()

    @side_effecting
    def notify(state: S) -> dict[str, Any]:
        return {"sent": [f"mail about {state['query']}"]}

    @hop_node
    def plan(state: S) -> dict[str, Any]:
        return {"query": "Ilka Morrow born" if state.get("hops") else "Zorvex Labs founded"}

    def look(state: S) -> dict[str, Any]:
        retriever.invoke(state["query"])
        return {"hops": state.get("hops", 0) + 1}

    g = StateGraph(S)
    g.add_node("plan", plan)
    g.add_node("look", look)
    g.add_node("notify", notify)
    g.add_edge(START, "plan")
    g.add_edge("plan", "look")
    g.add_conditional_edges("look", lambda s: "plan" if s["hops"] < 2 else "notify", ["plan", "notify"])
    g.add_edge("notify", END)
    return g.compile()


def test_hop_node_and_side_effecting_decorators(make_instrumented, spans):
    ig = make_instrumented(_marked_graph())
    ig.invoke({"hops": 0})
    tree = spans().of_trace(ig.last_run_id)
    # @hop_node makes the hops explicit: plan opens them, look (which retrieves) joins them
    assert tree.node_sequence() == [("plan", 1), ("look", 1), ("plan", 2), ("look", 2), ("notify", None)]
    assert [attr(h, A.CAUSAL_HOP_SUB_QUERY) for h in tree.hops().values()] == [
        "Zorvex Labs founded",
        "Ilka Morrow born",
    ]
    (notify,) = tree.named("notify", "node")
    assert attr(notify, A.CAUSAL_NODE_SIDE_EFFECTING) is True
    assert attr(tree.named("plan", "node")[0], A.CAUSAL_NODE_SIDE_EFFECTING) is None
    # an unnamed router (a lambda) still becomes a decision span
    assert [attr(d, A.CAUSAL_DECISION_CHOICE) for d in tree.typed("decision")] == ["plan", "notify"]


def test_explicit_hop_nodes_and_answer_nodes(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph(), hop_nodes=["read"], answer_nodes=["read"])
    ig.invoke(loop_input())
    tree = spans().of_trace(ig.last_run_id)
    # read is both: answer nodes run outside hops, so no hop opens; the answer comes from read
    assert tree.typed("hop") == []
    assert attr(tree.one("answer"), A.CAUSAL_ANSWER_TEXT) == ANSWER
    assert tree.parent(tree.one("answer")) is tree.named("read", "node")[-1]

    ig2 = make_instrumented(build_loop_graph(), hop_nodes="read")
    ig2.invoke(loop_input())
    tree = spans().of_trace(ig2.last_run_id)
    assert tree.node_sequence() == [
        ("retrieve", None),
        ("read", 1),
        ("retrieve", 1),
        ("read", 2),
        ("retrieve", 2),
        ("read", 3),
        ("answer", None),
    ]
    # the retrieval in hop 1 defines its sub-query even though another node opened the hop
    assert attr(tree.hops()[1], A.CAUSAL_HOP_SUB_QUERY) == SUBQUERIES[1]


def test_unknown_node_names_are_rejected():
    with pytest.raises(
        ValueError,
        match=r"hop_nodes names unknown node\(s\) \['fetch'\]; the graph's nodes are \['answer', 'read', 'retrieve'\]",
    ):
        instrument(build_loop_graph(), store=None, hop_nodes=["fetch"])
    with pytest.raises(ValueError, match="answer_nodes names unknown"):
        instrument(build_loop_graph(), store=None, answer_nodes=["final"])


class _Holder:
    """Hides a retriever from static inference (an attribute of an object in the node's state)."""

    def __init__(self) -> None:
        self.retriever = KeywordRetriever()


def test_retrievals_in_unrecognised_nodes_open_hops_lazily(make_instrumented, spans):
    holder = _Holder()

    def work(state: S, config: RunnableConfig) -> dict[str, Any]:
        found = config["configurable"]["holder"].retriever.invoke(state["query"])
        return {"hops": state.get("hops", 0) + 1, "query": "Ilka Morrow born", "sent": [found[0].id]}

    def check(state: S) -> dict[str, Any]:
        return {}

    g = StateGraph(S)
    g.add_node("work", work)
    g.add_node("check", check)
    g.add_edge(START, "work")
    g.add_edge("work", "check")
    g.add_conditional_edges("check", lambda s: "work" if s["hops"] < 3 else END, ["work", END])
    ig = make_instrumented(g.compile())
    assert "work" not in ig.handler.info.hop_nodes
    ig.invoke({"query": "Zorvex Labs founded", "hops": 0}, {"configurable": {"holder": holder}})
    tree = spans().of_trace(ig.last_run_id)
    run = tree.one("run")
    works = tree.named("work", "node")
    # 1st execution: under the run, its retrieval opens hop 1 on the spot; later ones open hops at start
    assert [attr(w, A.CAUSAL_HOP_INDEX) for w in works] == [1, 2, 3]
    assert tree.parent(works[0]) is run
    assert [tree.parent(w) for w in works[1:]] == [tree.hops()[2], tree.hops()[3]]
    assert [n for n, _ in tree.node_sequence()] == ["work", "check"] * 3
    assert [attr(c, A.CAUSAL_HOP_INDEX) for c in tree.named("check", "node")] == [1, 2, 3]
    assert attr(tree.hops()[1], A.CAUSAL_HOP_SUB_QUERY) == "Zorvex Labs founded"


def test_side_effecting_and_hop_marked_tools(make_instrumented, spans):
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        return "sent"

    @side_effecting
    @tool
    def write_file(path: str) -> str:
        """Write a file."""
        return "ok"

    @hop_node
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return "found " + query

    calls = [
        [("lookup", {"query": "first"}), ("lookup", {"query": "second"})],
        [("send_email", {"to": "a@b.example.org", "body": "hi"}), ("write_file", {"path": "/tmp/x"})],
    ]

    def respond(messages: list) -> AIMessage:
        turn = sum(1 for m in messages if m.type == "ai")
        if turn < len(calls):
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": n, "args": a, "id": f"c{turn}{i}", "type": "tool_call"}
                    for i, (n, a) in enumerate(calls[turn])
                ],
            )
        return AIMessage(content="done")

    agent = build_agent(extra_tools=[send_email, write_file, lookup], respond=respond)
    ig = make_instrumented(agent, side_effecting=["send_email"])
    ig.invoke({"messages": [("user", "go")]})
    tree = spans().of_trace(ig.last_run_id)
    tools = {s.name: s for s in tree.typed("tool")}
    assert attr(tools["send_email"], A.CAUSAL_TOOL_SIDE_EFFECTING) is True
    assert attr(tools["write_file"], A.CAUSAL_TOOL_SIDE_EFFECTING) is True
    assert attr(tools["lookup"], A.CAUSAL_TOOL_SIDE_EFFECTING) is None
    # create_agent sends each tool call of a turn to its own `tools` execution (a Send each), so each
    # call is a hop; parallel hops are numbered in start order, hence the sets
    by_hop = {attr(s, A.CAUSAL_HOP_INDEX): s.name for s in tree.typed("tool")}
    assert sorted(by_hop) == [1, 2, 3, 4]
    assert {by_hop[1], by_hop[2]} == {"lookup"} and {by_hop[3], by_hop[4]} == {"send_email", "write_file"}
    hops = tree.hops()
    assert {attr(hops[1], A.CAUSAL_HOP_SUB_QUERY), attr(hops[2], A.CAUSAL_HOP_SUB_QUERY)} == {
        "first",
        "second",
    }


def test_a_hop_marked_tool_opens_a_hop_per_call_inside_one_node(make_instrumented, spans):
    @hop_node
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return "found " + query

    def research(state: S) -> dict[str, Any]:
        for q in ("first", "second", "third"):
            lookup.invoke({"query": q})
        return {"hops": 3}

    g = StateGraph(S)
    g.add_node("research", research)
    g.add_edge(START, "research")
    g.add_edge("research", END)
    ig = make_instrumented(g.compile())
    ig.invoke({})
    tree = spans().of_trace(ig.last_run_id)
    assert [
        (attr(s, A.CAUSAL_HOP_INDEX), json.loads(attr(s, A.TOOL_PARAMETERS))["query"])
        for s in tree.typed("tool")
    ] == [
        (1, "first"),
        (2, "second"),
        (3, "third"),
    ]
    assert [attr(h, A.CAUSAL_HOP_SUB_QUERY) for _, h in sorted(tree.hops().items())] == [
        "first",
        "second",
        "third",
    ]
    assert attr(tree.one("node"), A.CAUSAL_HOP_INDEX) == 3  # the node carries its latest hop


def test_command_goto_becomes_a_decision(make_instrumented, spans):
    def start(state: S) -> Command:
        return Command(update={"query": "x"}, goto="finish")

    def finish(state: S) -> dict[str, Any]:
        return {"answer": "done"}

    g = StateGraph(S)
    g.add_node("start", start, destinations=("finish",))
    g.add_node("finish", finish)
    g.add_edge(START, "start")
    g.add_edge("finish", END)
    ig = make_instrumented(g.compile())
    assert ig.invoke({})["answer"] == "done"
    tree = spans().of_trace(ig.last_run_id)
    (decision,) = tree.typed("decision")
    assert decision.name == "goto" and attr(decision, A.CAUSAL_DECISION_CHOICE) == "finish"
    assert tree.parent(decision) is tree.named("start", "node")[0]


# --- checkpoints, passthrough, the replay hook ---------------------------------------------------
def test_checkpoint_ids_map_to_the_graph_history(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph(checkpointer=new_saver()))
    cfg = {"configurable": {"thread_id": "ck"}}
    ig.invoke(loop_input(), cfg)
    nodes = spans().of_trace(ig.last_run_id).typed("node")
    history = {s.config["configurable"]["checkpoint_id"]: s for s in ig.get_state_history(cfg)}
    for node in nodes:
        snapshot = history[attr(node, A.CAUSAL_CHECKPOINT_ID)]
        assert snapshot.next == (node.name,)
        assert snapshot.metadata["step"] + 1 == attr(node, A.CAUSAL_LANGGRAPH_STEP)
    assert ig.get_state(cfg).values["answer"] == ANSWER


def test_no_checkpoint_id_without_a_checkpointer(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    ig.invoke(loop_input())
    assert all(attr(n, A.CAUSAL_CHECKPOINT_ID) is None for n in spans().typed("node"))


def test_fork_through_update_state_is_a_new_traced_run(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph(checkpointer=new_saver()))
    cfg = {"configurable": {"thread_id": "fork"}}
    ig.invoke(loop_input(), cfg)
    first = ig.last_run_id
    before_read = next(s for s in ig.get_state_history(cfg) if s.next == ("read",) and s.values["hops"] == 3)
    fork = ig.update_state(before_read.config, {"answer": "Atlantis"}, as_node="read")
    out = ig.invoke(None, fork)
    assert out["answer"] == "Atlantis"
    assert ig.last_run_id != first
    tree = spans().of_trace(ig.last_run_id)
    assert tree.node_sequence() == [("answer", None)]
    assert attr(tree.one("answer"), A.CAUSAL_ANSWER_TEXT) == "Atlantis"


def test_node_override_hook_freezes_a_node(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    seen: list[tuple[str, int]] = []

    def override(node: str, state: dict, config: dict) -> tuple[bool, Any]:
        seen.append((node, state.get("hops", 0)))
        if node == "read" and state["hops"] == 1:
            return True, {"answer": "frozen answer"}
        return False, None

    out = ig.invoke(loop_input(), {"configurable": {OVERRIDE_KEY: override}})
    assert out["answer"] == "frozen answer"
    assert seen == [("retrieve", 0), ("read", 1), ("answer", 1)]
    tree = spans().of_trace(ig.last_run_id)
    read = tree.named("read", "node")[0]
    assert attr(read, A.CAUSAL_NODE_FROZEN) is True
    assert tree.children(read, "llm") == []  # the model was not called
    assert attr(tree.named("retrieve", "node")[0], A.CAUSAL_NODE_FROZEN) is None


def test_with_config_keeps_tracing(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph(checkpointer=new_saver()))
    bound = ig.with_config(configurable={"thread_id": "bound"}, recursion_limit=50)
    assert bound.invoke(loop_input())["answer"] == ANSWER
    assert bound.last_run_id == ig.last_run_id
    assert attr(spans().of_trace(bound.last_run_id).one("run"), A.SESSION_ID) == "bound"
    assert ig.get_state({"configurable": {"thread_id": "bound"}}).values["answer"] == ANSWER


def test_the_original_graph_is_not_modified(make_instrumented, spans):
    graph = build_loop_graph()
    bound_before = {name: node.bound for name, node in graph.nodes.items()}
    make_instrumented(graph).invoke(loop_input())
    assert {name: node.bound for name, node in graph.nodes.items()} == bound_before
    count = len(spans().spans)
    graph.invoke(loop_input())  # the original runs untraced
    assert len(spans().spans) == count


# --- the handler on its own ---------------------------------------------------------------------
def test_standalone_handler_via_config_callbacks(tracer_provider, span_exporter):
    graph = build_loop_graph()
    handler = CausalCallbackHandler(tracer_provider, graph=graph)
    assert graph.invoke(loop_input(), {"callbacks": [handler]})["answer"] == ANSWER
    tree = SpanTree(span_exporter.get_finished_spans()).of_trace(handler.last_run_id)
    assert [attr(h, A.CAUSAL_HOP_SUB_QUERY) for h in tree.hops().values()] == SUBQUERIES
    assert doc_ids(tree.typed("retrieval")[0]) == ["p1", "p5"]
    assert handler.open_spans == 0


def test_standalone_handler_without_a_graph_infers_hops_lazily(tracer_provider, span_exporter):
    handler = CausalCallbackHandler(tracer_provider)
    build_loop_graph(model=ScriptedChatModel()).invoke(loop_input(), {"callbacks": [handler]})
    tree = SpanTree(span_exporter.get_finished_spans())
    assert [attr(h, A.CAUSAL_HOP_SUB_QUERY) for h in tree.hops().values()] == SUBQUERIES
    assert attr(tree.one("answer"), A.CAUSAL_ANSWER_TEXT) == ANSWER


# --- bad input ------------------------------------------------------------------------------------
def test_bad_arguments_are_named(tracer_provider):
    graph = build_loop_graph()
    builder = StateGraph(S)
    builder.add_node("a", lambda s: {})
    builder.add_edge(START, "a")
    with pytest.raises(
        TypeError, match=r"compiled LangGraph graph, got StateGraph \(call .compile\(\) first\)"
    ):
        instrument(builder, store=None)
    with pytest.raises(TypeError, match="store must be a path, a SpanStore or None, got int"):
        instrument(graph, store=3)
    with pytest.raises(TypeError, match="tracer_provider must be an opentelemetry.sdk.trace.TracerProvider"):
        instrument(graph, store=None, tracer_provider=object())
    with pytest.raises(ValueError, match="capture_content must be one of"):
        instrument(graph, store=None, capture_content="partial")
    ig = instrument(graph, store=None, tracer_provider=tracer_provider)
    with pytest.raises(ValueError, match="already instrumented"):
        instrument(ig, store=None)
    with pytest.raises(ValueError, match="otlp_protocol must be one of"):
        instrument(graph, store=None, otlp_endpoint="http://127.0.0.1:9", otlp_protocol="udp")
    ig.shutdown()
