"""The two-step search's choice of first-step forks: round-robin over steps, flips and errors left out."""

from __future__ import annotations

from causal_middleware.counterfactual.models import CRSResult, Probe
from causal_middleware.protocols import Proposal
from causal_middleware.repair.chain import bases
from causal_middleware.spans.model import Trajectory


def _probe(step: str, n: int, *, success: bool | None = False, error: str | None = None) -> Probe:
    proposal = Proposal(step_id=step, node=step, values={"v": n}, source="scripted")
    return Probe(proposal=proposal, fork_run_id=f"{step}-{n}", success=success, error=error)


def test_bases_take_each_steps_best_proposal_before_any_steps_second() -> None:
    probes = [_probe("a", 0), _probe("a", 1), _probe("a", 2), _probe("b", 0), _probe("b", 1), _probe("c", 0)]
    crs = CRSResult(run_id="r", k=3, baseline_success=False, probes=probes)
    forks = {p.fork_run_id or "": Trajectory(run_id=p.fork_run_id or "") for p in probes}
    order = [probe.fork_run_id for probe, _ in bases(crs, forks)]
    assert order == ["a-0", "b-0", "c-0", "a-1", "b-1", "a-2"]


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
    assert [probe.fork_run_id for probe, _ in bases(crs, forks)] == ["b-0"]
