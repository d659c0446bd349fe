"""The graphs the instrumentation-overhead bench runs: an H-hop retrieve/read loop, light enough
that the figures show the tracing cost rather than model time.

``build_chain_graph(hops, checkpointer=...)``: ``retrieve -> read -(route)-> retrieve | answer``;
a keyword retriever over ``hops`` chained passages plus 20 distractors, a rule-based chat model
that reads the last passage and names the next query, ``evidence`` accumulated with
``operator.add`` (so the state grows with the hops, as a real agent's does). With ``hops=3`` and
no checkpointer it is the overhead bench's graph (a); with a checkpointer, graph (b).
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph

ANSWER = "Thessen"
_NEXT = re.compile(r"points to ent(\d+)")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def chain_passages(hops: int) -> dict[str, str]:
    """Passage ``p<i>`` leads from entity i to entity i+1; the last one names the answer."""
    passages = {
        f"p{i}": f"key{i} ent{i} points to ent{i + 1}."
        if i < hops - 1
        else f"key{i} ent{i} lies in the country of {ANSWER}."
        for i in range(hops)
    }
    distractors = {f"d{i}": f"Distractor passage number {i} about an unrelated archive." for i in range(20)}
    return passages | distractors


class KeywordRetriever(BaseRetriever):
    passages: dict[str, str]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        q = _words(query)
        scored = sorted(
            ((len(q & _words(t)) / max(len(q), 1), pid, t) for pid, t in self.passages.items()),
            key=lambda x: (-x[0], x[1]),
        )
        return [Document(id=pid, page_content=t, metadata={"score": s}) for s, pid, t in scored[:3]]


class RuleReader(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "rule-reader"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        text = str(messages[-1].content)
        found = _NEXT.search(text)
        if ANSWER in text:
            reply = f"ANSWER: {ANSWER}"
        elif found:
            reply = f"NEXT: key{found.group(1)} ent{found.group(1)}"
        else:
            reply = "ANSWER: unknown"
        n = len(text.split())
        message = AIMessage(
            content=reply, usage_metadata={"input_tokens": n, "output_tokens": 3, "total_tokens": n + 3}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class ChainState(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    answer: str


def build_chain_graph(hops: int = 3, *, checkpointer: Any = None) -> Any:
    retriever, reader = KeywordRetriever(passages=chain_passages(hops)), RuleReader()

    def retrieve(state: ChainState) -> dict[str, Any]:
        return {"evidence": [d.page_content for d in retriever.invoke(state["query"])[:1]]}

    def read(state: ChainState) -> dict[str, Any]:
        reply = str(
            reader.invoke(f"QUESTION: {state['question']}\nEVIDENCE: {state['evidence'][-1]}").content
        )
        if reply.startswith("ANSWER:"):
            return {"answer": reply.removeprefix("ANSWER:").strip()}
        return {"query": reply.removeprefix("NEXT:").strip()}

    def answer(state: ChainState) -> dict[str, Any]:
        return {"answer": state["answer"]}

    g = StateGraph(ChainState)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges(
        "read", lambda s: "answer" if s.get("answer") else "retrieve", ["retrieve", "answer"]
    )
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer)


def chain_input(hops: int) -> dict[str, Any]:
    return {"question": f"Where does the chain from ent0 end ({hops} hops)?", "query": "key0 ent0"}
