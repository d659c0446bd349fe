"""The hop repair and the causal-order probe diagnosers (frozen_hop, suffix_regen) and crs."""

from __future__ import annotations

import pytest
from attribution_sim import context_for, faulted_run

from causal_middleware.attribution import DiagnosisCost, get_diagnoser
from causal_middleware.attribution.hops import hop_views
from causal_middleware.attribution.repair_op import (
    ProbeBudgetExhausted,
    ProbeRunner,
    RepairUnavailable,
    align_gold_hop,
    gold_subquestion,
    repair_hop,
)


def test_gold_subquestion_substitutes_earlier_gold_answers(world) -> None:
    q = world.questions["q0-3"]
    assert gold_subquestion(q, 1) == "Who created Zorblat?"
    assert gold_subquestion(q, 2) == "Who founded Quanta Works?"
    assert gold_subquestion(q, 3) == "Where was Mira Velt born?"
    with pytest.raises(KeyError, match="no gold hop 4"):
        gold_subquestion(q, 4)


def test_alignment_follows_the_sub_query_not_the_position(world) -> None:
    q = world.questions["q0-3"]
    # a re-queried hop 3 still works on gold hop 2 ("founded"); a corrupted bridge keeps the relation
    assert align_gold_hop("Who founded Quintar Holdings?", 3, q) == 2
    assert align_gold_hop("Where was Garo Stint born?", 2, q) == 3
    assert align_gold_hop("", 2, q) == 2  # nothing to match: same position


def test_a_bridge_that_brought_its_own_relation_along_keeps_the_position(world) -> None:
    q = world.questions["q0-3"]
    # hop 2 read a whole (wrong) sentence and the agent filled it in as hop 3's bridge: the
    # sub-query holds both relations, and the wrong entity's words match gold hop 2's best
    recorded = "Where was Garo Stint founded Quanta Works in 1984. born?"
    assert align_gold_hop(recorded, 3, q) == 3
    assert align_gold_hop("Who founded Quanta Works?", 3, q) == 2  # a retry still aligns by words


def test_repair_uses_gold_when_given_and_the_recorded_query_otherwise(world) -> None:
    run = faulted_run(world, "content_corruption", 1)  # hop 2 searched the corrupted entity
    ctx = context_for(world)
    gold = repair_hop(run, 2, ctx)
    assert (gold.sub_query, gold.source, gold.gold_hop) == ("Who founded Quanta Works?", "gold", 2)
    assert gold.documents[0].id == "c0-org" and gold.intervention.node == "retrieve"
    assert gold.intervention.kind == "repair"
    assert gold.intervention.values["evidence"][0]["text"] == "Quanta Works was founded by Mira Velt."
    recorded = repair_hop(run, 2, ctx.model_copy(update={"question": None}))
    assert (recorded.sub_query, recorded.source) == ("Who founded Quintar Holdings?", "recorded")
    assert len(recorded.documents) == 3  # k = the most documents a hop of the run retrieved
    assert len(repair_hop(run, 2, ctx.model_copy(update={"repair_k": 1})).documents) == 1
    with pytest.raises(RepairUnavailable, match="no hop 9"):
        repair_hop(run, 9, ctx)
    with pytest.raises(RepairUnavailable, match="index"):
        repair_hop(run, 1, ctx.model_copy(update={"index": None}))


def test_probe_runner_caches_counts_and_honours_the_budget(world) -> None:
    run = faulted_run(world, "empty_retrieval", 3)
    cost = DiagnosisCost()
    runner = ProbeRunner(run, context_for(world, max_reexecutions=1), cost, hop_views(run))
    assert runner.rerun_for(3) == ["read", "answer"]
    first = runner.probe(3, "frozen")
    assert first.restored is True and first.answer == "Lostra" and first.fork_run_id
    assert runner.probe(3, "frozen") is first  # cached: no second fork
    assert (
        cost.reexecutions == 1 and world.backend.runs[first.fork_run_id].trajectory.lineage.mode == "frozen"
    )
    with pytest.raises(ProbeBudgetExhausted):
        runner.probe(2, "regenerate")


def test_frozen_hop_finds_faults_that_feed_the_answer_directly(world) -> None:
    ctx = context_for(world)
    d = get_diagnoser("frozen_hop").diagnose(faulted_run(world, "empty_retrieval", 3), ctx)
    assert (d.hop, d.stage, d.cost.reexecutions) == (3, "retrieval", 3)  # hops 1, 2, then 3 restores
    assert [p.restored for p in d.probes] == [False, False, True] and {p.mode for p in d.probes} == {"frozen"}
    assert d.uses_gold is True  # the repair used the gold decomposition


def test_frozen_hop_misses_a_propagated_bridge_fault(world) -> None:
    """Holding later hops fixed, repairing the corrupted bridge at hop 1 cannot restore the answer."""
    d = get_diagnoser("frozen_hop").diagnose(faulted_run(world, "content_corruption", 1), context_for(world))
    assert d.hop != 1 and d.probes[0].restored is False


def test_suffix_regen_blames_the_earliest_hop_that_washes_the_fault_out(world) -> None:
    ctx = context_for(world)
    d1 = get_diagnoser("suffix_regen").diagnose(faulted_run(world, "content_corruption", 1), ctx)
    assert (d1.hop, d1.cost.reexecutions, d1.probes[0].mode) == (1, 1, "regenerate")
    # A fault injected at hop 3 is not in the environment: regenerating from hop 1 washes it out too.
    d3 = get_diagnoser("suffix_regen").diagnose(faulted_run(world, "false_premise", 3), ctx)
    assert d3.hop == 1


def test_budget_exhaustion_is_reported_as_uncertain(world) -> None:
    run = faulted_run(world, "empty_retrieval", 3)
    d = get_diagnoser("frozen_hop").diagnose(run, context_for(world, max_reexecutions=2))
    assert d.hop is None and d.uncertain and d.details["budget_exhausted"] and d.cost.reexecutions == 2


def test_crs_localises_with_causal_responsibility_scores(world) -> None:
    run = faulted_run(world, "content_corruption", 1)
    d = get_diagnoser("crs", k=2).diagnose(run, context_for(world))
    assert d.ran and d.hop == 1 and d.node in {"decide", "retrieve", "read"}
    assert d.step_scores[d.step_id] == 1.0 and d.cost.reexecutions >= 1
    assert d.details["k"] == 2 and d.details["naive_reexecutions"] >= d.cost.reexecutions
    bare = get_diagnoser("crs").diagnose(run, context_for(world).model_copy(update={"backend": None}))
    assert bare.ran is False and "fork backend" in bare.reason
    with pytest.raises(ValueError, match="k must be"):
        get_diagnoser("crs", k=0)
