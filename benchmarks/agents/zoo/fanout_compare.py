"""(c) A planner that decomposes the question before any retrieval, then a ``Send`` fan-out of one
compiled ``research`` subgraph (``fetch`` -> ``extract``) per sub-question, then ``compare``.
Questions: "Which was released first, A or B?"."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from ..readers import link, parse_compare, read_value
from ..retrievers import BM25Retriever, to_documents
from ..world import Task, parse_sub_question, sub_question
from .base import AgentUnderTest

SHAPE = "fanout_compare"
FAMILY = "compare"
CAUSES = ("poisoned_document", "missing_document", "planner_error", "reader_error")
TRUTH_BY_ENTITY = True  # branch executions are matched by the entity their input names


class State(TypedDict, total=False):
    question: str
    subquestions: list[str]
    findings: Annotated[list[dict[str, str]], operator.add]
    answer: str


class Branch(TypedDict, total=False):
    subquestion: str
    hits: list[Document]
    findings: Annotated[list[dict[str, str]], operator.add]


def build(task: Task) -> AgentUnderTest:
    retriever = BM25Retriever(documents=to_documents(task.passages), k=3)
    aliases = dict(task.aliases)

    def fetch(state: Branch) -> dict[str, Any]:
        return {"hits": retriever.invoke(state["subquestion"])}

    def extract(state: Branch) -> dict[str, Any]:
        parsed = parse_sub_question(state["subquestion"])
        year = "unknown"
        if parsed is not None:
            year = read_value([d.page_content for d in state.get("hits", [])], parsed[0], parsed[1])
        subject = parsed[1] if parsed else state["subquestion"]
        return {"findings": [{"film": subject, "year": year}]}

    sub = StateGraph(Branch)
    sub.add_node("fetch", fetch)
    sub.add_node("extract", extract)
    sub.add_edge(START, "fetch")
    sub.add_edge("fetch", "extract")
    sub.add_edge("extract", END)
    research = sub.compile()

    def plan(state: State) -> dict[str, Any]:
        pair = parse_compare(state["question"])
        if pair is None:
            return {"subquestions": []}
        return {"subquestions": [sub_question("released", link(e, aliases)) for e in pair]}

    def fan_out(state: State) -> list[Send]:
        return [Send("research", {"subquestion": q}) for q in state.get("subquestions", [])]

    def compare(state: State) -> dict[str, Any]:
        dated = [f for f in state.get("findings", []) if f["year"].isdigit()]
        if len(dated) < 2:
            return {"answer": "unknown"}
        return {"answer": min(dated, key=lambda f: int(f["year"]))["film"]}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("research", research)
    g.add_node("compare", compare)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["research"])
    g.add_edge("research", "compare")
    g.add_edge("compare", END)
    return AgentUnderTest(g.compile(checkpointer=InMemorySaver()), {"question": task.question})


def truth(task: Task) -> tuple[str, int | None]:
    node = {
        "poisoned_document": "fetch",
        "missing_document": "fetch",
        "planner_error": "plan",
        "reader_error": "extract",
    }[task.cause]
    return node, (1 if node == "plan" else None)


def answer(output: dict[str, Any]) -> str | None:
    return output.get("answer")
