"""``instrument(graph, on_failure=repair_on_failure())`` on a user's own RAG graph: a failed run
(outcome derived at record time from ``causal_reference``) is repaired in the background with no
adapter, the poisoned document named, the user's thread untouched."""

from __future__ import annotations

import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware import instrument, repair_on_failure
from causal_middleware.store.memory import InMemorySpanStore

CORPUS = [
    Document(id="kb-7", page_content="The Orvel bridge was designed by Ada Brenner in 1931."),
    Document(
        id="spam-1", page_content="Orvel bridge designed designed by? Orvel bridge designed by Tom Kell."
    ),
    Document(id="kb-9", page_content="Tom Kell painted harbour scenes."),
]


class WordOverlap(BaseRetriever):
    """Ranks by shared words, counting repeats: keyword stuffing wins, as with naive scoring."""

    docs: list[Document]
    k: int = 1

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(re.findall(r"\w+", query.lower()))
        scored = sorted(
            self.docs, key=lambda d: -sum(w in words for w in re.findall(r"\w+", d.page_content.lower()))
        )
        return scored[: self.k]


retriever = WordOverlap(docs=CORPUS)


class State(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def search(state: State) -> State:
    return {"context": retriever.invoke(state["question"])}


def respond(state: State) -> State:
    match = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", " ".join(d.page_content for d in state["context"]))
    return {"answer": match.group(1) if match else "unknown"}


def build():
    g = StateGraph(State)
    g.add_node("search", search)
    g.add_node("respond", respond)
    g.add_edge(START, "search")
    g.add_edge("search", "respond")
    g.add_edge("respond", END)
    return g.compile(checkpointer=InMemorySaver())


def test_failed_run_is_repaired_in_the_background_without_an_adapter() -> None:
    store = InMemorySpanStore()
    results = []
    graph = instrument(
        build(), store=store, on_failure=repair_on_failure(on_result=lambda *r: results.append(r))
    )
    config = {"configurable": {"thread_id": "user-1"}, "metadata": {"causal_reference": "Ada Brenner"}}
    out = graph.invoke({"question": "Who designed the Orvel bridge?"}, config)
    assert out["answer"] == "Tom Kell"
    history = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]
    assert graph.on_failure.wait_idle(timeout=60)
    run_id, judgement, result = results[0]
    assert judgement.failed is True
    assert result.status == "repaired", result.explanation
    assert result.repair.node == "search" and result.repair.target == "context"
    assert "spam-1" in result.repair.evidence and "kb-7" in result.repair.evidence
    assert result.repair.answer_after == "Ada Brenner"
    assert result.repair.validation.passed
    assert store.get_trajectory(run_id).outcome.value == "failure"
    # the user's own thread is exactly as the run left it
    after = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]
    assert after == history
    graph.shutdown()
