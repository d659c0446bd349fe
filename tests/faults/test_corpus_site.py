"""Faults written into the corpus (``site="corpus"``): the fork re-runs the hop's retrieval on a
private corpus copy, so the trace holds what the retriever really returned; passages the
retrieval misses leave the unit ``skipped``; the shared index and the base run stay untouched."""

from __future__ import annotations

from dataclasses import replace

import pytest
from faults_helpers import make_env, small_world

from causal_middleware.faults.families import FaultPlan
from causal_middleware.faults.model import FaultLabel, PlantedPassage
from causal_middleware.faults.sweep import _retrieved_label, latest_records, run_sweep
from causal_middleware.spans.model import Document, Hop, Intervention, RetrievalStep, Trajectory
from causal_middleware.tasks.model import Passage


def _question(qid: str):  # type: ignore[no-untyped-def]
    return next(q for q in small_world().questions if q.id == qid)


def test_a_corpus_fault_is_what_the_live_retrieval_returned_from_a_private_copy(env) -> None:  # type: ignore[no-untyped-def]
    question = _question("q0003")
    result = run_sweep(env, [question], depths=[2], families=["content_corruption"], site="corpus")
    (record,) = result.records
    assert result.site == "corpus" and record.site == "corpus" and record.key.endswith('"corpus"]')
    assert record.status == "done", record.reason
    label = record.label
    assert label is not None and label.site == "corpus" and label.persistent
    corruption = label.corruption
    assert corruption is not None and corruption.rank is not None
    # the fork re-issued hop 2's own sub-query (decide), it did not overwrite the retrieval
    assert record.intervention is not None and record.intervention["node"] == "decide"
    base = env.store.get_trajectory(record.base_run_id)
    fork = env.store.get_trajectory(record.fork_run_id)
    assert fork.hop(2).sub_query == base.hop(2).sub_query
    assert FaultLabel.model_validate(fork.labels["fault"]) == label  # the fork carries the final label
    assert f"retrieved at rank {corruption.rank}" in (label.detail or "")
    retrieved = fork.hop(2).documents[corruption.rank - 1]
    assert retrieved.id == corruption.passage_id and corruption.corrupted in retrieved.text
    # the corrupted text lives only in the record's private passages, never in the shared index
    (upsert,) = record.upserts
    assert upsert.id == corruption.passage_id and corruption.corrupted in upsert.text
    shared = env.scoped_index.base.get(corruption.passage_id)
    assert corruption.corrupted not in shared.text
    assert all(corruption.corrupted not in d.text for d in base.hop(2).documents)


def test_corpus_site_takes_content_families_only_and_needs_a_scoped_index(env) -> None:  # type: ignore[no-untyped-def]
    question = _question("q0003")
    with pytest.raises(ValueError, match="no corpus form"):
        run_sweep(env, [question], depths=[1], families=["empty_retrieval"], site="corpus")
    with pytest.raises(ValueError, match="'trace' or 'corpus'"):
        run_sweep(env, [question], depths=[1], families=["false_premise"], site="index")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ScopedIndex"):
        run_sweep(
            replace(env, scoped_index=None), [question], depths=[1], families=["false_premise"], site="corpus"
        )


def test_trace_and_corpus_units_of_one_question_are_kept_apart() -> None:
    env = make_env()
    try:
        question = _question("q0003")
        run_sweep(env, [question], depths=[1], families=["false_premise"])
        run_sweep(env, [question], depths=[1], families=["false_premise"], site="corpus")
        sites = sorted(r.site for r in latest_records(env.store).values())
        assert sites == ["corpus", "trace"]
        again = run_sweep(env, [question], depths=[1], families=["false_premise"], site="corpus")
        assert again.resumed == 1 and again.records == []
    finally:
        env.close()


def _plan(upserts: list[Passage]) -> FaultPlan:
    label = FaultLabel(
        family="false_premise",
        stage="retrieval",
        requested_hop=1,
        injected_hop=1,
        base_run_id="b" * 32,
        site="corpus",
        planted=[PlantedPassage(kind="false_premise", passage_id="planted", text="t", rank=1)],
    )
    return FaultPlan(
        status="ready",
        family="false_premise",
        requested_hop=1,
        injected_hop=1,
        stage="retrieval",
        label=label,
        intervention=Intervention(node="decide", hop=1, values={}),
        upserts=upserts,
    )


def _fork(ids: list[str]) -> Trajectory:
    documents = [Document(id=i, text=i) for i in ids]
    step = RetrievalStep(step_id="0" * 16, node="retrieve", hop=1, query="q", documents=documents)
    return Trajectory(run_id="f" * 32, hops=[Hop(index=1, sub_query="q", documents=documents, steps=[step])])


def test_the_label_gets_the_rank_the_retriever_gave_or_none_when_it_missed() -> None:
    plan = _plan([Passage(id="planted", text="t")])
    hit = _retrieved_label(plan, _fork(["x", "planted", "y"]))
    assert hit is not None and hit.planted[0].rank == 2
    assert _retrieved_label(plan, _fork(["x", "y"])) is None
