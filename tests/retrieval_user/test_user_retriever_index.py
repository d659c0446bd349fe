"""RetrieverIndex over a user's own retrievers: more candidates than the retriever's k, ids as
instrumentation records them, the user's retriever untouched, no callbacks or spans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from causal_middleware.integrations.langgraph import extract
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from user_retrievers import TEXTS, BM25Retriever, corpus, rag_graph, vector_store

from causal_middleware import instrument
from causal_middleware.retrieval.langchain import (
    RetrieverIndex,
    RetrieverSearchError,
    configured_k,
    document_id,
)

QUERY = "What is the capital of France on the Seine?"


def bm25() -> BM25Retriever:
    return BM25Retriever.over(corpus(), k=1)


def vs_retriever() -> BaseRetriever:
    return vector_store().as_retriever(search_kwargs={"k": 1})


RETRIEVERS = {"bm25": bm25, "vectorstore": vs_retriever}


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[str] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.starts.append(query)


def recorded_ids(exporter: InMemorySpanExporter) -> list[list[str]]:
    """Each recorded retrieval span's document ids, in order."""
    out = []
    for span in exporter.get_finished_spans():
        attrs = dict(span.attributes or {})
        ids = []
        while f"retrieval.documents.{len(ids)}.document.id" in attrs:
            ids.append(str(attrs[f"retrieval.documents.{len(ids)}.document.id"]))
        if ids:
            out.append(ids)
    return out


def test_document_id_is_the_instrumentation_rule() -> None:
    for doc in [*corpus(), Document(page_content="x", metadata={"id": ""})]:
        assert document_id(doc) == extract.document_id(doc)
    assert document_id(Document(id="a", page_content="t", metadata={"id": "b"})) == "a"
    assert document_id(Document(page_content="t", metadata={"id": 7})) == "7"
    assert document_id(Document(page_content="t")).startswith("sha1:")


@pytest.mark.parametrize("kind", sorted(RETRIEVERS))
def test_search_returns_more_than_the_retrievers_k(kind: str) -> None:
    retriever = RETRIEVERS[kind]()
    own = retriever.invoke(QUERY)
    assert len(own) == 1 and configured_k(retriever) == 1
    before = retriever.model_dump(exclude={"vectorstore", "bm25", "docs"})

    hits = RetrieverIndex(retriever).search(QUERY, 3)

    assert len(hits) == 3
    assert len({h.passage.id for h in hits}) == 3
    assert hits[0].passage.id == document_id(own[0])  # same top document as the user's call
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the user's retriever is unchanged
    assert retriever.model_dump(exclude={"vectorstore", "bm25", "docs"}) == before
    assert configured_k(retriever) == 1
    assert len(retriever.invoke(QUERY)) == 1


