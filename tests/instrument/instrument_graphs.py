"""Fakes and graph shapes for the instrumentation tests (real LangGraph, fake model and retriever).

* :class:`KeywordRetriever`: a real ``BaseRetriever`` over a few passages, scored by word overlap,
  returning ``Document``s with ids and ``metadata["score"]``.
* :class:`ScriptedChatModel`: a real ``BaseChatModel`` whose reply is a deterministic function of
  the prompt, reporting token usage; ``bind_tools`` returns itself (drives ``create_agent``).
* builders for the shapes the instrumentation must handle: a retrieve/read loop with conditional
  edges, a ``create_agent`` ReAct agent, a subgraph, a ``Send`` fan-out, async nodes.
"""

from __future__ import annotations

import asyncio
import operator
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

PASSAGES = {
    "p1": "Zorvex Labs was founded by Ilka Morrow in 1999.",
    "p2": "Ilka Morrow was born in the town of Tessaly.",
    "p3": "Tessaly is a small town in the country of Quarn.",
    "p4": "Quarn exports tea and copper.",
    "p5": "Brindle Works was founded by Oren Vale.",
    "p6": "Oren Vale was born in Lusk.",
}
# question -> the chain of sub-queries a "reader" issues, then the answer
CHAINS = {
    "Where was the founder of Zorvex Labs born?": (["Zorvex Labs founded", "Ilka Morrow born"], "Tessaly"),
    "In which country is the birthplace of the founder of Zorvex Labs?": (
        ["Zorvex Labs founded", "Ilka Morrow born", "Tessaly country"],
        "Quarn",
    ),
    "Where was the founder of Brindle Works born?": (["Brindle Works founded", "Oren Vale born"], "Lusk"),
}
QUESTION = "In which country is the birthplace of the founder of Zorvex Labs?"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class KeywordRetriever(BaseRetriever):
    """Top-k passages by word overlap (score = overlap count / query words)."""

    k: int = 2
    passages: dict[str, str] = PASSAGES

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        q = _words(query)
        scored = []
        for pid, text in self.passages.items():
            overlap = len(q & _words(text))
            if overlap:
                scored.append((overlap / max(len(q), 1), pid, text))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [
            Document(id=pid, page_content=text, metadata={"score": round(score, 4), "source": f"wiki/{pid}"})
            for score, pid, text in scored[: self.k]
        ]


def _last_human(messages: Sequence[BaseMessage]) -> str:
    for m in reversed(messages):
        if m.type == "human":
            return str(m.content)
    return ""


