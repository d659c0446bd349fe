"""Causal Responsibility Scores on the simulated agent, where the flipping steps are known.

Sloppy world: hop 1's reader takes "Rob Smith" (founder of the near-namesake Acme Group), so the
run answers Lyon instead of Paris. Replacing hop 1's fact with "Bob Smith", hop 2's sub-query with
one naming Bob Smith, or hop 2's fact with "Paris" each flips the run; a hop-1 sub-query about
Zeta Inc does not.
"""

from __future__ import annotations

from typing import Any

import pytest
from repair_fakes import ScriptedProposer
from repair_sim import World, make_world, node_step

from causal_middleware.counterfactual.candidates import candidate_steps, final_answer_step, fork_point
from causal_middleware.counterfactual.crs import ForkCache, compute_crs
from causal_middleware.counterfactual.verifiers import ReferenceVerifier

NO_FLIP = {"sub_query": "Who founded Zeta Inc?"}
FIX_FACT1 = {"fact": "Bob Smith"}
FIX_QUERY2 = {"sub_query": "Where was Bob Smith born?"}
FIX_FACT2 = {"fact": "Paris"}

SCRIPT: dict[tuple[str, int | None], list[dict[str, Any]]] = {
    ("decide", 1): [NO_FLIP],
    ("read", 1): [FIX_FACT1],
    ("decide", 2): [FIX_QUERY2],
    ("read", 2): [FIX_FACT2],
}


