"""A user's own retrievers, written as a LangGraph user would: a BM25 ``BaseRetriever`` over
``rank_bm25`` and an ``InMemoryVectorStore`` with a bag-of-words embedding, both returning k=1."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph
from pydantic import ConfigDict
from rank_bm25 import BM25Okapi

TEXTS = [
    ("p-paris", "Paris", "Paris is the capital of France and sits on the Seine."),
    ("p-lyon", "Lyon", "Lyon is a French city at the confluence of the Rhone and the Saone."),
    ("p-berlin", "Berlin", "Berlin is the capital of Germany and its largest city."),
    ("p-seine", "Seine", "The Seine flows through Paris to the English Channel at Le Havre."),
    ("p-france", "France", "France is a country in Western Europe whose capital is Paris."),
    ("p-rome", "Rome", "Rome is the capital of Italy, on the Tiber."),
]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def corpus() -> list[Document]:
    """Ids by every branch of the id rule: ``Document.id``, ``metadata["id"]``, none (content hash)."""
    docs = []
    for i, (pid, title, text) in enumerate(TEXTS):
        if i % 3 == 0:
            docs.append(Document(id=pid, page_content=text, metadata={"title": title}))
        elif i % 3 == 1:
            docs.append(Document(page_content=text, metadata={"id": pid, "title": title}))
        else:
            docs.append(Document(page_content=text, metadata={"title": title, "lang": "en"}))
    return docs


class BM25Retriever(BaseRetriever):
    """Top ``k`` documents by BM25Okapi; no scores in the metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    docs: list[Document]
    bm25: Any
    k: int = 1

    @classmethod
    def over(cls, docs: list[Document], k: int = 1) -> BM25Retriever:
        return cls(docs=docs, bm25=BM25Okapi([_words(d.page_content) for d in docs]), k=k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        scores = self.bm25.get_scores(_words(query))
        order = sorted(range(len(self.docs)), key=lambda i: -scores[i])
        return [self.docs[i] for i in order[: self.k]]


class BagOfWords(Embeddings):
    """Words hashed into 64 dimensions, counted, L2-normalised: deterministic, no model."""

    dim = 64

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in _words(text):
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(BagOfWords())
    docs = corpus()
    store.add_documents(docs, ids=[pid for pid, _, _ in TEXTS])
    return store


class RagState(TypedDict, total=False):
    question: str
    docs: list[Document]
    answer: str


def rag_graph(retriever: BaseRetriever, *, audit: Any = None) -> Any:
    """plan -> retrieve -> answer; ``retrieve`` closes over ``retriever`` (and calls ``audit(q)``
    after retrieving, when given, to audit from inside the user's run)."""

    def plan(state: RagState) -> RagState:
        return {"question": state["question"].strip()}

    def retrieve(state: RagState) -> RagState:
        docs = retriever.invoke(state["question"])
        if audit is not None:
            audit(state["question"])
        return {"docs": docs}

    def answer(state: RagState) -> RagState:
        return {"answer": state["docs"][0].page_content if state["docs"] else ""}

    builder = StateGraph(RagState)
    builder.add_node("plan", plan)
    builder.add_node("retrieve", retrieve)
    builder.add_node("answer", answer)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "retrieve")
    builder.add_edge("retrieve", "answer")
    builder.add_edge("answer", END)
    return builder.compile()