def reader_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The loop graph's reader: 'NEXT: <sub-query>' until the chain is done, then 'ANSWER: <a>'."""
    prompt = str(messages[-1].content)
    question = prompt.split("QUESTION:", 1)[1].split("\n", 1)[0].strip()
    done = int(prompt.split("HOPS DONE:", 1)[1].split("\n", 1)[0].strip())
    subqueries, answer = CHAINS[question]
    if done < len(subqueries):
        return AIMessage(content=f"NEXT: {subqueries[done]}")
    return AIMessage(content=f"ANSWER: {answer}")


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is ``respond(messages)``; reports usage like a provider would."""

    respond: Callable[[list[BaseMessage]], AIMessage] = reader_reply
    model_name: str = "scripted-1"
    temperature: float = 0.0
    seed: int = 7

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature, "seed": self.seed}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.respond(messages)
        prompt_tokens = sum(len(str(m.content).split()) for m in messages)
        completion_tokens = max(len(str(reply.content).split()), 1)
        reply.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


# --- (a) retrieve -> read -> route loop ------------------------------------------------------
class LoopState(TypedDict, total=False):
    question: str
    query: str
    hops: int
    evidence: Annotated[list[str], operator.add]
    answer: str


def build_loop_graph(
    retriever: BaseRetriever | None = None,
    model: BaseChatModel | None = None,
    *,
    checkpointer: Any = None,
    retrieve_fn: Callable[..., Any] | None = None,
) -> Any:
    """START -> retrieve -> read -(route)-> retrieve | answer -> END."""
    retriever = retriever or KeywordRetriever()
    model = model or ScriptedChatModel()

    def retrieve(state: LoopState) -> dict[str, Any]:
        docs = retriever.invoke(state.get("query") or state["question"])
        return {"evidence": [d.id or "" for d in docs], "hops": state.get("hops", 0) + 1}

    def read(state: LoopState) -> dict[str, Any]:
        prompt = f"QUESTION: {state['question']}\nHOPS DONE: {state['hops']}\nEVIDENCE: {state['evidence']}"
        reply = str(model.invoke(prompt).content)
        if reply.startswith("ANSWER:"):
            return {"answer": reply.removeprefix("ANSWER:").strip()}
        return {"query": reply.removeprefix("NEXT:").strip()}

    def route(state: LoopState) -> str:
        return "answer" if state.get("answer") else "retrieve"

    def answer(state: LoopState) -> dict[str, Any]:
        return {"answer": state["answer"]}

    g = StateGraph(LoopState)
    g.add_node("retrieve", retrieve_fn or retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", route, {"retrieve": "retrieve", "answer": "answer"})
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer)


def loop_input(question: str = QUESTION) -> dict[str, Any]:
    first = CHAINS[question][0][0]
    return {"question": question, "query": first, "hops": 0, "evidence": []}


# --- async variant of (a) --------------------------------------------------------------------
def build_async_loop_graph(retriever: BaseRetriever | None = None, model: BaseChatModel | None = None) -> Any:
    retriever = retriever or KeywordRetriever()
    model = model or ScriptedChatModel()

    async def retrieve(state: LoopState) -> dict[str, Any]:
        docs = await retriever.ainvoke(state.get("query") or state["question"])
        await asyncio.sleep(0)
        return {"evidence": [d.id or "" for d in docs], "hops": state.get("hops", 0) + 1}

    async def read(state: LoopState) -> dict[str, Any]:
        prompt = f"QUESTION: {state['question']}\nHOPS DONE: {state['hops']}\nEVIDENCE: {state['evidence']}"
        reply = str((await model.ainvoke(prompt)).content)
        if reply.startswith("ANSWER:"):
            return {"answer": reply.removeprefix("ANSWER:").strip()}
        return {"query": reply.removeprefix("NEXT:").strip()}

    def route(state: LoopState) -> str:
        return "answer" if state.get("answer") else "retrieve"

    def answer(state: LoopState) -> dict[str, Any]:  # a sync node in an async run
        return {"answer": state["answer"]}

    g = StateGraph(LoopState)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", route, ["retrieve", "answer"])
    g.add_edge("answer", END)
    return g.compile()


# --- (b) create_agent ReAct agent --------------------------------------------------------------
AGENT_CALLS = [("search", {"query": "Zorvex Labs founded"}), ("search", {"query": "Ilka Morrow born"})]


def agent_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """Issue the scripted tool calls one per turn, then answer from the last tool result."""
    done = sum(1 for m in messages if m.type == "tool")
    if done < len(AGENT_CALLS):
        name, args = AGENT_CALLS[done]
        return AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": f"call_{done + 1}", "type": "tool_call"}],
        )
    return AIMessage(content="Tessaly")


def build_agent(extra_tools: Sequence[Any] = (), respond: Callable[..., AIMessage] = agent_reply) -> Any:
    retriever = KeywordRetriever()

    @tool
    def search(query: str) -> str:
        """Search the encyclopedia."""
        return "\n".join(f"[{d.id}] {d.page_content}" for d in retriever.invoke(query))

    return create_agent(ScriptedChatModel(respond=respond), [search, *extra_tools])


# --- (c) subgraph -----------------------------------------------------------------------------
class ResearchState(TypedDict, total=False):
    question: str
    query: str
    evidence: Annotated[list[str], operator.add]
    answer: str


def build_subgraph_graph(retriever: BaseRetriever | None = None, *, checkpointer: Any = None) -> Any:
    """plan -> research (compiled subgraph: search -> note) -> answer."""
    retriever = retriever or KeywordRetriever()

    def search(state: ResearchState) -> dict[str, Any]:
        return {"evidence": [d.id or "" for d in retriever.invoke(state["query"])]}

    def note(state: ResearchState) -> dict[str, Any]:
        return {"query": state["query"] + " (noted)"}

    sub = StateGraph(ResearchState)
    sub.add_node("search", search)
    sub.add_node("note", note)
    sub.add_edge(START, "search")
    sub.add_edge("search", "note")
    sub.add_edge("note", END)

    def plan(state: ResearchState) -> dict[str, Any]:
        return {"query": "Zorvex Labs founded"}

    def answer(state: ResearchState) -> dict[str, Any]:
        return {"answer": "Ilka Morrow" if "p1" in state["evidence"] else "unknown"}

    outer = StateGraph(ResearchState)
    outer.add_node("plan", plan)
    outer.add_node("research", sub.compile())
    outer.add_node("answer", answer)
    outer.add_edge(START, "plan")
    outer.add_edge("plan", "research")
    outer.add_edge("research", "answer")
    outer.add_edge("answer", END)
    return outer.compile(checkpointer=checkpointer)


# --- (d) Send fan-out ---------------------------------------------------------------------------
class FanState(TypedDict, total=False):
    question: str
    queries: list[str]
    evidence: Annotated[list[str], operator.add]
    answer: str


FAN_QUERIES = ["Zorvex Labs founded", "Ilka Morrow born", "Tessaly country"]


def build_fanout_graph(retriever: BaseRetriever | None = None) -> Any:
    """plan -(Send x3)-> retrieve (parallel) -> combine."""
    retriever = retriever or KeywordRetriever(k=1)

    def plan(state: FanState) -> dict[str, Any]:
        return {"queries": list(FAN_QUERIES)}

    def fan_out(state: FanState) -> list[Send]:
        return [Send("retrieve", {"query": q}) for q in state["queries"]]

    def retrieve(state: dict[str, Any]) -> dict[str, Any]:
        return {"evidence": [d.id or "" for d in retriever.invoke(state["query"])]}

    def combine(state: FanState) -> dict[str, Any]:
        return {"answer": ",".join(sorted(state["evidence"]))}

    g = StateGraph(FanState)
    g.add_node("plan", plan)
    g.add_node("retrieve", retrieve)
    g.add_node("combine", combine)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["retrieve"])
    g.add_edge("retrieve", "combine")
    g.add_edge("combine", END)
    return g.compile()


def new_saver() -> InMemorySaver:
    return InMemorySaver()
