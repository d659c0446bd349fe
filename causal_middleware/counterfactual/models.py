"""Typed results of the counterfactual search: probes and Causal Responsibility Scores.

Every model here is JSON-serialisable (``model_dump(mode="json")``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.protocols import Proposal, RepairCost


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Probe(_Model):
    """One proposal applied as a fork, suffix regenerated, outcome judged."""

    proposal: Proposal
    fork_run_id: str | None = None
    success: bool | None = None
    answer: str | None = None
    feedback: str = ""
    reused: bool = Field(default=False, description="answered from the fork cache, no re-execution")
    error: str | None = None


class StepScore(_Model):
    """The Causal Responsibility Score of one candidate step.

    ``crs`` is 1.0 when some proposal flipped the failure to success, 0.0 when none of the tested
    proposals did, and None when the step was not tested (early stop or re-execution cap).
    """

    step_id: str
    node: str
    hop: int | None = None
    langgraph_step: int | None = None
    crs: float | None = None
    flip_rate: float | None = Field(default=None, description="flips / proposals tested")
    n_proposals: int = 0
    n_tested: int = 0
    n_flips: int = 0
    skipped: str | None = Field(default=None, description="why the step was not (fully) tested")


class CRSResult(_Model):
    """Causal Responsibility Scores of a failed run's candidate steps, in causal order."""

    run_id: str
    k: int
    baseline_success: bool | None = Field(description="the verifier's verdict on the original run")
    baseline_feedback: str = ""
    scores: list[StepScore] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)
    cost: RepairCost = Field(default_factory=RepairCost)
    stopped_early: bool = False
    capped: bool = Field(default=False, description="the re-execution cap stopped the search")

    @property
    def flagged(self) -> list[StepScore]:
        """Steps with CRS 1 (some proposal flipped the outcome), in causal order."""
        return [s for s in self.scores if s.crs == 1.0]

    def successful_probes(self, step_id: str | None = None) -> list[Probe]:
        return [p for p in self.probes if p.success and (step_id is None or p.proposal.step_id == step_id)]

    def score_of(self, step_id: str) -> StepScore:
        for s in self.scores:
            if s.step_id == step_id:
                return s
        raise KeyError(f"step {step_id!r} is not a candidate of run {self.run_id}")
