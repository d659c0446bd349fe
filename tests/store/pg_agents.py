"""Agent processes for the Postgres store tests: a small real LangGraph graph, instrumented with
``store=<postgresql:// URL>``, run a few times in a process of its own (multiprocessing spawn)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    question: str
    docs: Annotated[list[str], operator.add]
    answer: str


def build_graph(worker: int) -> object:
    def retrieve(state: State) -> State:
        hop = len(state.get("docs") or [])
        return {"docs": [f"w{worker}-{state['question']}-doc{hop}"]}

    def answer(state: State) -> State:
        return {"answer": f"{state['question']}:{len(state['docs'])}"}

    g = StateGraph(State)
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_conditional_edges("retrieve", lambda s: "answer" if len(s["docs"]) >= 2 else "retrieve")
    g.add_edge("answer", END)
    return g.compile(checkpointer=InMemorySaver(), name="pg-agent")


def run_agent(url: str, worker: int, n_runs: int) -> list[str]:
    """Run ``n_runs`` runs of worker ``worker``'s graph into the store at ``url``; their run ids."""
    from causal_middleware import instrument

    agent = instrument(build_graph(worker), store=url, hop_nodes=["retrieve"], answer_nodes=["answer"])  # type: ignore[arg-type]
    run_ids = []
    for k in range(n_runs):
        config = {
            "configurable": {"thread_id": f"w{worker}-t{k}"},
            "metadata": {"causal_labels": {"worker": worker, "k": k}},
        }
        agent.invoke({"question": f"q{worker}x{k}"}, config)
        assert agent.last_run_id is not None
        run_ids.append(agent.last_run_id)
    agent.shutdown()
    return run_ids


def open_and_report(url: str) -> int:
    """Open the store (running its migrations) and report the schema version found."""
    from causal_middleware.store.postgres import PostgresSpanStore

    with PostgresSpanStore(url) as store:
        return store.schema_version
