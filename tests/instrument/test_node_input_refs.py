"""Issue 16 item 2: node spans carry what changed (each distinct state value once per run, grown
lists as base + tail), and the trajectory still holds every node's whole input."""

from __future__ import annotations

import copy
import json
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore


class S(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    messages: Annotated[list[Any], operator.add]
    facts: dict[str, Any]
    rounds: int


class P(TypedDict, total=False):
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    topic: str


def loop_graph(seen: list[tuple[str, Any]]) -> Any:
    def retrieve(state: S) -> dict[str, Any]:
        seen.append(("retrieve", copy.deepcopy(state)))
        n = state.get("rounds", 0)
        return {"evidence": [f"passage {n} about {state['query']}"], "messages": [HumanMessage(f"q{n}")]}

    def read(state: S) -> dict[str, Any]:
        seen.append(("read", copy.deepcopy(state)))
        n = state.get("rounds", 0) + 1
        facts = {**state.get("facts", {}), f"f{n}": {"year": 2000 + n, "names": ["a", "b"]}}
        return {"rounds": n, "query": f"next {n}", "facts": facts, "messages": [AIMessage(f"a{n}")]}

    g = StateGraph(S)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: END if s["rounds"] >= 4 else "retrieve", ["retrieve", END])
    return g.compile(checkpointer=InMemorySaver())


def _plain(value: Any) -> Any:
    from causal_middleware.integrations.langgraph.extract import to_json

    return json.loads(to_json(value))


def test_node_steps_hold_the_whole_input_while_spans_hold_what_changed() -> None:
    seen: list[tuple[str, Any]] = []
    store = InMemorySpanStore()
    graph = instrument(loop_graph(seen), store=store)
    graph.invoke({"question": "Where?", "query": "start"}, {"configurable": {"thread_id": "t"}})
    run_id = graph.last_run_id
    assert run_id is not None
    trajectory = store.get_trajectory(run_id)
    nodes = [s for s in trajectory.steps if s.kind == "node"]
    assert [(s.node, s.input) for s in nodes] == [(name, _plain(state)) for name, state in seen]
    assert A.CAUSAL_NODE_INPUT_REFS not in nodes[0].attributes  # consumed, like input.value

    spans = [s for s in store.get_spans(run_id) if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "node"]
    written = [json.loads(s.attributes[A.INPUT_VALUE]) for s in spans]
    assert sum(1 for w in written if "question" in w) == 1  # the question is written once per run
    refs = [json.loads(s.attributes[A.CAUSAL_NODE_INPUT_REFS]) for s in spans]
    extended = [r for rs in refs for r in rs if r[0] == "evidence" and isinstance(r[2], list)]
    assert extended  # the growing list is written as its earlier value plus the new tail
    last_evidence = next(w["evidence"] for w in reversed(written) if "evidence" in w)
    assert len(last_evidence) == 1  # only the tail
    graph.shutdown()


def test_the_sqlite_store_and_an_otlp_round_trip_rebuild_the_same_inputs(tmp_path: Any) -> None:
    seen: list[tuple[str, Any]] = []
    store = SqliteSpanStore(tmp_path / "runs.db")
    graph = instrument(loop_graph(seen), store=store)
    graph.invoke({"question": "Where?", "query": "start"}, {"configurable": {"thread_id": "t"}})
    run_id = graph.last_run_id
    assert run_id is not None
    expected = [_plain(state) for _, state in seen]
    assert [s.input for s in store.get_trajectory(run_id).steps if s.kind == "node"] == expected
    path = tmp_path / "run.json"
    store.export_otlp_json(path, [run_id])
    other = InMemorySpanStore()
    other.import_otlp_json(path)
    assert [s.input for s in other.get_trajectory(run_id).steps if s.kind == "node"] == expected
    graph.shutdown()
    store.close()


def test_a_partial_trace_leaves_out_only_what_it_cannot_rebuild() -> None:
    seen: list[tuple[str, Any]] = []
    store = InMemorySpanStore()
    graph = instrument(loop_graph(seen), store=store)
    graph.invoke({"question": "Where?", "query": "start"}, {"configurable": {"thread_id": "t"}})
    run_id = graph.last_run_id
    assert run_id is not None
    spans = store.get_spans(run_id)
    first_node = next(s for s in spans if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "node")
    rest = [s for s in spans if s.span_id != first_node.span_id]
    trajectory = build_trajectory(rest, run_id=run_id)
    later = [s for s in trajectory.steps if s.kind == "node"]
    assert all("question" not in s.input for s in later)  # written only by the span that is gone
    assert later[-1].input["rounds"] == 3  # values later spans wrote are still there
    assert later[-1].input["facts"] == _plain(seen[-1][1])["facts"]
    graph.shutdown()


def test_parallel_branches_of_one_run_rebuild_their_own_inputs() -> None:
    seen: list[Any] = []

    def fan(state: P) -> list[Send]:
        return [Send("work", {"topic": t, "notes": []}) for t in state["topics"]]

    def work(state: P) -> dict[str, Any]:
        seen.append(copy.deepcopy(state))
        return {"notes": [f"note on {state['topic']}"]}

    g = StateGraph(P)
    g.add_node("work", work)
    g.add_node("done", lambda s: {})
    g.add_conditional_edges(START, fan, ["work"])
    g.add_edge("work", "done")
    g.add_edge("done", END)
    store = InMemorySpanStore()
    graph = instrument(g.compile(), store=store)
    graph.invoke({"topics": ["x", "y", "z"]})
    run_id = graph.last_run_id
    assert run_id is not None
    nodes = [s for s in store.get_trajectory(run_id).steps if s.kind == "node"]
    inputs = sorted(json.dumps(s.input, sort_keys=True) for s in nodes if s.node == "work")
    assert inputs == sorted(json.dumps(_plain(s), sort_keys=True) for s in seen)
    graph.shutdown()
