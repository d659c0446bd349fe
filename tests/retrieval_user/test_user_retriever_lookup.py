"""index_for_graph / lookup_index: the user's retriever found in their graph, as hop inference
finds it; ambiguity reported, never guessed."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from causal_middleware.integrations.langgraph.retrievers import (
    RetrieverNotFound,
    find_retrievers,
    index_for_graph,
    lookup_index,
)
from langchain_core.documents import Document
from langchain_core.tools import create_retriever_tool, tool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from opentelemetry.sdk.trace import TracerProvider
from user_retrievers import BM25Retriever, corpus, rag_graph, vector_store

from causal_middleware import instrument
from causal_middleware.retrieval.langchain import RetrieverIndex

QUERY = "capital of France"


class S(TypedDict, total=False):
    question: str
    docs: list[Document]
    more: list[Document]


def two_retriever_graph(first: Any, second: Any) -> Any:
    def retrieve(state: S) -> S:
        return {"docs": first.invoke(state["question"])}

    def expand(state: S) -> S:
        return {"more": second.invoke(state["question"])}

    builder = StateGraph(S)
    builder.add_node("retrieve", retrieve)
    builder.add_node("expand", expand)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "expand")
    builder.add_edge("expand", END)
    return builder.compile()


def test_the_node_closing_over_the_retriever_is_found() -> None:
    retriever = BM25Retriever.over(corpus(), k=1)
    graph = rag_graph(retriever)
    assert find_retrievers(graph) == {"retrieve": [retriever]}
    index = index_for_graph(graph)
    assert isinstance(index, RetrieverIndex) and index.source is retriever
    assert len(index.search(QUERY, 3)) == 3
    lookup = lookup_index(graph)
    assert lookup.node == "retrieve" and not lookup.ambiguous
    assert index_for_graph(graph, "retrieve") is not None


def test_an_instrumented_graph_is_accepted(tracer_provider: TracerProvider) -> None:
    retriever = vector_store().as_retriever(search_kwargs={"k": 1})
    ig = instrument(rag_graph(retriever), store=None, tracer_provider=tracer_provider)
    try:
        index = index_for_graph(ig)
    finally:
        ig.shutdown()
    assert index is not None and index.source is retriever


def test_two_retrievers_are_ambiguous_until_a_node_is_named() -> None:
    bm25 = BM25Retriever.over(corpus(), k=1)
    dense = vector_store().as_retriever(search_kwargs={"k": 1})
    graph = two_retriever_graph(bm25, dense)
    lookup = lookup_index(graph)
    assert lookup.index is None and lookup.ambiguous
    assert "retrieve" in lookup.reason and "expand" in lookup.reason
    assert set(lookup.candidates) == {"retrieve", "expand"}
    assert index_for_graph(graph) is None
    with pytest.raises(RetrieverNotFound, match="name the node"):
        lookup.require()
    named = index_for_graph(graph, "expand")
    assert named is not None and named.source is dense
    assert lookup_index(graph, "retrieve").require().source is bm25


def test_the_same_retriever_in_two_nodes_is_one() -> None:
    retriever = BM25Retriever.over(corpus(), k=1)
    lookup = lookup_index(two_retriever_graph(retriever, retriever))
    assert lookup.index is not None and lookup.index.source is retriever
    assert lookup.node is None  # held by both nodes


def test_a_vector_store_and_its_retriever_are_one() -> None:
    store = vector_store()
    retriever = store.as_retriever(search_kwargs={"k": 1})
    graph = two_retriever_graph(retriever, store)  # "expand" references the bare store
    found = find_retrievers(graph)
    assert found == {"retrieve": [retriever], "expand": [store]}
    lookup = lookup_index(graph)
    assert lookup.index is not None and lookup.index.source is retriever  # the retriever is kept
    assert lookup.node is None  # both nodes search the one store
    # two retrievers over one store (their settings may differ): the user names one
    assert lookup_index(two_retriever_graph(store.as_retriever(), retriever)).ambiguous


def test_a_vector_store_referenced_directly() -> None:
    store = vector_store()

    def retrieve(state: S) -> S:
        return {"docs": store.similarity_search(state["question"], k=1)}

    builder = StateGraph(S)
    builder.add_node("retrieve", retrieve)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", END)
    index = index_for_graph(builder.compile())
    assert index is not None and index.source is store
    assert len(index.search(QUERY, 4)) == 4


def test_retrievers_wrapped_as_tools() -> None:
    retriever = BM25Retriever.over(corpus(), k=1)
    search_docs = create_retriever_tool(retriever, "search_docs", "Search the corpus.")

    @tool
    def lookup_city(city: str) -> str:
        """Look a city up."""
        return retriever.invoke(city)[0].page_content

    builder = StateGraph(S)
    builder.add_node("tools", ToolNode([search_docs]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    assert find_retrievers(graph) == {"tools": [retriever]}
    assert lookup_index(graph, "search_docs").require().source is retriever

    def call(state: S) -> S:
        lookup_city.invoke({"city": state["question"]})
        return {}

    builder = StateGraph(S)
    builder.add_node("call", call)
    builder.add_edge(START, "call")
    builder.add_edge("call", END)
    index = index_for_graph(builder.compile())
    assert index is not None and index.source is retriever


def test_no_retriever_and_unknown_node() -> None:
    def echo(state: S) -> S:
        return {}

    builder = StateGraph(S)
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    lookup = lookup_index(builder.compile())
    assert lookup.index is None and not lookup.ambiguous and "no LangChain retriever" in lookup.reason
    graph = rag_graph(BM25Retriever.over(corpus()))
    missing = lookup_index(graph, "plan")
    assert missing.index is None and "retrieve" in missing.reason
    with pytest.raises(TypeError):
        index_for_graph(object())
