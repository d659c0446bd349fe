"""A user's own agentic-RAG graph (not the reference agent): plan -> retrieve -> read, twice.

Its corpus holds a keyword-stuffed page that outranks the true passage, so the run fails:

    python examples/my_rag_agent.py                    # records one run into my_runs.db (failure)
    causal-mw diagnose RUN --method crs --graph examples/my_rag_agent.py:graph --store my_runs.db
    causal-mw repair RUN --graph examples/my_rag_agent.py:graph --store my_runs.db

Nothing here knows about causal-middleware but the last lines: the interventions are derived from
the trace and the graph's own retriever.
"""

from __future__ import annotations

import operator
import os
import re
import sqlite3
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from rank_bm25 import BM25Okapi

CORPUS = [
    Document(
        id="wiki/curie", page_content="Marie Curie was born in Warsaw, then part of the Russian Empire."
    ),
    Document(id="wiki/warsaw", page_content="Warsaw lies on the Vistula river in Poland."),
    Document(
        id="seo/curie",
        page_content="Marie Curie born where? Marie Curie born: Marie Curie was born in Paris.",
    ),
    Document(id="wiki/paris", page_content="Paris lies on the Seine river in France."),
    Document(id="wiki/pierre", page_content="Pierre Curie was born in Paris in 1859."),
    Document(
        id="wiki/nobel", page_content="The Nobel Prize in Physics 1903 went to the Curies and Becquerel."
    ),
    Document(id="wiki/krakow", page_content="Krakow lies on the Vistula river too, upstream of Warsaw."),
]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class BM25Retriever(BaseRetriever):
    docs: list[Document]
    k: int = 1

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        scores = BM25Okapi([_words(d.page_content) for d in self.docs]).get_scores(_words(query))
        ranked = sorted(range(len(self.docs)), key=lambda i: -scores[i])
        return [self.docs[i] for i in ranked[: self.k]]


retriever = BM25Retriever(docs=CORPUS)


class State(TypedDict, total=False):
    question: str
    plan: list[str]
    docs: list[Document]
    notes: Annotated[list[str], operator.add]
    answer: str


def plan(state: State) -> State:
    return {"plan": ["Where was Marie Curie born?", "Which river does {0} lie on?"]}


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


def _build() -> object:
    g = StateGraph(State)
    for name, fn in [("plan", plan), ("retrieve", retrieve), ("read", read), ("answer", answer)]:
        g.add_node(name, fn)
    g.add_edge(START, "plan")
    g.add_edge("plan", "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: "answer" if len(s["notes"]) >= 2 else "retrieve")
    g.add_edge("answer", END)
    path = os.environ.get("MY_AGENT_CHECKPOINTS", "my_agent.checkpoints.db")
    return g.compile(checkpointer=SqliteSaver(sqlite3.connect(path, check_same_thread=False)))


graph = _build()

if __name__ == "__main__":
    import uuid

    from causal_middleware import instrument

    agent = instrument(graph, store=os.environ.get("MY_AGENT_STORE", "my_runs.db"))
    config = {"configurable": {"thread_id": uuid.uuid4().hex}, "metadata": {"causal_reference": "Vistula"}}
    print(
        "answer:",
        agent.invoke({"question": "Which river flows through Marie Curie's birthplace?"}, config)["answer"],
    )
    print("run:", agent.last_run_id)
    agent.shutdown()
