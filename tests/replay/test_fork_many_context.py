"""``Replayer.fork_many`` runs every fork in a copy of the caller's context, as a single fork does,
so a context variable the caller set (a scoped index override, a tenant) reaches the forks."""

from __future__ import annotations

import contextvars
import operator
from typing import Annotated, TypedDict

from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware.store.memory import InMemorySpanStore

CORPUS: contextvars.ContextVar[str] = contextvars.ContextVar("corpus", default="shared")


class State(TypedDict, total=False):
    question: str
    query: str
    seen: Annotated[list[str], operator.add]


def plan(state: State) -> dict[str, str]:
    return {"query": state["question"]}


def search(state: State) -> dict[str, list[str]]:
    return {"seen": [CORPUS.get()]}


def _graph():  # type: ignore[no-untyped-def]
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("search", search)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "search")
    builder.add_edge("search", END)
    return instrument(builder.compile(checkpointer=InMemorySaver()), store=InMemorySpanStore())


def test_forks_run_on_pool_threads_see_the_callers_context() -> None:
    graph = _graph()
    graph.invoke({"question": "q"}, {"configurable": {"thread_id": "t"}})
    run_id = graph.last_run_id
    replayer = Replayer(graph, max_concurrency=3)
    token = CORPUS.set("private")
    try:
        requests = [ForkRequest(run_id=run_id, node="plan", values={"query": f"q{i}"}) for i in range(3)]
        forks = replayer.fork_many(requests)
    finally:
        CORPUS.reset(token)
    for fork in forks:
        state = graph.graph.get_state({"configurable": {"thread_id": fork.thread_id}}).values
        assert state["seen"] == ["private"]
    graph.shutdown()
