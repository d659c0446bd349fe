"""The two-step search on a scripted agent: which first-step forks it searches (round-robin over\nsteps), a first change the second does not need, a reference only on the trajectory, a shared cache."""

from __future__ import annotations

from typing import Any

from causal_middleware.counterfactual.models import CRSResult, Probe
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.protocols import Proposal, ProposalBatch
from causal_middleware.repair.chain import bases
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import RepairConfig, RepairService, repair_run
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.testing.agent import Node, ScriptedAgent
from causal_middleware.testing.backend import DiscardingFakeForkBackend


def _probe(step: str, n: int, *, success: bool | None = False, error: str | None = None) -> Probe:
    proposal = Proposal(step_id=step, node=step, values={"v": n}, source="scripted")
    return Probe(proposal=proposal, fork_run_id=f"{step}-{n}", success=success, error=error)


def test_bases_take_each_steps_best_proposal_before_any_steps_second() -> None:
    probes = [_probe("a", 0), _probe("a", 1), _probe("a", 2), _probe("b", 0), _probe("b", 1), _probe("c", 0)]
    crs = CRSResult(run_id="r", k=3, baseline_success=False, probes=probes)
    forks = {p.fork_run_id or "": Trajectory(run_id=p.fork_run_id or "") for p in probes}
    order = [probe.fork_run_id for probe, _ in bases(crs, forks.get)]
    assert order == ["a-0", "b-0", "c-0", "a-1", "b-1", "a-2"]


def test_bases_take_each_steps_forks_in_the_proposers_order_not_the_searchs() -> None:
    # the search tried a-1 first (most minimal); the proposer ranked a-0 first
    probes = [_probe("a", 1), _probe("a", 0), _probe("b", 0), _probe("a", 2)]
    ranked = [
        p.model_copy(update={"proposal": p.proposal.model_copy(update={"rank": n})})
        for n, p in zip((1, 0, 0, None), probes, strict=True)
    ]
    crs = CRSResult(run_id="r", k=3, baseline_success=False, probes=ranked)
    forks = {p.fork_run_id or "": Trajectory(run_id=p.fork_run_id or "") for p in probes}
    assert [probe.fork_run_id for probe, _ in bases(crs, forks.get)] == ["a-0", "b-0", "a-1", "a-2"]


def test_bases_skip_flips_failed_probes_and_forks_not_kept() -> None:
    probes = [
        _probe("a", 0, success=True),
        _probe("a", 1, error="EditError: no such key"),
        _probe("a", 2, success=None),
        _probe("b", 0),
        _probe("c", 0),
    ]
    crs = CRSResult(run_id="r", k=3, baseline_success=False, probes=probes)
    forks = {
        p.fork_run_id or "": Trajectory(run_id=p.fork_run_id or "") for p in probes if p.fork_run_id != "c-0"
    }
    assert [probe.fork_run_id for probe, _ in bases(crs, forks.get)] == ["b-0"]


ORDER = {"a": "b", "b": "ans", "ans": None}


def _backend(*, needs_both: bool) -> DiscardingFakeForkBackend:
    """a -> b -> ans; ans is right when b wrote y=good (and, with ``needs_both``, a wrote x=good)."""

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        ok = state.get("y") == "good" and (state.get("x") == "good" or not needs_both)
        return {"answer": "good" if ok else "no"}

    return _chain_backend(answer)


def _chain_backend(answer: Any) -> DiscardingFakeForkBackend:
    """a (x=bad) -> b (y=bad) -> ans, whose output ``answer(state)`` gives."""
    agent = ScriptedAgent(
        nodes=[
            Node("a", lambda s: {"x": "bad"}),
            Node("b", lambda s: {"y": "bad"}),
            Node("ans", answer, answer_key="answer"),
        ],
        entry="a",
        route=lambda state, node, out: (state.update(out), ORDER[node])[1],
    )
    return DiscardingFakeForkBackend(agent)


class ContextProposer:
    """a: x=good then x=ok; b: y=good only on a fork (a proposal that depends on its context, as a
    model's or the trace proposer's does), y=meh on the run itself."""

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        if step.node == "a":
            values = [{"x": "good"}, {"x": "ok"}]
        elif step.node == "b":
            values = [{"y": "good"}] if trajectory.lineage is not None else [{"y": "meh"}]
        else:
            values = []
        return ProposalBatch(
            proposals=[
                Proposal(
                    step_id=step.step_id,
                    node=step.node or "",
                    hop=step.hop,
                    langgraph_step=step.langgraph_step,
                    values=v,
                    source="scripted",
                )
                for v in values
            ]
        )


