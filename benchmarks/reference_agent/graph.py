"""Build and run the reference agentic-RAG agent.

::

    START -> decide --search--> retrieve -> read -> decide ... --answer--> answer -> END

``decide`` asks the model for the next sub-query (``SUBQUERY: ...``) or to answer; ``retrieve``
runs the sub-query through a LangChain retriever; ``read`` asks the model for the fact the
evidence gives (``FACT: ...``), carrying the bridge entity into the next ``decide``; ``answer``
asks the model for the final answer. A search budget (default 4 retrievals) forces the answer.

Hops: a hop starts at each ``decide`` (:data:`REFERENCE_HOP_NODES`), so hop *h* holds
decide (sub-query *h*) -> retrieve (evidence *h*) -> read (fact *h*). The final ``decide``, the
one that chooses to answer, opens one last hop without a retrieval: the stop decision, where an
early-termination fault lands. ``answer`` (:data:`REFERENCE_ANSWER_NODES`) ends the run.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from causal_middleware.tasks.model import Dataset, Question

from .nodes import make_answer, make_decide, make_read, make_retrieve, route_after_decide
from .state import AgentInput, AgentState

GRAPH_NAME = "reference_agent"
DEFAULT_BUDGET = 4
REFERENCE_HOP_NODES: tuple[str, ...] = ("decide",)
REFERENCE_ANSWER_NODES: tuple[str, ...] = ("answer",)
NODES: tuple[str, ...] = ("decide", "retrieve", "read", "answer")


def recursion_limit_for(budget: int) -> int:
    """Supersteps a run can take: three per search, plus the last decide and answer, plus slack."""
    return 3 * budget + 10


def build_reference_agent(
    retriever: BaseRetriever,
    model: BaseChatModel,
    *,
    budget: int = DEFAULT_BUDGET,
    checkpointer: BaseCheckpointSaver | None = None,
    name: str = GRAPH_NAME,
) -> CompiledStateGraph:
    """The compiled agent. ``checkpointer`` defaults to a fresh ``InMemorySaver``; pass any saver
    (e.g. ``SqliteSaver``) to keep checkpoints elsewhere. Invoke with ``{"question": ...}`` and a
    ``thread_id`` in ``config["configurable"]``."""
    if not isinstance(retriever, BaseRetriever):
        raise TypeError(f"retriever must be a LangChain BaseRetriever, got {type(retriever).__name__}")
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"model must be a LangChain BaseChatModel, got {type(model).__name__}")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ValueError(f"budget must be a positive integer (searches per question), got {budget!r}")
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState, input_schema=AgentInput)
    builder.add_node("decide", make_decide(model, budget))
    builder.add_node("retrieve", make_retrieve(retriever))
    builder.add_node("read", make_read(model))
    builder.add_node("answer", make_answer(model))
    builder.add_edge(START, "decide")
    builder.add_conditional_edges("decide", route_after_decide, {"retrieve": "retrieve", "answer": "answer"})
    builder.add_edge("retrieve", "read")
    builder.add_edge("read", "decide")
    builder.add_edge("answer", END)
    graph = builder.compile(
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(), name=name
    )
    return graph.with_config(recursion_limit=recursion_limit_for(budget))


class AgentRun(BaseModel):
    """The outcome of one :func:`run_question` call."""

    thread_id: str
    question: str
    answer: str | None = None
    stop_reason: str | None = None
    queries: list[str] = Field(default_factory=list)
    hops: list[dict[str, Any]] = Field(default_factory=list)
    run_id: str | None = Field(default=None, description="trace id when the agent is instrumented")
    config: dict[str, Any] = Field(
        default_factory=dict, description="config to read the thread's checkpoints"
    )


def run_question(
    agent: Any,
    question: str | Question,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    plan: list[str] | None = None,
) -> AgentRun:
    """Run one question on a new thread (``thread_id`` defaults to a fresh uuid).

    ``plan``: an upstream planner's sub-questions (``#N`` stands for search N's fact); ``decide``
    then issues them in order with the facts filled in (plan-and-execute: the model reads every
    hop and writes the answer). Without one the model plans each search itself.

    ``agent`` is the compiled graph or an instrumented one (anything with ``invoke``). For a
    :class:`Question`, the gold answer and labels ride along in ``config["metadata"]``
    (``causal_reference``, ``causal_labels``) for instrumentation to record.
    """
    text = question.text if isinstance(question, Question) else question
    if not isinstance(text, str) or not text.strip():
        raise ValueError("question must be a non-empty string or a Question")
    tid = thread_id or uuid.uuid4().hex
    merged: dict[str, Any] = dict(config or {})
    merged["configurable"] = {**dict(merged.get("configurable") or {}), "thread_id": tid}
    if isinstance(question, Question):
        metadata = dict(merged.get("metadata") or {})
        metadata.setdefault("causal_reference", question.answer)
        labels = {"question_id": question.id, "n_hops": question.n_hops, "dataset": question.dataset}
        metadata["causal_labels"] = {**labels, **dict(metadata.get("causal_labels") or {})}
        merged["metadata"] = metadata
    inputs: dict[str, Any] = {"question": text}
    if plan:
        inputs["plan"] = list(plan)
    state = agent.invoke(inputs, merged)
    return AgentRun(
        thread_id=tid,
        question=text,
        answer=state.get("answer"),
        stop_reason=state.get("stop_reason"),
        queries=list(state.get("queries") or []),
        hops=list(state.get("hops") or []),
        run_id=getattr(agent, "last_run_id", None),
        config={"configurable": {"thread_id": tid}},
    )


def gold_plan(question: Question) -> list[str]:
    """The question's gold decomposition as a plan for :func:`run_question`; MuSiQue's
    Wikidata-style steps (``"X >> relation"``) read as questions (``"What is the relation of X?"``).
    HotpotQA's annotated steps are not questions (``"Title >> bridge entity"``): refused."""
    if question.dataset == "hotpotqa":
        raise ValueError("HotpotQA's annotated steps are not questions; run it with --plan model")
    steps = []
    for hop in question.hops:
        subject, sep, relation = hop.question.partition(">>")
        steps.append(f"What is the {relation.strip()} of {subject.strip()}?" if sep else hop.question)
    return steps


