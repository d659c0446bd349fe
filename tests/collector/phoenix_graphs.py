"""Small LangGraph graphs whose runs the Phoenix source tests record, export and pull back.

``rag_graph``: plan -> retrieve -> read, twice, -> answer, with a keyword retriever (one document
per query, ranked by word overlap) over a corpus where a keyword-stuffed page outranks the true
passage for the first question: a run asking where the founder of Zorvex Labs was born, reading
the river of that town, answers "Marl" instead of "Vessa" unless the first retrieval is repaired.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

CORPUS = [
    Document(id="wiki/morrow", page_content="Ilka Morrow, founder of Zorvex Labs, was born in Tessaly."),
    Document(id="wiki/tessaly", page_content="Tessaly lies on the Vessa river."),
    Document(
        id="seo/morrow",
        page_content="Zorvex Labs founder born where? Zorvex Labs founder born: the founder was born in Quell.",
    ),
    Document(id="wiki/quell", page_content="Quell lies on the Marl river."),
    Document(id="wiki/zorvex", page_content="Zorvex Labs makes copper sensors."),
]
QUESTION = "Which river flows through the birthplace of the founder of Zorvex Labs?"
REFERENCE = "Vessa"


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class KeywordRetriever(BaseRetriever):
    docs: list[Document]
    k: int = 1

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        wanted = _words(query)
        scores = [sum(_words(d.page_content).count(w) for w in wanted) for d in self.docs]
        ranked = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))
        return [self.docs[i] for i in ranked[: self.k]]


retriever = KeywordRetriever(docs=CORPUS)


class State(TypedDict, total=False):
    question: str
    plan: list[str]
    docs: list[Document]
    notes: Annotated[list[str], operator.add]
    answer: str


def plan(state: State) -> State:
    return {"plan": ["Where was the founder of Zorvex Labs born?", "Which river does {0} lie on?"]}


def retrieve(state: State) -> State:
    notes = state.get("notes") or []
    return {"docs": retriever.invoke(state["plan"][len(notes)].format(*notes))}


def read(state: State) -> State:
    text = " ".join(d.page_content for d in state["docs"])
    pattern = r"on the (\w+) river" if state.get("notes") else r"born in (\w+)"
    found = re.search(pattern, text)
    return {"notes": [found.group(1) if found else "unknown"]}


def answer(state: State) -> State:
    return {"answer": state["notes"][-1]}


def rag_graph() -> Any:
    g = StateGraph(State)
    for name, fn in (("plan", plan), ("retrieve", retrieve), ("read", read), ("answer", answer)):
        g.add_node(name, fn)  # type: ignore[call-overload]
    g.add_edge(START, "plan")
    g.add_edge("plan", "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: "answer" if len(s["notes"]) >= 2 else "retrieve")
    g.add_edge("answer", END)
    return g.compile(checkpointer=InMemorySaver())
