"""What diagnosing a user's run leaves alone, and what it does with runs that did not fail.

* A correct run of the user's RAG graph: the repair says ``not_failed`` and forks nothing.
* A run recorded without a reference, annotated afterwards with ``store.annotate``: the
  annotation is what diagnosis and repair judge against (no reference passed to either).
* Diagnosing (every probing method) and repairing a failed run, of the RAG graph and of the
  ``create_agent`` agent, leaves the user's thread exactly as the run left it: the same
  checkpoints (ids and steps) in ``get_state_history``, the same latest state, no fork written
  to it, and the recorded run itself unchanged in the store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.retrievers import index_for_graph
from user_agent_graphs import (
    GOLD,
    ONCALL_GOLD,
    POISON_ID,
    QUESTION,
    WRONG_PLACE,
    AgentWorld,
    BM25Retriever,
    agent_input,
    clean_corpus,
    poisoned_corpus,
    rag_graph,
    react_agent,
    vector_retriever,
)
from user_agent_harness import THREAD, Recorded, Recorder

from causal_middleware.attribution.base import DiagnosisContext
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.service import repair_run
from causal_middleware.spans.model import Outcome

METHODS = ["crs", "suffix_regen", "path_aware", "frozen_hop"]


@pytest.mark.parametrize("kind", ["bm25", "vector"])
def test_a_correct_run_is_not_failed(record: Recorder, kind: str) -> None:
    docs = clean_corpus()
    retriever = BM25Retriever.over(docs, k=1) if kind == "bm25" else vector_retriever(docs, k=1)
    run = record(lambda saver: rag_graph(retriever, checkpointer=saver), {"question": QUESTION}, GOLD)
    assert run.output["answer"] == GOLD
    assert run.trajectory.outcome == Outcome.SUCCESS
    before = run.history()
    result = run.repair()
    assert result.status == "not_failed", result.explanation
    assert result.repair is None and result.crs.baseline_success is True
    assert result.cost.reexecutions == 0
    assert "did not fail" in result.explanation
    assert run.history() == before
    assert [r.run_id for r in run.store.list_runs()] == [run.run_id]  # no fork was recorded


def test_a_run_annotated_after_the_fact_is_diagnosed_and_repaired_against_the_annotation(
    record: Recorder,
) -> None:
    retriever = BM25Retriever.over(poisoned_corpus(), k=1)
    run = record(
        lambda saver: rag_graph(retriever, checkpointer=saver),
        {"question": QUESTION},
        GOLD,
        record_reference=False,
    )
    assert run.trajectory.reference is None and run.trajectory.outcome != Outcome.FAILURE
    assert run.store.list_runs(outcome="failure") == []
    run.store.annotate(run.run_id, outcome="failure", reference=GOLD)
    assert [r.run_id for r in run.store.list_runs(outcome="failure")] == [run.run_id]
    trajectory = run.trajectory
    assert trajectory.reference == GOLD and trajectory.answer == WRONG_PLACE
    context = DiagnosisContext(backend=Replayer(run.ig), index=index_for_graph(run.ig))  # no reference
    diagnosis = get_diagnoser("crs").diagnose(trajectory, context)
    assert (diagnosis.node, diagnosis.hop, diagnosis.stage) == ("retrieve", 1, "retrieval")
    assert diagnosis.details["evidence"]["ids"][0] == POISON_ID
    result = repair_run(
        trajectory,
        backend=Replayer(run.ig),
        proposer=TraceProposer(index_for_graph(run.ig)),
        verifier=ReferenceVerifier(),  # the run's own (annotated) reference
        store=run.store,
    )
    assert result.status == "repaired", result.explanation
    assert result.repair is not None and result.repair.validation.passed
    assert run.store.get_trajectory(result.repair.fork_run_id or "").answer == GOLD


def _rag(record: Recorder) -> Recorded:
    retriever = vector_retriever(poisoned_corpus(), k=2)
    return record(lambda saver: rag_graph(retriever, checkpointer=saver), {"question": QUESTION}, GOLD)


def _agent(record: Recorder) -> Recorded:
    world = AgentWorld()
    run = record(lambda saver: react_agent(world, checkpointer=saver), agent_input(), ONCALL_GOLD)
    world.roster["billing"] = ONCALL_GOLD  # so the live re-run of the lookup repairs it
    return run


def _snapshot(run: Recorded) -> dict[str, Any]:
    state = run.ig.get_state(run.config)
    trajectory = run.trajectory
    return {
        "history": run.history(),
        "sources": [s.metadata.get("source") for s in run.ig.get_state_history(run.config)],
        "head": state.config["configurable"]["checkpoint_id"],
        "values": repr(state.values),
        "next": state.next,
        "steps": [(s.step_id, s.kind, repr(getattr(s, "output", None))) for s in trajectory.steps],
        "answer": trajectory.answer,
        "thread_runs": [r.run_id for r in run.store.list_runs(thread_id=THREAD)],
    }


@pytest.mark.parametrize("build", [_rag, _agent], ids=["rag", "create_agent"])
def test_diagnosis_and_repair_leave_the_users_thread_unchanged(
    record: Recorder, build: Callable[[Recorder], Recorded]
) -> None:
    run = build(record)
    before = _snapshot(run)
    assert before["thread_runs"] == [run.run_id] and len(before["history"]) >= 5
    forks: set[str] = set()
    for method in METHODS:
        diagnosis = run.diagnose(method)
        assert diagnosis.ran and diagnosis.cost.reexecutions >= 1
        forks |= {p["fork_run_id"] for p in diagnosis.details.get("probes", []) if p.get("fork_run_id")}
        assert _snapshot(run) == before, f"{method} changed the user's thread"
    result = run.repair()
    assert result.status == "repaired", result.explanation
    assert result.repair is not None and result.repair.fork_run_id is not None
    forks.add(result.repair.fork_run_id)
    after = _snapshot(run)
    assert after == before
    assert set(after["sources"]) <= {"input", "loop"}  # nothing was written with update_state
    # every fork ran on a thread of its own
    fork_threads = {run.store.get_trajectory(f).thread_id for f in forks}
    assert THREAD not in fork_threads and all(t and t.startswith(f"{THREAD}::fork-") for t in fork_threads)