def build_world_agent(
    dataset: Dataset,
    *,
    model: BaseChatModel | None = None,
    retriever: str | BaseRetriever = "bm25",
    k: int = 5,
    budget: int = DEFAULT_BUDGET,
    checkpointer: BaseCheckpointSaver | None = None,
    seed: int | None = None,
) -> CompiledStateGraph:
    """The reference agent over ``dataset``'s passages.

    ``retriever``: ``"bm25"``, ``"dense"`` (needs the ``[dense]`` extra) or any ``BaseRetriever``.
    ``model`` defaults to the offline model: planning from the question's wording on the generated
    world, simulate mode (gold decompositions) on MuSiQue/HotpotQA datasets.
    """
    from benchmarks.models.offline import OfflineChatModel
    from causal_middleware.retrieval.langchain import IndexRetriever

    if isinstance(retriever, str):
        retriever = IndexRetriever(index=make_index(retriever, dataset), k=k)
    if model is None:
        model_seed = seed if seed is not None else (dataset.seed or 0)
        if all(q.dataset == "world" for q in dataset.questions):
            model = OfflineChatModel(seed=model_seed)
        else:
            model = OfflineChatModel.simulating(dataset.questions, seed=model_seed)
    return build_reference_agent(retriever, model, budget=budget, checkpointer=checkpointer)


def make_index(kind: str, dataset: Dataset) -> Any:
    """A built index over ``dataset.passages``: ``"bm25"`` or ``"dense"``."""
    if kind == "bm25":
        from causal_middleware.retrieval.bm25 import BM25Index

        return BM25Index(dataset.passages)
    if kind == "dense":
        from causal_middleware.retrieval.dense import DenseIndex

        return DenseIndex(dataset.passages)
    raise ValueError(f"unknown retriever {kind!r}; expected 'bm25' or 'dense'")
