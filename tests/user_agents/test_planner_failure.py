"""A planner failure before the first hop, blamed outside every hop and repaired, with no adapter.

The same user RAG graph as test_rag_poisoned_document.py over a clean corpus that also holds a
near-namesake company (Zorvax Labs, founded by Pell Arden, born in Corriby). The ``plan`` node
(a deterministic stand-in for an LLM planner) misreads the question's "Zorvex Labs" as "Zorvax
Labs" in ``plan`` and ``search_for``; every later step works faithfully on the wrong entity and
the run answers Corriby instead of Tessaly.

Every probing method must blame ``plan`` (hop None, stage "planning"), with the entity swap in
``search_for`` as its evidence. ``frozen_hop`` included: a frozen probe of a step outside every
hop re-runs everything after it (nothing downstream of a planner can be held), so its semantics
allow it to find the planner. The offline repair swaps the entity back and is validated.
"""

from __future__ import annotations

import pytest
from user_agent_graphs import (
    GOLD,
    PLANNER_WRONG,
    PLANNER_WRONG_PLACE,
    QUESTION,
    BM25Retriever,
    clean_corpus,
    rag_graph,
    vector_retriever,
)
from user_agent_harness import Recorded, Recorder

from causal_middleware.spans.model import NodeStep

METHODS = ["crs", "suffix_regen", "path_aware", "frozen_hop"]
RIGHT = "Zorvex Labs"


def record_misplanned(record: Recorder, kind: str) -> Recorded:
    docs = clean_corpus()
    retriever = BM25Retriever.over(docs, k=1) if kind == "bm25" else vector_retriever(docs, k=2)
    run = record(
        lambda saver: rag_graph(retriever, checkpointer=saver, misread={RIGHT: PLANNER_WRONG}),
        {"question": QUESTION},
        GOLD,
    )
    assert run.output["answer"] == PLANNER_WRONG_PLACE and run.output["founder"] == "Pell Arden"
    return run


def plan_step(run: Recorded) -> NodeStep:
    [step] = [s for s in run.trajectory.steps if isinstance(s, NodeStep) and s.node == "plan"]
    return step


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["bm25", "vector"])
def test_the_planner_is_blamed_outside_every_hop(record: Recorder, kind: str, method: str) -> None:
    run = record_misplanned(record, kind)
    plan = plan_step(run)
    assert plan.hop is None and run.trajectory.hop(1).sub_query == f"{PLANNER_WRONG} founded"
    diagnosis = run.diagnose(method)
    assert diagnosis.ran, diagnosis.reason
    assert (diagnosis.node, diagnosis.hop, diagnosis.stage) == ("plan", None, "planning"), (
        diagnosis.root_cause
    )
    assert diagnosis.step_id == plan.step_id
    evidence = diagnosis.details["evidence"]
    assert evidence["state_key"] == "search_for"
    assert RIGHT in evidence["change"] and PLANNER_WRONG in evidence["change"]
    assert evidence["source"] == "trace:text"
    assert "outside every hop" in diagnosis.root_cause
    assert 1 <= diagnosis.cost.reexecutions < 15


@pytest.mark.parametrize("kind", ["bm25", "vector"])
def test_the_repair_swaps_the_entity_back(record: Recorder, kind: str) -> None:
    run = record_misplanned(record, kind)
    plan = plan_step(run)
    result = run.repair()
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None
    assert (repair.node, repair.hop, repair.step_id) == ("plan", None, plan.step_id)
    assert repair.target == "search_for"
    assert isinstance(plan.output, dict) and plan.output["search_for"] == f"{PLANNER_WRONG} founded"
    assert repair.repaired["search_for"] == f"{RIGHT} founded"
    validation = repair.validation
    assert validation.passed and validation.only_change and validation.flips >= validation.min_flips
    assert repair.answer_before == PLANNER_WRONG_PLACE and repair.answer_after == GOLD
    assert repair.fork_run_id is not None
    fork = run.store.get_trajectory(repair.fork_run_id)
    assert fork.is_counterfactual and fork.answer == GOLD
    assert fork.hop(1).sub_query == f"{RIGHT} founded"
    assert "outside any hop" in result.explanation and "search_for" in result.explanation
