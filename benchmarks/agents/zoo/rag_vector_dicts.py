"""(b) A think -> search -> extract loop whose planner (``think``) also routes (continue or
respond); an ``InMemoryVectorStore`` retriever over a deterministic bag-of-words ``Embeddings``;
retrieved documents held in state as plain dicts, findings as a list of dicts."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from ..readers import link, parse_bridge, read_value
from ..retrievers import vector_store
from ..world import Task, parse_sub_question, sub_question
from .base import AgentUnderTest

SHAPE = "rag_vector_dicts"
FAMILY = "bridge"
CAUSES = ("poisoned_document", "missing_document", "planner_error", "reader_error")


class State(TypedDict, total=False):
    question: str
    request: str
    passages: list[dict[str, Any]]
    notes: list[dict[str, str]]
    final_answer: str


def build(task: Task) -> AgentUnderTest:
    retriever = vector_store(task.passages).as_retriever(search_kwargs={"k": 3})
    aliases = dict(task.aliases)

    def think(state: State) -> dict[str, Any]:
        notes = state.get("notes", [])
        parsed = parse_bridge(state["question"])
        if parsed is None or len(notes) >= 2:
            return {}
        r1, r2, entity = parsed
        if not notes:
            return {"request": sub_question(r1, link(entity, aliases))}
        return {"request": sub_question(r2, link(notes[-1]["found"], aliases))}

    def route(state: State) -> str:
        return "respond" if len(state.get("notes", [])) >= 2 else "search"

    def search(state: State) -> dict[str, Any]:
        docs = retriever.invoke(state["request"])
        return {"passages": [{"doc_id": d.id, "text": d.page_content} for d in docs]}

    def extract(state: State) -> dict[str, Any]:
        parsed = parse_sub_question(state["request"])
        found = "unknown"
        if parsed is not None:
            found = read_value([p["text"] for p in state.get("passages", [])], parsed[0], parsed[1])
        return {"notes": [*state.get("notes", []), {"ask": state["request"], "found": found}]}

    def respond(state: State) -> dict[str, Any]:
        notes = state.get("notes", [])
        return {"final_answer": notes[-1]["found"] if notes else "unknown"}

    g = StateGraph(State)
    for name, fn in (("think", think), ("search", search), ("extract", extract), ("respond", respond)):
        g.add_node(name, fn)
    g.add_edge(START, "think")
    g.add_conditional_edges("think", route, ["search", "respond"])
    g.add_edge("search", "extract")
    g.add_edge("extract", "think")
    g.add_edge("respond", END)
    return AgentUnderTest(g.compile(checkpointer=InMemorySaver()), {"question": task.question, "notes": []})


def truth(task: Task) -> tuple[str, int]:
    node = {
        "poisoned_document": "search",
        "missing_document": "search",
        "planner_error": "think",
        "reader_error": "extract",
    }[task.cause]
    return node, task.hop


def answer(output: dict[str, Any]) -> str | None:
    return output.get("final_answer")
