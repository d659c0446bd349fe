"""Typed results of CausalFlow repair: validations, repairs and contrastive pairs (probes and
Causal Responsibility Scores are in ``causal_middleware.counterfactual.models``; proposals, verdicts
and costs are the protocols' data: ``causal_middleware.protocols``).

Every model here is JSON-serialisable (``model_dump(mode="json")``): the store keeps them as
``repair`` / ``diagnosis`` records and ``causal-mw repair --json`` prints them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.counterfactual.models import CRSResult, Probe
from causal_middleware.protocols import RepairCost


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    second_alone_flips: bool | None = Field(
        default=None,
        description="two-step repair: whether its second change alone flipped the run (then the first "
        "is not needed and the repair is rejected); None for one step, or when the run has no such step",
    )
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


class RepairStep(_Model):
    """An earlier change of a two-step repair: applied to ``run_id``'s step, it made the fork
    ``fork_run_id`` on which the repair's own step was found."""

    run_id: str
    step_id: str
    node: str
    hop: int | None = None
    langgraph_step: int | None = None
    original: Any = Field(description="the step's recorded output")
    repaired: dict[str, Any] = Field(description="the values the fork put there")
    source: str
    description: str = ""
    target: str | None = None
    evidence: list[str] = Field(default_factory=list)
    minimality: float
    fork_run_id: str | None = None
    answer_after: str | None = Field(
        default=None, description="what the agent answered with this change alone"
    )


class Repair(_Model):
    """The validated minimal repair of one failed run. A two-step repair lists its first change in
    ``prior``; its own step (``step_id`` ...) is then a step of ``prior[-1].fork_run_id``."""

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
    minimality: float = Field(description="of a two-step repair: the product of its steps' minimality")
    step_minimality: float | None = Field(
        default=None, description="of a two-step repair: its own (second) step's minimality"
    )
    crs: float
    fork_run_id: str | None = None
    prior: list[RepairStep] = Field(
        default_factory=list, description="a two-step repair's first change (empty: one step)"
    )
    answer_before: str | None = None
    answer_after: str | None = None
    validation: OfflineValidation
    llm_validation: LLMValidation
    explanation: str = ""

    @property
    def first_change(self) -> tuple[str, str, int | None]:
        """(step id, node, hop) of the repaired run's step this repair changes: its own step, or
        for a two-step repair its first change's (its own step is a step of a fork)."""
        step = self.prior[0] if self.prior else self
        return step.step_id, step.node, step.hop


class TwoStepSearch(_Model):
    """What the two-step search spent (``RepairConfig.max_steps=2``, no single-step repair held)."""

    bases: int = Field(default=0, description="first-step forks searched for a second step")
    reexecutions: int = Field(default=0, description="the search's forks (validation not counted)")
    flips: int = Field(default=0, description="second-step proposals that flipped the run")
    alone_flips: int = Field(
        default=0,
        description="of those, the ones that flipped the run without the first change too: each is "
        "validated as a single-step repair instead",
    )


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
    llm_judged: int = Field(default=0, description="re-validated repairs the multi-agent validation judged")
    llm_not_retained: int = Field(default=0, description="of those, the ones it did not retain")
    two_step: TwoStepSearch | None = Field(default=None, description="None: the two-step search did not run")
    pair: ContrastivePair | None = None
    prior_pairs: list[ContrastivePair] = Field(
        default_factory=list, description="a two-step repair's pair for its first change"
    )
    explanation: str = ""
    discard_errors: list[str] = Field(
        default_factory=list, description="forks that could not be discarded: 'run id: error'"
    )
