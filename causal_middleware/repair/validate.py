"""Validation of a repair.

Offline (deterministic, always run): the repair must flip the outcome in ``m`` of ``n`` fresh
re-runs of the fork, and the repaired step must be the only change between the parent run and the
fork up to the fork point (:func:`prefix_differences`).

LLM form (CausalFlow's multi-agent validation, only with a model): a proposer states the
attribution, a critic challenges it, a meta-critic weighs both; the repair is retained when the
meta-critic's confidence that the attribution holds is at least ``threshold`` (default 0.5).
Without a model it reports ``ran=False`` ("not run"), never a made-up verdict; so it does when a
role's model call raises (an API error that outlived the client's retries), with the error.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from causal_middleware.counterfactual.crs import fork_with, judge_fork
from causal_middleware.counterfactual.llm import call_model, parse_json, render_trace
from causal_middleware.counterfactual.models import Probe
from causal_middleware.counterfactual.render import canonical_json, to_jsonable
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import describe_error
from causal_middleware.protocols import ForkBackend, Proposal, RepairCost, Verifier
from causal_middleware.repair.models import LLMValidation, OfflineValidation, RoleJudgement
from causal_middleware.spans.model import NodeStep, Trajectory


def prefix_differences(parent: Trajectory, fork: Trajectory, proposal: Proposal) -> list[str]:
    """What differs between ``parent`` and ``fork`` up to and including the fork point, other than
    the repaired step taking ``proposal.values``. Empty means the repair is the only change.

    Compared: the fork's lineage names the parent; every parent node step before the repaired
    step appears in the fork with the same node, ``langgraph_step`` and output; the fork's step at
    the fork point (or, when the fork does not record it as a step, its lineage intervention)
    carries the proposed values and, for any other key, the original output's value.
    """
    diffs: list[str] = []
    if fork.lineage is None or fork.lineage.parent_run_id != parent.run_id:
        got = fork.lineage.parent_run_id if fork.lineage else None
        diffs.append(f"fork lineage names parent {got!r}, not {parent.run_id!r}")
    parent_nodes = [s for s in parent.steps if isinstance(s, NodeStep)]
    cut = next((i for i, s in enumerate(parent_nodes) if s.step_id == proposal.step_id), None)
    if cut is None:
        return [*diffs, f"parent run has no step {proposal.step_id!r}"]
    fork_nodes = [s for s in fork.steps if isinstance(s, NodeStep)]
    for i, before in enumerate(parent_nodes[:cut]):
        after = fork_nodes[i] if i < len(fork_nodes) else None
        where = f"{before.node}@{before.langgraph_step}"
        if after is None:
            diffs.append(f"fork lacks prefix step {where}")
        elif (after.node, after.langgraph_step) != (before.node, before.langgraph_step):
            diffs.append(f"prefix step {where} became {after.node}@{after.langgraph_step}")
        elif canonical_json(after.output) != canonical_json(before.output):
            diffs.append(f"prefix step {where} output changed")
    original = parent_nodes[cut].output
    at_fork = fork_nodes[cut] if cut < len(fork_nodes) else None
    where = f"{proposal.node}@{proposal.langgraph_step}"
    if at_fork is not None and (at_fork.node, at_fork.langgraph_step) == (
        proposal.node,
        proposal.langgraph_step,
    ):
        if not _is_repair_of(at_fork.output, proposal.values, original):
            diffs.append(f"fork's {where} output is not the repair")
    elif fork.lineage is not None and fork.lineage.intervention is not None:
        if not _is_repair_of(fork.lineage.intervention.values, proposal.values, original):
            diffs.append("fork's intervention values are not the repair")
    else:
        diffs.append("fork records neither the repaired step nor its intervention")
    return diffs


def _is_repair_of(output: Any, values: dict[str, Any], original: Any) -> bool:
    """``output`` carries ``values`` and, for every other key, the original output's value (a
    backend may merge the repair into the recorded output; an absent key counts as ``None``)."""
    if not isinstance(output, dict):
        return canonical_json(output) == canonical_json(values)
    before = original if isinstance(original, dict) else {}
    for key in set(output) | set(values):
        expected = values[key] if key in values else before.get(key)
        if canonical_json(output.get(key)) != canonical_json(expected):
            return False
    return True


def validate_offline(
    parent: Trajectory,
    proposal: Proposal,
    backend: ForkBackend,
    verifier: Verifier,
    *,
    n: int = 3,
    m: int = 2,
    cost: RepairCost | None = None,
) -> OfflineValidation:
    """Re-run the repair ``n`` times (``n`` re-executions); pass when ``>= m`` flip and the repair
    is the only change up to the fork point."""
    if n < 1 or not 1 <= m <= n:
        raise ValueError(f"need n >= 1 and 1 <= m <= n, got n={n}, m={m}")
    spent = cost if cost is not None else RepairCost()
    flips = 0
    fork_ids: list[str] = []
    differences: list[str] = []
    errors: list[str] = []
    for _ in range(n):
        spent.reexecutions += 1
        try:
            fork = fork_with(backend, parent, proposal, labels={"repair_validation": True})
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        fork_ids.append(fork.run_id)
        verdict = judge_fork(verifier, parent, fork)
        spent.absorb(verdict.cost)
        flips += int(verdict.success is True)
        for diff in prefix_differences(parent, fork, proposal):
            if diff not in differences:
                differences.append(diff)
    return offline_validation(n, m, flips, fork_ids, differences, errors)


def offline_validation(
    n: int, m: int, flips: int, fork_ids: list[str], differences: list[str], errors: list[str]
) -> OfflineValidation:
    """The verdict of ``n`` re-runs: passed when ``>= m`` flipped and none changed anything else."""
    only_change = not differences and len(fork_ids) > 0
    reasons = [f"flipped in {flips} of {n} re-runs (need {m})"]
    if differences:
        reasons.append("other changes: " + "; ".join(differences))
    if errors:
        reasons.append(f"{len(errors)} re-run(s) failed: {errors[0]}")
    return OfflineValidation(
        passed=flips >= m and only_change,
        n_runs=n,
        min_flips=m,
        flips=flips,
        fork_run_ids=fork_ids,
        only_change=only_change,
        differences=differences,
        reason="; ".join(reasons),
    )


def llm_validation_not_run(reason: str = "not run: no model configured") -> LLMValidation:
    return LLMValidation(ran=False, reason=reason)


_ROLE_SYSTEM = {
    "proposer": (
        "You attribute the failure of an AI agent's run to one step. You are shown the failed run, "
        "the step blamed for the failure, and a repair of that step that made a re-run succeed. "
        "State whether that step is responsible for the failure. Reply with JSON only: "
        '{"agree": true|false, "confidence": 0.0-1.0, "reason": "one sentence"}.'
    ),
    "critic": (
        "You are a critic checking a failure attribution for an AI agent's run. Look for reasons "
        "it could be wrong: an earlier step that caused it, a repair that only works by luck, an "
        "answer that is still wrong. Reply with JSON only: "
        '{"agree": true|false, "confidence": 0.0-1.0, "reason": "one sentence"}.'
    ),
    "meta_critic": (
        "You are the meta-critic: weigh the proposer's attribution and the critic's review and give "
        "the final verdict on whether the blamed step caused the failure and the repair fixes it. "
        'Reply with JSON only: {"agree": true|false, "confidence": 0.0-1.0, "reason": "one sentence"}.'
    ),
}


class LLMValidator:
    """Proposer / critic / meta-critic validation of an attribution and its repair.

    ``critic`` and ``meta_critic`` default to ``model``. The consensus confidence is the
    meta-critic's confidence that the attribution holds (its ``confidence`` when it agrees,
    ``1 - confidence`` when it does not); the repair is retained when that is ``>= threshold``.
    A role whose reply is not the JSON asked for counts as not agreeing with confidence 0. A role
    whose model call raises stops the validation: ``ran=False``, the error in ``reason``, the
    judgements and cost so far kept (``repair_run`` then keeps a repair on its offline validation
    alone and says so in its explanation).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        critic: BaseChatModel | None = None,
        meta_critic: BaseChatModel | None = None,
        threshold: float = 0.5,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.models = {"proposer": model, "critic": critic or model, "meta_critic": meta_critic or model}
        self.threshold = threshold

    def validate(self, parent: Trajectory, probe: Probe) -> LLMValidation:
        cost = RepairCost()
        proposal = probe.proposal
        step = next((s for s in parent.steps if s.step_id == proposal.step_id), None)
        original = to_jsonable(step.output) if isinstance(step, NodeStep) else None
        fence = Fence()
        case = f"{render_trace(parent, fence=fence)}\n\n" + fence.block(
            "repair",
            f"Blamed step: node {fence.inline(proposal.node, 80)}, hop {proposal.hop}, "
            f"langgraph step {proposal.langgraph_step}\n"
            f"Its original output: {fence.as_json(original, 600)}\n"
            f"Repaired output: {fence.as_json(proposal.values, 600)}\n"
            f"Answer after the repair: {fence.inline(probe.answer, 600)} "
            f"({fence.inline(probe.feedback, 300)})",
        )
        judgements: list[RoleJudgement] = []
        transcript = case
        for role in ("proposer", "critic", "meta_critic"):
            try:
                reply = call_model(self.models[role], fence.system(_ROLE_SYSTEM[role]), transcript, cost).text
            except Exception as exc:  # an outage is no verdict, and must not crash the repair
                return LLMValidation(
                    ran=False,
                    reason=f"not run: the {role.replace('_', '-')}'s model call failed: {describe_error(exc)}",
                    threshold=self.threshold,
                    judgements=judgements,
                    cost=cost,
                )
            judgement = _judgement(role, reply)
            judgements.append(judgement)
            transcript += (
                f"\n\n{role} says: agree={judgement.agree}, confidence={judgement.confidence}, "
                f"{fence.inline(judgement.reason, 600)}"
            )
        meta = judgements[-1]
        conf = meta.confidence or 0.0
        consensus = conf if meta.agree else 1.0 - conf if meta.agree is False else 0.0
        return LLMValidation(
            ran=True,
            retained=consensus >= self.threshold,
            confidence=round(consensus, 4),
            threshold=self.threshold,
            judgements=judgements,
            cost=cost,
            reason=f"{sum(1 for j in judgements if j.agree)} of 3 roles agree",
        )


def _judgement(role: Any, reply: str) -> RoleJudgement:
    try:
        data = parse_json(reply, accept=lambda value: isinstance(value, dict) and "agree" in value)
        agree = data["agree"]
        confidence = data.get("confidence")
        if not isinstance(agree, bool):
            raise ValueError("agree is not a boolean")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise ValueError("confidence is not a number")
        return RoleJudgement(
            role=role,
            agree=agree,
            confidence=min(1.0, max(0.0, float(confidence))),
            reason=str(data.get("reason", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return RoleJudgement(role=role, agree=None, confidence=0.0, reason=f"unusable reply: {exc}")