def test_candidates_are_every_node_step_but_the_final_answer(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    steps = candidate_steps(run)
    assert [(s.node, s.hop) for s in steps] == [
        ("decide", 1),
        ("retrieve", 1),
        ("read", 1),
        ("decide", 2),
        ("retrieve", 2),
        ("read", 2),
    ]
    final = final_answer_step(run)
    assert final is not None and final.node == "answer"
    assert [s.node for s in candidate_steps(run, ["read"])] == ["read", "read"]
    with pytest.raises(ValueError, match="no candidate step 'nope'"):
        candidate_steps(run, ["nope"])


def test_early_stop_flags_the_first_flipping_step_in_causal_order(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    assert run.answer == "Lyon"
    proposer = ScriptedProposer(SCRIPT)
    result = compute_crs(run, sloppy_world.backend, proposer, ReferenceVerifier(), k=3)

    by_step = {(s.node, s.hop): s for s in result.scores}
    assert result.baseline_success is False
    assert by_step[("decide", 1)].crs == 0.0
    assert by_step[("retrieve", 1)].crs is None and by_step[("retrieve", 1)].skipped == "no proposals"
    assert by_step[("read", 1)].crs == 1.0 and by_step[("read", 1)].flip_rate == 1.0
    for later in [("decide", 2), ("retrieve", 2), ("read", 2)]:
        assert by_step[later].crs is None
        assert "early stop" in (by_step[later].skipped or "")
    assert [(s.node, s.hop) for s in result.flagged] == [("read", 1)]
    assert result.stopped_early
    # two forks (decide@1, read@1); the exhaustive baseline is 6 candidate steps x K=3
    assert result.cost.reexecutions == 2 == len(sloppy_world.backend.fork_calls)
    assert result.cost.naive_reexecutions == 18
    assert proposer.asked == [("decide", 1), ("retrieve", 1), ("read", 1)]
    flip = result.successful_probes()[0]
    assert flip.answer == "Paris" and flip.fork_run_id is not None


def test_without_early_stop_every_step_is_scored(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    result = compute_crs(
        run, sloppy_world.backend, ScriptedProposer(SCRIPT), ReferenceVerifier(), early_stop=False
    )
    assert [(s.node, s.hop) for s in result.flagged] == [("read", 1), ("decide", 2), ("read", 2)]
    assert not result.stopped_early
    assert result.cost.reexecutions == 4


def test_proposals_are_tried_most_minimal_first(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    # both flip; "Bob Smith" keeps "Smith" in place (minimality 0.5), "Bob" keeps nothing (0.0)
    proposer = ScriptedProposer({("read", 1): [{"fact": "Bob"}, FIX_FACT1]})
    result = compute_crs(run, sloppy_world.backend, proposer, ReferenceVerifier(), candidates=["read"])
    assert len(result.probes) == 1
    assert result.probes[0].proposal.values == FIX_FACT1
    assert result.probes[0].proposal.minimality == pytest.approx(0.5)

    exhaustive = compute_crs(
        run, sloppy_world.backend, proposer, ReferenceVerifier(), candidates=["read"], early_stop=False
    )
    read1 = [p for p in exhaustive.probes if p.proposal.hop == 1]
    assert [p.proposal.values for p in read1] == [FIX_FACT1, {"fact": "Bob"}]
    assert [p.proposal.rank for p in read1] == [1, 0]  # the proposer's own order is kept
    assert all(p.success for p in read1)
    assert exhaustive.score_of(read1[0].proposal.step_id).flip_rate == 1.0


def test_duplicate_and_no_op_proposals_are_not_forked(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    original = node_step(run, "decide", 1).output
    proposer = ScriptedProposer({("decide", 1): [dict(original), NO_FLIP, dict(NO_FLIP)]})
    result = compute_crs(run, sloppy_world.backend, proposer, ReferenceVerifier(), candidates=["decide"])
    assert result.cost.duplicates_skipped == 2
    decide1 = result.scores[0]
    assert decide1.n_proposals == 1 and decide1.n_tested == 1
    assert [c["values"] for c in sloppy_world.backend.fork_calls] == [NO_FLIP]


def test_reexecution_cap_stops_the_search(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    result = compute_crs(
        run, sloppy_world.backend, ScriptedProposer(SCRIPT), ReferenceVerifier(), max_reexecutions=1
    )
    assert result.capped
    assert result.cost.reexecutions == 1 == len(sloppy_world.backend.fork_calls)
    by_step = {(s.node, s.hop): s for s in result.scores}
    assert by_step[("read", 1)].crs is None
    assert "cap 1" in (by_step[("read", 1)].skipped or "")
    assert result.flagged == []


def test_fork_cache_reuses_probes_across_calls(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    cache = ForkCache()
    first = compute_crs(run, sloppy_world.backend, ScriptedProposer(SCRIPT), ReferenceVerifier(), cache=cache)
    forks = len(sloppy_world.backend.fork_calls)
    second = compute_crs(
        run, sloppy_world.backend, ScriptedProposer(SCRIPT), ReferenceVerifier(), cache=cache
    )
    assert len(sloppy_world.backend.fork_calls) == forks
    assert second.cost.reexecutions == 0 and second.cost.forks_reused == 2
    assert all(p.reused for p in second.probes)
    assert [s.crs for s in second.scores] == [s.crs for s in first.scores]


def test_a_successful_run_is_not_probed(clean_world: World) -> None:
    run = clean_world.backend.run()
    proposer = ScriptedProposer(SCRIPT)
    result = compute_crs(run, clean_world.backend, proposer, ReferenceVerifier())
    assert result.baseline_success is True
    assert result.scores == [] and result.probes == []
    assert proposer.asked == [] and clean_world.backend.fork_calls == []


def test_a_fork_that_raises_is_a_failed_probe_not_a_crash(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()

    class Broken:
        def fork(self, run_id: str, **kwargs: Any) -> Any:
            raise RuntimeError("checkpoint gone")

    result = compute_crs(run, Broken(), ScriptedProposer(SCRIPT), ReferenceVerifier(), early_stop=False)
    assert result.flagged == []
    assert all(p.error == "RuntimeError: checkpoint gone" and p.success is None for p in result.probes)
    assert result.cost.reexecutions == 4


def test_bad_arguments_are_named() -> None:
    world = make_world(sloppy=True)
    run = world.backend.run()
    with pytest.raises(ValueError, match="k must be >= 1"):
        compute_crs(run, world.backend, ScriptedProposer({}), ReferenceVerifier(), k=0)
    with pytest.raises(ValueError, match="max_reexecutions"):
        compute_crs(run, world.backend, ScriptedProposer({}), ReferenceVerifier(), max_reexecutions=-1)
    with pytest.raises(TypeError, match="ForkBackend"):
        compute_crs(run, object(), ScriptedProposer({}), ReferenceVerifier())  # type: ignore[arg-type]


def test_a_fork_is_probed_from_its_fork_point_on(clean_world: World) -> None:
    base = clean_world.backend.run()
    assert base.answer == "Paris"
    evidence = node_step(base, "retrieve", 2).output["evidence"]
    corrupted = [dict(d, text=d["text"].replace("Paris", "Nice")) for d in evidence]
    faulted = clean_world.backend.inject(base.run_id, "retrieve", 2, {"evidence": corrupted})
    assert faulted.answer == "Nice" and faulted.lineage is not None
    start = fork_point(faulted)
    assert start is not None and (start.node, start.hop) == ("retrieve", 2)

    proposer = ScriptedProposer({("decide", 1): [NO_FLIP], ("retrieve", 2): [{"evidence": evidence}]})
    result = compute_crs(faulted, clean_world.backend, proposer, ReferenceVerifier())
    assert proposer.asked[0] == ("retrieve", 2)
    assert [(s.node, s.hop) for s in result.flagged] == [("retrieve", 2)]

    # without lineage awareness the hop-1 probe regenerates the injected fault away and "flips"
    naive = ScriptedProposer({("decide", 1): [{"sub_query": "Who founded Acme Corp?", "retry": 1}]})
    loose = compute_crs(faulted, clean_world.backend, naive, ReferenceVerifier(), respect_lineage=False)
    assert [(s.node, s.hop) for s in loose.flagged] == [("decide", 1)]


def test_extra_feedback_reaches_the_proposer_once(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = ScriptedProposer(SCRIPT)
    compute_crs(run, sloppy_world.backend, proposer, ReferenceVerifier(), extra_feedback="user: it's Paris")
    assert proposer.feedback and all(f.endswith("\nuser: it's Paris") for f in proposer.feedback)
    assert all("does not match the reference" in f for f in proposer.feedback)  # the verifier's, first
    again = ScriptedProposer(SCRIPT)
    verdict = ReferenceVerifier().verify(run).feedback
    compute_crs(run, sloppy_world.backend, again, ReferenceVerifier(), extra_feedback=verdict)
    assert all(f == verdict for f in again.feedback)  # not repeated when it is the verifier's own
