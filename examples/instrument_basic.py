"""Instrument a small 3-hop LangGraph agent and print its hops from the span store.

Offline and deterministic: a keyword retriever over six passages and a tiny rule-based chat model
stand in for a real search index and LLM. Run: ``python examples/instrument_basic.py [--store PATH]``.
"""

from __future__ import annotations

import argparse
import operator
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from causal_middleware import instrument

PASSAGES = {
    "p1": "Zorvex Labs was founded by Ilka Morrow in 1999.",
    "p2": "Ilka Morrow was born in the town of Tessaly.",
    "p3": "Tessaly is a small town in the country of Quarn.",
    "p4": "Quarn exports tea and copper.",
    "p5": "Brindle Works was founded by Oren Vale.",
    "p6": "Oren Vale was born in Lusk.",
}
QUESTION = "In which country is the birthplace of the founder of Zorvex Labs?"


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class KeywordRetriever(BaseRetriever):
    """Top-2 passages by word overlap; ids in ``Document.id``, scores in ``metadata["score"]``."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        q = words(query)
        scored = sorted(
            ((len(q & words(text)) / len(q), pid, text) for pid, text in PASSAGES.items() if q & words(text)),
            key=lambda t: (-t[0], t[1]),
        )
        return [
            Document(id=pid, page_content=text, metadata={"score": round(s, 3)})
            for s, pid, text in scored[:2]
        ]


class RuleReader(BaseChatModel):
    """Reads the evidence for the next bridge entity: 'NEXT: <query>' or 'ANSWER: <answer>'."""

    @property
    def _llm_type(self) -> str:
        return "rule-reader"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        evidence = prompt.split("EVIDENCE:", 1)[1]
        if "founded by Ilka Morrow" in evidence and "born" not in evidence:
            reply = "NEXT: Ilka Morrow born"
        elif "born in the town of Tessaly" in evidence and "country" not in evidence:
            reply = "NEXT: Tessaly country"
        elif "country of Quarn" in evidence:
            reply = "ANSWER: Quarn"
        else:
            reply = "ANSWER: unknown"
        message = AIMessage(
            content=reply,
            usage_metadata={
                "input_tokens": len(prompt.split()),
                "output_tokens": 3,
                "total_tokens": len(prompt.split()) + 3,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class State(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    answer: str


def build_agent(retriever: BaseRetriever, reader: BaseChatModel) -> Any:
    """retrieve -> read -(route)-> retrieve | answer."""

    def retrieve(state: State) -> dict[str, Any]:
        docs = retriever.invoke(state["query"])
        return {"evidence": [d.page_content for d in docs]}

    def read(state: State) -> dict[str, Any]:
        recent = " ".join(state["evidence"][-2:])
        reply = str(reader.invoke(f"QUESTION: {state['question']}\nEVIDENCE: {recent}").content)
        if reply.startswith("ANSWER:"):
            return {"answer": reply.removeprefix("ANSWER:").strip()}
        return {"query": reply.removeprefix("NEXT:").strip()}

    def route(state: State) -> str:
        return "answer" if state.get("answer") else "retrieve"

    def answer(state: State) -> dict[str, Any]:
        return {"answer": state["answer"]}

    g = StateGraph(State)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", route, ["retrieve", "answer"])
    g.add_edge("answer", END)
    return g.compile(checkpointer=InMemorySaver())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="SQLite span store to write (default: a temporary file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store_path = args.store or str(Path(tmp) / "causal_runs.db")
        # hop_nodes=None: the retrieve node holds a retriever, so each of its executions starts a hop
        agent = instrument(build_agent(KeywordRetriever(), RuleReader()), store=store_path)
        result = agent.invoke(
            {"question": QUESTION, "query": "Zorvex Labs founded"},
            {"configurable": {"thread_id": "demo-1"}, "metadata": {"causal_reference": "Quarn"}},
        )
        run = agent.store.get_trajectory(agent.last_run_id)
        agent.shutdown()

    print(f"question: {QUESTION}")
    print(
        f"answer:   {result['answer']}  (run {run.run_id}, {len(run.steps)} steps, {run.cost.total_tokens} tokens)"
    )
    print()
    print(f"{'hop':<4} {'nodes':<17} {'sub-query':<22} documents (id:score)")
    for hop in run.hops:
        nodes = " > ".join(dict.fromkeys(s.name for s in hop.steps if s.kind == "node"))
        docs = ", ".join(f"{d.id}:{d.score:.2f}" for d in hop.documents)
        print(f"{hop.index:<4} {nodes:<17} {hop.sub_query or '':<22} {docs}")
    print(f"{'-':<4} {'answer':<17} {'':<22} {run.answer}")


if __name__ == "__main__":
    main()
