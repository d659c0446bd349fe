"""Typed results of CausalFlow repair: probes, Causal Responsibility Scores, repairs (proposals,
verdicts and costs are the protocols' data: ``causal_middleware.protocols``).

Every model here is JSON-serialisable (``model_dump(mode="json")``): the store keeps them as
``repair`` / ``diagnosis`` records and ``causal-mw repair --json`` prints them.
"""

from __future__ import annotations

from typing import Any, Literal

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


class OfflineValidation(_Model):
    """Deterministic validation: the repair flips the outcome in ``m`` of ``n`` re-runs and the
    repaired step is the only change between parent and fork up to the fork point."""

    ran: bool = True
    passed: bool
    n_runs: int
    min_flips: int
    flips: int
    fork_run_ids: list[str] = Field(default_factory=list)
    only_change: bool
    differences: list[str] = Field(default_factory=list, description="what else differed, if anything")
    reason: str = ""


class RoleJudgement(_Model):
    role: Literal["proposer", "critic", "meta_critic"]
    agree: bool | None = None
    confidence: float | None = None
    reason: str = ""


class LLMValidation(_Model):
    """Proposer / critic / meta-critic agreement on the attribution; retained at ``confidence >=
    threshold`` (CausalFlow's default 0.5). ``ran=False`` with a reason when no model is configured."""

    ran: bool
    reason: str = ""
    retained: bool | None = None
    confidence: float | None = None
    threshold: float = 0.5
    judgements: list[RoleJudgement] = Field(default_factory=list)
    cost: RepairCost = Field(default_factory=RepairCost)


class ContrastivePair(_Model):
    """(wrong step, corrected step) as a preference example: TRL's standard explicit-prompt shape."""

    prompt: str
    chosen: str
    rejected: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Repair(_Model):
    """The validated minimal repair of one failed run."""

    run_id: str
    step_id: str
    node: str
    hop: int | None = None
    langgraph_step: int | None = None
    original: Any = Field(description="the step's recorded output")
    repaired: dict[str, Any] = Field(description="the values the fork put there")
    source: str
    description: str = ""
    target: str | None = Field(default=None, description="the state key (path) the repair changes")
    evidence: list[str] = Field(
        default_factory=list, description="document ids / tool names the repair removes or brings in"
    )
    minimality: float
    crs: float
    fork_run_id: str | None = None
    answer_before: str | None = None
    answer_after: str | None = None
    validation: OfflineValidation
    llm_validation: LLMValidation
    explanation: str = ""


RepairStatus = Literal["repaired", "not_failed", "no_flip", "unvalidated"]


class RepairResult(_Model):
    """Everything ``repair_run`` found: the CRS search, the chosen repair (if any) and its cost."""

    run_id: str
    status: RepairStatus
    repair: Repair | None = None
    crs: CRSResult
    rejected: list[Probe] = Field(
        default_factory=list, description="successful probes that failed re-validation, most minimal first"
    )
    cost: RepairCost = Field(default_factory=RepairCost)
    pair: ContrastivePair | None = None
    explanation: str = ""
    discard_errors: list[str] = Field(
        default_factory=list, description="forks that could not be discarded: 'run id: error'"
    )
