"""Subgraphs: a step inside one cannot be forked (langgraph#8458); its parent-graph node can."""

from __future__ import annotations

import collections
import operator
from typing import Annotated, Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer, ReplayError
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.store.memory import InMemorySpanStore


class _State(TypedDict, total=False):
    docs: Annotated[list[str], operator.add]
    answer: str


def _graph() -> tuple[Any, collections.Counter[str]]:
    calls: collections.Counter[str] = collections.Counter()

    def step(name: str, doc: str | None = None) -> Any:
        def run(state: _State) -> dict[str, Any]:
            calls[name] += 1
            if name == "answer":
                return {"answer": ",".join(state["docs"])}
            return {"docs": [doc]} if doc else {}

        return run

    inner = StateGraph(_State)
    inner.add_node("fetch", step("fetch", "a"))
    inner.add_node("refine", step("refine", "b"))
    inner.add_edge(START, "fetch")
    inner.add_edge("fetch", "refine")
    inner.add_edge("refine", END)
    outer = StateGraph(_State)
    outer.add_node("plan", step("plan"))
    outer.add_node("research", inner.compile())
    outer.add_node("answer", step("answer"))
    outer.add_edge(START, "plan")
    outer.add_edge("plan", "research")
    outer.add_edge("research", "answer")
    outer.add_edge("answer", END)
    graph = instrument(
        outer.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore(), hop_nodes=["fetch"]
    )
    return graph, calls


def test_forking_inside_a_subgraph_raises_a_clear_error() -> None:
    graph, _ = _graph()
    graph.invoke({"docs": []}, {"configurable": {"thread_id": "s"}})
    run_id = graph.last_run_id
    trajectory = graph.store.get_trajectory(run_id)
    inner = next(s for s in trajectory.steps if s.kind == "node" and s.node == "refine")
    assert "|" in (inner.checkpoint_ns or "")
    with pytest.raises(
        ReplayError, match=r"inside subgraph 'research'.*langgraph#8458.*node='research', step=2"
    ):
        Replayer(graph).fork(run_id, node="refine", values={"docs": ["X"]})


def test_forking_the_subgraph_node_replaces_its_whole_output() -> None:
    graph, calls = _graph()
    graph.invoke({"docs": []}, {"configurable": {"thread_id": "s"}})
    run_id = graph.last_run_id
    replayer = Replayer(graph)
    point = replayer.locate(run_id, node="research")
    assert point.recorded_output == {"docs": ["a", "b"]}
    calls.clear()
    fork = replayer.fork(run_id, node="research", values={"docs": ["X"]})
    assert fork.answer == "X"
    assert calls == collections.Counter({"answer": 1})  # the subgraph did not run again
    calls.clear()
    frozen = replayer.fork(run_id, node="plan", mode="frozen", rerun=["answer"])
    assert frozen.answer == "a,b" and calls == collections.Counter({"answer": 1})
