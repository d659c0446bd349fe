"""(a) A plan -> retrieve -> read loop over a BM25 ``BaseRetriever``; documents kept as LangChain
``Document``s in state; the planner links entities through the world's gazetteer."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.documents import Document
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from ..readers import link, parse_bridge, read_value
from ..retrievers import BM25Retriever, to_documents
from ..world import Task, parse_sub_question, sub_question
from .base import AgentUnderTest

SHAPE = "rag_bm25_loop"
FAMILY = "bridge"
CAUSES = ("poisoned_document", "missing_document", "planner_error", "reader_error")


class State(TypedDict, total=False):
    question: str
    query: str
    docs: list[Document]
    bridge: str
    hop: int
    answer: str


def build(task: Task) -> AgentUnderTest:
    retriever = BM25Retriever(documents=to_documents(task.passages), k=3)
    aliases = dict(task.aliases)

    def plan(state: State) -> dict[str, Any]:
        parsed = parse_bridge(state["question"])
        if parsed is None:
            return {"query": state["question"]}
        r1, r2, entity = parsed
        if state.get("hop", 0) == 0:
            return {"query": sub_question(r1, link(entity, aliases))}
        return {"query": sub_question(r2, link(state["bridge"], aliases))}

    def retrieve(state: State) -> dict[str, Any]:
        return {"docs": retriever.invoke(state["query"])}

    def read(state: State) -> dict[str, Any]:
        parsed = parse_sub_question(state["query"])
        value = "unknown"
        if parsed is not None:
            value = read_value([d.page_content for d in state.get("docs", [])], parsed[0], parsed[1])
        return {"bridge": value, "hop": state.get("hop", 0) + 1}

    def finish(state: State) -> dict[str, Any]:
        return {"answer": state.get("bridge", "unknown")}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("finish", finish)
    g.add_edge(START, "plan")
    g.add_edge("plan", "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: "plan" if s.get("hop", 0) < 2 else "finish", ["plan", "finish"])
    g.add_edge("finish", END)
    return AgentUnderTest(g.compile(checkpointer=InMemorySaver()), {"question": task.question, "hop": 0})


def truth(task: Task) -> tuple[str, int]:
    """(node, k-th execution) the plant corrupts."""
    node = {
        "poisoned_document": "retrieve",
        "missing_document": "retrieve",
        "planner_error": "plan",
        "reader_error": "read",
    }[task.cause]
    return node, task.hop


def answer(output: dict[str, Any]) -> str | None:
    return output.get("answer")
