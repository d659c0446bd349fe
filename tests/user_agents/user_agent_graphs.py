"""Small agents a LangGraph user might write, each with a failure planted in its data.

Written for these tests, not shaped like the reference agent: the user's own state keys
(``question``, ``plan``, ``search_for``, ``passages``, ``founder``, ``answer``), a planner node
before the first hop, a LangChain retriever the graph closes over, a SQLite checkpointer.

* :func:`rag_graph`: ``plan -> retrieve -> read -(route)-> retrieve | finish``, two hops
  (founder of a company, then the founder's birthplace). ``retrieve`` keeps the retriever's
  ``Document``s in ``passages``; ``read`` takes the first passage that states the fact it needs,
  in rank order, so a document ranked above the true passage decides the answer.
* Retrievers: :class:`BM25Retriever` (``rank_bm25``) and :func:`vector_retriever`
  (``InMemoryVectorStore`` over the deterministic :class:`BagOfWords` embedding).
* Corpora: :func:`poisoned_corpus` holds a keyword-stuffed document (``POISON_ID``) that
  outranks the true passage for hop 1's query and names the wrong founder; :func:`clean_corpus`
  holds a near-namesake company (``Zorvax Labs``) for the planner failure.
* :func:`react_agent`: a ``create_agent`` ReAct agent with a stale on-call table and a
  ``@side_effecting`` ``send_page`` tool that counts its real calls.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypedDict

from causal_middleware.integrations.langgraph import side_effecting
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph
from pydantic import ConfigDict, Field
from rank_bm25 import BM25Okapi

# --- the RAG agent's world -------------------------------------------------------------------

QUESTION = "Where was the founder of Zorvex Labs born?"
GOLD = "Tessaly"
WRONG_FOUNDER = "Ovid Crane"
WRONG_PLACE = "Harlow"
POISON_ID = "seo-zorvex"
TRUE_ID = "zorvex-history"

_TEXTS: dict[str, str] = {
    TRUE_ID: "Zorvex Labs was founded by Ilka Morrow in 1999.",
    "morrow-bio": "Ilka Morrow was born in Tessaly and studied chemistry.",
    "crane-bio": "Ovid Crane was born in Harlow and sold insurance.",
    "brindle": "Brindle Works was founded by Oren Vale in 1987.",
    "vale-bio": "Oren Vale was born in Lusk, a river town.",
    "tessaly": "Tessaly is a small town in the hills of Quarn.",
}
# keyword stuffing: the query's terms over and over, and a false founder
POISON_TEXT = (
    "Zorvex Labs founded. Zorvex Labs founded. Zorvex Labs founded by Ovid Crane. "
    "Zorvex Labs founded Zorvex Labs founded Zorvex Labs."
)
# the planner's failure: a company whose name is one letter away from the question's
NAMESAKE_TEXTS: dict[str, str] = {
    "zorvax-history": "Zorvax Labs was founded by Pell Arden in 2004.",
    "arden-bio": "Pell Arden was born in Corriby near the coast.",
}
PLANNER_WRONG = "Zorvax Labs"
PLANNER_WRONG_PLACE = "Corriby"


def _document(doc_id: str, text: str) -> Document:
    return Document(id=doc_id, page_content=text, metadata={"source": f"kb/{doc_id}"})


def poisoned_corpus() -> list[Document]:
    docs = [_document(i, t) for i, t in _TEXTS.items()]
    return [*docs, _document(POISON_ID, POISON_TEXT)]


def clean_corpus() -> list[Document]:
    texts = {i: t for i, t in _TEXTS.items() if i != "crane-bio"}
    return [_document(i, t) for i, t in {**texts, **NAMESAKE_TEXTS}.items()]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class BM25Retriever(BaseRetriever):
    """Top ``k`` documents by BM25Okapi over the corpus (ties: corpus order)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    docs: list[Document]
    bm25: Any
    k: int = 1

    @classmethod
    def over(cls, docs: list[Document], k: int = 1) -> BM25Retriever:
        return cls(docs=docs, bm25=BM25Okapi([words(d.page_content) for d in docs]), k=k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        scores = self.bm25.get_scores(words(query))
        order = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))
        return [self.docs[i] for i in order[: self.k] if scores[i] > 0]


class BagOfWords(Embeddings):
    """Words hashed into 512 dimensions, counted, L2-normalised: deterministic, no model."""

    dim: int = 512

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in words(text):
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def vector_retriever(docs: list[Document], k: int = 1) -> BaseRetriever:
    store = InMemoryVectorStore(BagOfWords())
    store.add_documents(docs, ids=[d.id for d in docs])
    return store.as_retriever(search_kwargs={"k": k})


# --- the RAG graph ---------------------------------------------------------------------------


class RagState(TypedDict, total=False):
    question: str
    plan: str
    search_for: str
    passages: list[Document]
    founder: str
    answer: str


_COMPANY = re.compile(r"founder of ([A-Z]\w+(?: [A-Z]\w+)*)")
_FOUNDED_BY = re.compile(r"founded by ([A-Z]\w+ [A-Z]\w+)")


def _born_in(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + r" was born in ([A-Z]\w+)")