def test_a_second_change_that_flips_the_run_alone_is_kept_as_a_single_step_repair() -> None:
    # b's fix only shows up on a fork (y=good), but the run does not need a's change to take it
    backend = _backend(needs_both=False)
    run = backend.run("q", reference="good")
    config = RepairConfig(max_steps=2, max_candidates=1)
    result = repair_run(
        run, backend=backend, proposer=ContextProposer(), verifier=ReferenceVerifier(), config=config
    )
    repair = result.repair
    assert repair is not None and result.status == "repaired"
    assert repair.prior == [] and (repair.node, repair.repaired) == ("b", {"y": "good"})
    assert repair.validation.passed and repair.validation.n_runs == 3
    b = next(s for s in run.steps if isinstance(s, NodeStep) and s.node == "b")
    assert repair.step_id == b.step_id and repair.run_id == run.run_id
    assert result.crs.score_of(b.step_id).crs == 1.0 and repair.crs == 1.0
    assert result.two_step is not None and result.two_step.alone_flips == 1
    assert result.pair is not None and result.prior_pairs == []
    assert RepairResult.model_validate(result.model_dump(mode="json")) == result


def test_a_step_the_search_did_not_score_gets_its_score_when_its_change_alone_flips() -> None:
    # the run's own search is held to step a; the second step's search on a's fork finds b
    backend = _backend(needs_both=False)
    run = backend.run("q", reference="good")
    config = RepairConfig(max_steps=2, candidates=["a"])
    result = repair_run(
        run, backend=backend, proposer=ContextProposer(), verifier=ReferenceVerifier(), config=config
    )
    assert result.repair is not None and result.repair.node == "b" and result.repair.prior == []
    assert [s.node for s in result.crs.scores] == ["a", "b"]
    assert result.crs.score_of(result.repair.step_id).crs == 1.0 and result.repair.crs == 1.0
    assert "proposed on fork" in result.repair.description


def test_a_second_change_whose_alone_flip_does_not_hold_leaves_the_two_step_repair_to_validate() -> None:
    seen = {"alone": 0}

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        ok = state.get("y") == "good"
        if ok and state.get("x") != "good":
            seen["alone"] += 1
            ok = seen["alone"] == 1  # the alone check flips; its re-runs do not
        return {"answer": "good" if ok else "no"}

    backend = _chain_backend(answer)
    run = backend.run("q", reference="good")
    config = RepairConfig(max_steps=2, max_candidates=1)
    result = repair_run(
        run, backend=backend, proposer=ContextProposer(), verifier=ReferenceVerifier(), config=config
    )
    assert result.two_step is not None and result.two_step.alone_flips == 1
    assert [p.proposal.values for p in result.rejected] == [{"y": "good"}]  # rejected as a single step
    repair = result.repair
    assert repair is not None and result.status == "repaired"
    assert [(p.node, p.repaired) for p in repair.prior] == [("a", {"x": "good"})]
    assert repair.validation.passed and repair.validation.second_alone_flips is None


def test_a_two_step_repair_whose_steps_are_both_needed() -> None:
    backend = _backend(needs_both=True)
    run = backend.run("q")  # the reference is only on the trajectory handed in
    trajectory = run.model_copy(update={"reference": "good"})
    result = repair_run(
        trajectory,
        backend=backend,
        proposer=ContextProposer(),
        verifier=ReferenceVerifier(),
        config=RepairConfig(max_steps=2),
    )
    repair = result.repair
    assert repair is not None and result.status == "repaired"
    assert [(p.node, p.repaired) for p in repair.prior] == [("a", {"x": "good"})]
    assert (repair.node, repair.repaired) == ("b", {"y": "good"})
    assert repair.validation.second_alone_flips is False and repair.validation.passed
    assert repair.first_change == (repair.prior[0].step_id, "a", None)
    assert result.pair is not None and result.pair.metadata["minimality"] == repair.step_minimality
    first_pair = result.prior_pairs[0]
    assert (
        first_pair.metadata["crs"] == 0.0
        and first_pair.metadata["fork_run_id"] == repair.prior[0].fork_run_id
    )
    assert RepairResult.model_validate(result.model_dump(mode="json")) == result


def test_a_shared_cache_finds_the_two_step_repair_again() -> None:
    backend = _backend(needs_both=True)
    run = backend.run("q", reference="good")
    service = RepairService(
        backend=backend,
        proposer=ContextProposer(),
        verifier=ReferenceVerifier(),
        store=backend.store,
        config=RepairConfig(max_steps=2),
    )
    first = service.repair(run.run_id, write=False)
    again = service.repair(run.run_id, write=False)
    assert first.status == again.status == "repaired"
    assert again.cost.forks_reused > 0
    assert again.repair is not None and first.repair is not None
    assert again.repair.prior[0].fork_run_id == first.repair.prior[0].fork_run_id
