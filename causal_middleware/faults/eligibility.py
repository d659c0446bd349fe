"""Where a fault can land on a recorded run, and whether the unit counts.

A *search hop* is a hop of the trajectory whose evidence came from a retrieval (or a retrieval
tool call): the evidence families replace that evidence, query drift replaces the sub-query that
produced it, early termination answers instead of making that search. A fault requested at
hop *h* lands on hop *h* when *h* is a search hop, else on the closest earlier search hop (the
"actual injected hop"). A unit is **eligible** (AgenticRAG-FP's rule) only when the base run
answered correctly and the actual injected hop equals the requested depth; a hop-3 request on a
run that answered after two searches lands on hop 2 and is ineligible.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from causal_middleware.faults.model import FaultFamily, ReasonCode, Stage
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct


class Eligibility(BaseModel):
    """The verdict for one (run, family, requested hop)."""

    eligible: bool
    requested_hop: int
    injected_hop: int | None
    stage: Stage
    reason: str | None = None
    code: ReasonCode | None = Field(default=None, description="why not eligible, as a code")


def search_hops(trajectory: Trajectory) -> list[int]:
    """Indices of the hops that retrieved evidence (a retrieval step or a tool call), ascending."""
    return sorted(h.index for h in trajectory.hops if any(s.kind in ("retrieval", "tool") for s in h.steps))


def injected_hop(trajectory: Trajectory, requested_hop: int) -> int | None:
    """The hop a fault requested at ``requested_hop`` actually lands on (None: no search hop at or before it)."""
    if requested_hop < 1:
        raise ValueError(f"hops are 1-based; requested hop {requested_hop} is invalid")
    earlier = [h for h in search_hops(trajectory) if h <= requested_hop]
    return earlier[-1] if earlier else None


def stage_of(family: FaultFamily, trajectory: Trajectory, hop: int | None) -> Stage:
    """``answer`` for early termination; for the other families ``tool`` when the hop's evidence came
    from a tool call and ``retrieval`` otherwise; ``none`` when there is no hop to inject at."""
    if hop is None:
        return "none"
    if family == "early_termination":
        return "answer"
    try:
        steps = trajectory.hop(hop).steps
    except KeyError:
        return "none"
    kinds = {s.kind for s in steps}
    return "tool" if "tool" in kinds and "retrieval" not in kinds else "retrieval"


def check_eligibility(
    trajectory: Trajectory, question: Question, family: FaultFamily, requested_hop: int
) -> Eligibility:
    """Eligibility of injecting ``family`` at ``requested_hop`` of base run ``trajectory``."""
    actual = injected_hop(trajectory, requested_hop)
    stage = stage_of(family, trajectory, actual)
    if not is_correct(trajectory.answer, question):
        return Eligibility(
            eligible=False,
            requested_hop=requested_hop,
            injected_hop=actual,
            stage=stage,
            reason=f"base run answered {trajectory.answer!r}, not the gold {question.answer!r}",
            code="base_incorrect",
        )
    if actual != requested_hop:
        searched = search_hops(trajectory)
        return Eligibility(
            eligible=False,
            requested_hop=requested_hop,
            injected_hop=actual,
            stage=stage,
            reason=f"requested hop {requested_hop} but the base run searched at hops {searched}",
            code="hop_mismatch",
        )
    return Eligibility(eligible=True, requested_hop=requested_hop, injected_hop=actual, stage=stage)
