"""The reference agent's :class:`~causal_middleware.replay.adapter.AgentAdapter`, and a ready sweep
environment for fault injection over a dataset.

Hop *h* of the reference agent is ``decide`` (sub-query *h*) -> ``retrieve`` (evidence *h*) ->
``read`` (fact *h*), so:

=====================  ===========  ============================================================
hop-level change       node         new output
=====================  ===========  ============================================================
evidence_update        retrieve     ``{"evidence": [documents]}``
subquery_update        decide       ``{"decision": "search", "sub_query": q, "queries": [q]}``
answer_now_update      decide       ``{"decision": "answer", "sub_query": None, "stop_reason": ...}``
fact_update            read         ``{"fact": f, "hops": [hop record with fact f]}``
=====================  ===========  ============================================================

The values are complete node outputs, so forking with them either way gives the same state:
replacing the recorded output (the replayer's ``update=``), or merged into it (``values=``). For
that ``answer_now_update`` adds ``"queries": []`` (the cancelled search's recorded ``queries``
entry must not be appended) and ``subquery_update`` ``"stop_reason": None``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from benchmarks.world.grammar import WORLD_GRAMMAR
from causal_middleware.faults.persistent import ScopedIndex
from causal_middleware.faults.sweep import SweepEnvironment
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import Document, Intervention, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.tasks.model import Dataset, Question

from .graph import (
    DEFAULT_BUDGET,
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_reference_agent,
    make_index,
)
from .state import EvidenceDocument, answer_now_update, evidence_update, fact_update, subquery_update

__all__ = ["ReferenceAgentAdapter", "reference_sweep_environment", "to_evidence"]


def to_evidence(document: Document) -> EvidenceDocument:
    """A core :class:`Document` as the reference agent's evidence dict (id, title, text, score, date)."""
    out: EvidenceDocument = {
        "id": document.id,
        "title": str(document.metadata.get("title") or ""),
        "text": document.text,
        "score": document.score,
    }
    date = document.metadata.get("date")
    if date:
        out["date"] = str(date)
    return out


class ReferenceAgentAdapter:
    """Hop-level interventions on the reference agent (see the module docstring)."""

    decide_node = "decide"
    retrieve_node = "retrieve"
    read_node = "read"

    def _require(self, trajectory: Trajectory, hop: int, node: str) -> None:
        try:
            steps = trajectory.hop(hop).steps
        except KeyError as exc:
            raise ValueError(
                f"run {trajectory.run_id} has no hop {hop} (its hops are {[h.index for h in trajectory.hops]})"
            ) from exc
        nodes = [s.node for s in steps if s.kind == "node"]
        if node not in nodes:
            raise ValueError(
                f"hop {hop} of run {trajectory.run_id} has no {node!r} step (its nodes: {nodes})"
            )

    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        """``retrieve`` at ``hop`` returns ``documents`` (``[]``: an empty retrieval)."""
        self._require(trajectory, hop, self.retrieve_node)
        return Intervention(
            node=self.retrieve_node, hop=hop, values=evidence_update([to_evidence(d) for d in documents])
        )

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        """``decide`` at ``hop`` issues ``sub_query``; ``retrieve`` then runs on it live."""
        self._require(trajectory, hop, self.decide_node)
        return Intervention(
            node=self.decide_node, hop=hop, values={**subquery_update(sub_query), "stop_reason": None}
        )

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        """``decide`` at ``hop`` chooses to answer from the facts of the hops before it."""
        self._require(trajectory, hop, self.decide_node)
        return Intervention(node=self.decide_node, hop=hop, values={**answer_now_update(), "queries": []})

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        """``read`` at ``hop`` reports ``fact`` from the hop's recorded sub-query and evidence."""
        self._require(trajectory, hop, self.read_node)
        record = trajectory.hop(hop)
        documents = [to_evidence(d) for d in record.documents]
        return Intervention(
            node=self.read_node, hop=hop, values=fact_update(hop, record.sub_query or "", documents, fact)
        )


def reference_sweep_environment(
    dataset: Dataset,
    *,
    store: SpanStore,
    retriever: str | Index = "bm25",
    k: int = 5,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    checkpoints: str | Path | None = None,
    model: Any = None,
    max_concurrency: int = 4,
    gold_plan: bool = False,
) -> SweepEnvironment:
    """A :class:`SweepEnvironment` running the instrumented reference agent over ``dataset``.

    The agent searches a :class:`ScopedIndex` over ``retriever`` (``"bm25"``, ``"dense"`` or a built
    index), so persistent faults can use private index copies. ``checkpoints`` is a SQLite file for
    the LangGraph checkpoints (so a later sweep can fork the stored base runs; default in memory).
    ``model`` defaults to the offline model seeded with ``seed`` (simulate mode off the world).
    ``gold_plan`` hands the agent each question's gold decomposition as its plan (plan-and-execute:
    the model reads every hop and answers, the plan's steps are filled in without it).
    Call ``env.close()`` when done.
    """
    from causal_middleware.integrations.langgraph.instrument import instrument
    from causal_middleware.integrations.langgraph.replayer import Replayer

    from benchmarks.models.offline import OfflineChatModel
    from causal_middleware.retrieval.langchain import IndexRetriever

    from .graph import gold_plan as plan_for
    from .graph import run_question

    index = make_index(retriever, dataset) if isinstance(retriever, str) else retriever
    if not isinstance(index, Index):
        raise TypeError(f"retriever must be 'bm25', 'dense' or an Index, got {type(retriever).__name__}")
    # Build lazily-built indexes (BM25 on bm25s) now, in this thread: the sweep's worker threads
    # would otherwise race on the first search, and a search racing the build returns no hits.
    index.search("warm up the index", 1)
    scoped = ScopedIndex(index)
    if model is None:
        if all(q.dataset == "world" for q in dataset.questions):
            model = OfflineChatModel(seed=seed)
        else:
            model = OfflineChatModel.simulating(dataset.questions, seed=seed)
    connection: sqlite3.Connection | None = None
    checkpointer: BaseCheckpointSaver
    if checkpoints is not None:
        Path(checkpoints).parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(str(checkpoints), check_same_thread=False)
        # checkpoints are a replay aid, not a ledger: WAL without a sync per commit is plenty
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        checkpointer = SqliteSaver(connection)
    else:
        checkpointer = InMemorySaver()
    agent = build_reference_agent(
        IndexRetriever(index=scoped, k=k), model, budget=budget, checkpointer=checkpointer
    )
    graph = instrument(agent, store=store, hop_nodes=REFERENCE_HOP_NODES, answer_nodes=REFERENCE_ANSWER_NODES)
    replayer = Replayer(graph, max_concurrency=max_concurrency)

    def run_base(question: Question) -> str:
        plan = plan_for(question) if gold_plan and question.hops else None
        run = run_question(graph, question, plan=plan)
        if run.run_id is None:
            raise RuntimeError(f"the run of question {question.id} left no trace")
        return run.run_id

    def can_fork(trajectory: Trajectory) -> bool:
        if not trajectory.thread_id:
            return False
        state = graph.graph.get_state({"configurable": {"thread_id": trajectory.thread_id}})
        return bool(state.values)

    def close() -> None:
        graph.shutdown()
        if connection is not None:
            connection.close()

    return SweepEnvironment(
        store=store,
        backend=replayer,
        adapter=ReferenceAgentAdapter(),
        dataset=dataset,
        run_base=run_base,
        scoped_index=scoped,
        can_fork=can_fork,
        retriever=retriever if isinstance(retriever, str) else index.name,
        close=close,
        grammar=WORLD_GRAMMAR,
    )
