"""``crs`` (CausalFlow): Causal Responsibility Scores from step interventions, used as a localiser.

A thin wrapper over :func:`causal_middleware.counterfactual.crs.compute_crs` (the scoring core shared with
repair): every node step but the final answer is a candidate, in causal order; K proposals per
step are applied as forks with the suffix regenerated and judged by the context's verifier; a
step's CRS is 1 when some proposal flips the failure. The diagnosis is the earliest step with
CRS 1 (its hop and node); none flips: answer stage. The proposer is the context's, else
the :class:`~causal_middleware.counterfactual.proposers.OfflineProposer` when an agent adapter is
given, else the generic :class:`~causal_middleware.counterfactual.trace_proposer.TraceProposer`.
"""

from __future__ import annotations

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    missing_parts,
)
from causal_middleware.attribution.step_probe import crs_diagnosis, probe_steps
from causal_middleware.counterfactual.crs import compute_crs
from causal_middleware.counterfactual.proposers import OfflineProposer
from causal_middleware.spans.model import Trajectory


class CRSDiagnoser(Diagnoser):
    name = "crs"
    uses_gold = False
    needs_live_agent = True
    description = "CausalFlow Causal Responsibility Scores (K proposals per step, suffix regenerated)"

    def __init__(self, k: int = 3) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "backend", "verdict")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        proposer = context.proposer
        if proposer is None and context.adapter is not None:
            proposer = OfflineProposer(context.adapter, context.index)
        if proposer is None:
            return probe_steps(self.name, trajectory, context, mode="regenerate", k=self.k)
        verify = context.verifier_callable()

        def verifier(run: Trajectory) -> bool | None:
            return verify(run)

        result = compute_crs(
            trajectory,
            context.backend,  # type: ignore[arg-type]
            proposer,
            verifier,
            k=self.k,
            max_reexecutions=context.max_reexecutions,
        )
        return crs_diagnosis(self.name, trajectory, result)
