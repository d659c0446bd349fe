"""A conditional edge whose router has no name of its own (a lambda, a partial) is traced as a
decision on ``ainvoke`` exactly as on ``invoke``: LangGraph's async path reports such a router's
callback with ``name=None`` where its sync path reports ``get_name()``."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.store.memory import InMemorySpanStore


class _State(TypedDict, total=False):
    n: int
    answer: str


def _more(limit: int, state: _State) -> str:
    return "step" if state["n"] < limit else "finish"


def _graph(router: Any) -> Any:
    g = StateGraph(_State)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_node("finish", lambda s: {"answer": str(s["n"])})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", router, ["step", "finish"])
    g.add_edge("finish", END)
    return instrument(g.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore())


_ROUTERS = {
    "lambda": lambda s: "step" if s["n"] < 3 else "finish",
    "partial": functools.partial(_more, 3),
}


def _decisions(graph: Any, run_id: str) -> list[tuple[str, str | None, list[str], int | None]]:
    trajectory = graph.store.get_trajectory(run_id)
    return [(s.name, s.choice, s.options, s.langgraph_step) for s in trajectory.steps if s.kind == "decision"]


@pytest.mark.parametrize("kind", sorted(_ROUTERS))
def test_ainvoke_records_the_same_decisions_as_invoke(kind: str) -> None:
    graph = _graph(_ROUTERS[kind])
    graph.invoke({"n": 0}, {"configurable": {"thread_id": "sync"}})
    sync_run = graph.last_run_id

    async def main() -> str | None:
        await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": "async"}})
        return graph.last_run_id

    async_run = asyncio.run(main())
    assert sync_run is not None and async_run is not None and async_run != sync_run
    sync_decisions = _decisions(graph, sync_run)
    assert [d[1] for d in sync_decisions] == ["step", "step", "finish"]
    assert _decisions(graph, async_run) == sync_decisions


@pytest.mark.parametrize("mode", ["frozen", "regenerate"])
def test_an_async_fork_keeps_its_decisions(mode: str) -> None:
    graph = _graph(_ROUTERS["lambda"])
    graph.invoke({"n": 0}, {"configurable": {"thread_id": "t"}})
    run_id = graph.last_run_id
    assert run_id is not None
    replayer = Replayer(graph)
    sync_fork = replayer.fork(run_id, node="step", step=2, mode=mode)
    async_fork = asyncio.run(replayer.afork(run_id, node="step", step=2, mode=mode))
    kinds = [s.kind for s in sync_fork.steps]
    assert kinds.count("decision") >= 2  # the copied prefix's and the live suffix's
    assert [s.kind for s in async_fork.steps] == kinds
    assert [(s.name, s.choice) for s in async_fork.steps if s.kind == "decision"] == [
        (s.name, s.choice) for s in sync_fork.steps if s.kind == "decision"
    ]