def planner(misread: dict[str, str] | None = None) -> Callable[[RagState], RagState]:
    """A deterministic planner: names the company the question asks about (``misread`` maps a
    name to the one the planner writes instead: the planted planner failure)."""

    def plan(state: RagState) -> RagState:
        match = _COMPANY.search(state["question"])
        company = match.group(1) if match else state["question"]
        company = (misread or {}).get(company, company)
        return {
            "plan": f"find who founded {company}, then where that person was born",
            "search_for": f"{company} founded",
        }

    return plan


def rag_graph(retriever: BaseRetriever, *, checkpointer: Any, misread: dict[str, str] | None = None) -> Any:
    """``plan -> retrieve -> read -(route)-> retrieve | finish -> END`` (see the module docstring)."""

    def retrieve(state: RagState) -> RagState:
        return {"passages": retriever.invoke(state["search_for"])}

    def read(state: RagState) -> RagState:
        texts = [d.page_content for d in state.get("passages", [])]
        founder = state.get("founder")
        if not founder:
            for text in texts:
                if m := _FOUNDED_BY.search(text):
                    return {"founder": m.group(1), "search_for": f"{m.group(1)} born"}
            return {"answer": "unknown"}
        for text in texts:
            if m := _born_in(founder).search(text):
                return {"answer": m.group(1)}
        return {"answer": "unknown"}

    def route(state: RagState) -> str:
        return "finish" if state.get("answer") else "retrieve"

    def finish(state: RagState) -> RagState:
        return {"answer": state["answer"]}

    builder = StateGraph(RagState)
    builder.add_node("plan", planner(misread))
    builder.add_node("retrieve", retrieve)
    builder.add_node("read", read)
    builder.add_node("finish", finish)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "retrieve")
    builder.add_edge("retrieve", "read")
    builder.add_conditional_edges("read", route, {"retrieve": "retrieve", "finish": "finish"})
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer)


# --- the ReAct agent's world -----------------------------------------------------------------

AGENT_QUESTION = "Who is on call for the billing service? Page them about the failed invoices."
ONCALL_GOLD = "Priya Natarajan"
ONCALL_STALE = "Dana Reyes"
PAGE_CALL_ID = "call-page"
LOOKUP_CALL_ID = "call-oncall"


class AgentWorld:
    """The ReAct agent's tools and their side effects: a roster with a stale row for billing,
    and a pager whose real calls are counted in ``pages``."""

    def __init__(self) -> None:
        self.roster = {"billing": ONCALL_STALE, "search": "Tomas Ek"}
        self.pages: list[dict[str, str]] = []

        @tool
        def lookup_oncall(service: str) -> str:
            """The engineer on call for a service, from the on-call roster."""
            return self.roster.get(service.strip().lower(), "nobody")

        @tool
        def send_page(engineer: str, message: str) -> str:
            """Page an engineer (acts on the world)."""
            self.pages.append({"engineer": engineer, "message": message})
            return f"paged {engineer}"

        self.lookup_oncall = lookup_oncall
        self.send_page = side_effecting(send_page)


class OnCallModel(BaseChatModel):
    """The agent's scripted model: look the service up, page whoever the roster named, then
    answer with that name. Every decision is read off the messages it is given, so a changed
    tool output changes the page and the answer."""

    @property
    def _llm_type(self) -> str:
        return "oncall-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OnCallModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        results = {m.name: str(m.content) for m in messages if isinstance(m, ToolMessage)}
        if "lookup_oncall" not in results:
            call = {"name": "lookup_oncall", "args": {"service": "billing"}, "id": LOOKUP_CALL_ID}
            reply = AIMessage(content="", tool_calls=[call])
        elif "send_page" not in results:
            engineer = results["lookup_oncall"]
            args = {"engineer": engineer, "message": "billing: invoices failed"}
            reply = AIMessage(
                content="", tool_calls=[{"name": "send_page", "args": args, "id": PAGE_CALL_ID}]
            )
        else:
            reply = AIMessage(
                content=f"{results['lookup_oncall']} is on call for billing and has been paged."
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


def react_agent(world: AgentWorld, *, checkpointer: Any) -> Any:
    return create_agent(
        OnCallModel(),
        tools=[world.lookup_oncall, world.send_page],
        system_prompt="You route incidents to the engineer on call.",
        checkpointer=checkpointer,
    )


class RosterFixProposerModel(BaseChatModel):
    """The repair's scripted proposer model: asked about the ``tools`` step that ran the on-call
    lookup, it proposes that step's tool message with the current roster row; for any other step
    it proposes nothing. Records the steps it was asked about."""

    asked: list[str] = Field(default_factory=list)
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "roster-fix-proposer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        step = re.search(r'Step: node "([^"]+)"', prompt)  # fenced: node names quoted
        self.asked.append(step.group(1) if step else "?")
        output = prompt.split("Its output:", 1)[-1].split("\n", 1)[0]
        if step and step.group(1) == "tools" and "lookup_oncall" in output and ONCALL_STALE in output:
            fixed = {
                "type": "tool",
                "content": ONCALL_GOLD,
                "name": "lookup_oncall",
                "tool_call_id": LOOKUP_CALL_ID,
            }
            text = json.dumps([{"messages": [fixed]}])
        else:
            text = "[]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def agent_input(text: str = AGENT_QUESTION) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text)]}