@pytest.mark.parametrize("kind", sorted(RETRIEVERS))
def test_hit_ids_match_what_instrumentation_records(
    kind: str, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    retriever = RETRIEVERS[kind]()
    index = RetrieverIndex(retriever)
    ig = instrument(rag_graph(retriever), store=None, tracer_provider=tracer_provider)
    try:
        ig.invoke({"question": QUERY})
    finally:
        ig.shutdown()
    [recorded] = recorded_ids(span_exporter)
    hits = index.search(QUERY, 4)
    assert recorded == [hits[0].passage.id]
    # re-retrieval: exclude the recorded documents and still get others from the same query
    others = [h.passage.id for h in hits if h.passage.id not in recorded]
    assert len(others) == 3
    all_ids = {document_id(d) for d in corpus()} | {pid for pid, _, _ in TEXTS}
    assert set(others) <= all_ids


def test_passage_fields_from_metadata() -> None:
    hits = RetrieverIndex(bm25()).search("Lyon confluence Rhone Saone", 6)
    by_title = {h.passage.title: h.passage for h in hits}
    assert by_title["Lyon"].id == "p-lyon"  # metadata["id"]
    assert by_title["Lyon"].text.startswith("Lyon is")
    assert by_title["Berlin"].id.startswith("sha1:")  # no id at all: content hash
    assert by_title["Berlin"].metadata == {"lang": "en"}
    assert "title" not in by_title["Paris"].metadata
    # no scores in the BM25 retriever's metadata: rank-based scores
    assert [h.score for h in hits] == [1.0 / (r + 1) for r in range(len(hits))]


def test_vector_store_directly_and_its_size() -> None:
    store = vector_store()
    index = RetrieverIndex(store)
    hits = index.search(QUERY, 5)
    assert len(hits) == 5
    assert hits[0].passage.id in {"p-paris", "p-seine", "p-france"}
    assert len(index) == len(TEXTS)
    assert len(RetrieverIndex(store.as_retriever())) == len(TEXTS)
    assert len(RetrieverIndex(bm25())) == len(TEXTS)  # a retriever's ``docs`` list


def test_mmr_and_threshold_retrievers_reach_k() -> None:
    store = vector_store()
    mmr = store.as_retriever(search_type="mmr", search_kwargs={"k": 1, "fetch_k": 2})
    assert len(RetrieverIndex(mmr).search(QUERY, 4)) == 4

    class Cosine(InMemoryVectorStore):
        def _select_relevance_score_fn(self) -> Callable[[float], float]:
            return lambda s: (s + 1.0) / 2.0

    cosine = Cosine(store.embedding)
    cosine.store = store.store
    thr = cosine.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"k": 1, "score_threshold": 0.5}
    )
    assert len(thr.invoke(QUERY)) == 1
    hits = RetrieverIndex(thr).search(QUERY, 3)
    assert len(hits) == 3 and all(0.5 <= h.score <= 1.0 for h in hits)
    # a store with its own relevance function: similarity_search_with_score mapped through it
    raw = store.similarity_search_with_score(QUERY, k=2)
    mapped = RetrieverIndex(cosine).search(QUERY, 2)
    assert [h.score for h in mapped] == pytest.approx([(s + 1.0) / 2.0 for _, s in raw])


def test_metadata_scores_are_used() -> None:
    class Scored(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [
                Document(id="a", page_content="A", metadata={"relevance_score": 0.9}),
                Document(id="b", page_content="B", metadata={"score": 0.4}),
            ]

    hits = RetrieverIndex(Scored()).search("q", 5)
    assert [(h.passage.id, h.score) for h in hits] == [("a", 0.9), ("b", 0.4)]


def test_a_retriever_without_k_is_called_as_is() -> None:
    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query: str) -> list[Document]:  # old-style signature
            return [Document(id=str(i), page_content=f"doc {i}") for i in range(2)]

    assert configured_k(Fixed()) is None
    assert [h.passage.id for h in RetrieverIndex(Fixed()).search("q", 5)] == ["0", "1"]
    assert [h.passage.id for h in RetrieverIndex(Fixed()).search("q", 1)] == ["0"]


def test_search_errors_and_build() -> None:
    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            raise ConnectionError("corpus offline")

    index = RetrieverIndex(Broken())
    with pytest.raises(RetrieverSearchError, match="corpus offline"):
        index.search("q", 3)
    with pytest.raises(NotImplementedError, match="user"):
        index.build([])
    assert len(index) == 0 and bool(index)  # size unknown, still a usable (truthy) index
    with pytest.raises(TypeError):
        RetrieverIndex(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(RETRIEVERS))
def test_search_fires_no_callbacks(kind: str) -> None:
    retriever = RETRIEVERS[kind]()
    index = RetrieverIndex(retriever)
    recorder = Recorder()

    def node(query: str) -> int:
        retriever.invoke(query)  # the user's own call: recorded
        return len(index.search(query, 3))  # the audit inside the same run: not recorded

    assert RunnableLambda(node).invoke(QUERY, config={"callbacks": [recorder]}) == 3
    assert recorder.starts == [QUERY]


@pytest.mark.parametrize("kind", sorted(RETRIEVERS))
def test_search_inside_an_instrumented_run_opens_no_span(
    kind: str, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    retriever = RETRIEVERS[kind]()
    index = RetrieverIndex(retriever)
    audited: list[int] = []
    graph = rag_graph(retriever, audit=lambda q: audited.append(len(index.search(q, 3))))
    ig = instrument(graph, store=None, tracer_provider=tracer_provider)
    try:
        ig.invoke({"question": QUERY})
    finally:
        ig.shutdown()
    assert audited == [3]
    assert len(recorded_ids(span_exporter)) == 1  # only the user's own retrieval
