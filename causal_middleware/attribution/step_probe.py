"""Probing any agent step by step, with the generic intervention space (no agent adapter).

Every node step but the final answer is a candidate, in causal order, nodes outside any hop (a
planner before hop 1) included. Each candidate's alternatives come from the context's proposer,
else from :class:`~causal_middleware.counterfactual.trace_proposer.TraceProposer` over what the run
recorded (documents left out or replaced by the agent's own retriever, values found in the
step's evidence). Each is applied as a fork and judged; the earliest step with an alternative
that restores a correct answer is blamed, with the state key and the documents it changed.

``mode="frozen"`` re-runs only the rest of the intervened step's hop and the answer node (a step
outside every hop re-runs everything after it: nothing downstream of a planner can be held).
"""

from __future__ import annotations

from typing import Any

from causal_middleware.attribution.base import Diagnosis, DiagnosisContext, DiagnosisCost, ProbeMode
from causal_middleware.attribution.hops import answer_node, hop_views, question_text
from causal_middleware.attribution.provenance import impact
from causal_middleware.counterfactual.candidates import candidate_steps, final_answer_step
from causal_middleware.counterfactual.crs import compute_crs, run_probe
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import CallableVerifier
from causal_middleware.spans.model import NodeStep, Trajectory

DEFAULT_K = 4


def generic_proposer(context: DiagnosisContext) -> Any:
    if context.proposer is not None:
        return context.proposer
    return TraceProposer(
        context.index, indexes=context.indexes, rerun_tool=context.rerun_tool, state_keys=context.state_keys
    )


def frozen_rerun(trajectory: Trajectory) -> Any:
    """``step -> nodes a frozen probe of it re-runs`` (see the module docstring)."""
    final = answer_node(trajectory)
    nodes = [s for s in trajectory.steps if isinstance(s, NodeStep) and s.node]

    def rerun(step: NodeStep) -> list[str] | None:
        ids = [s.step_id for s in nodes]
        later = nodes[ids.index(step.step_id) + 1 :] if step.step_id in ids else []
        if step.hop is None:
            names = [str(s.node) for s in later if s.node]
        else:
            # this execution of each node only: the same nodes in later hops stay frozen
            names = [f"{s.node}@{s.langgraph_step}" for s in later if s.hop == step.hop and s.node]
        if final:
            names.append(final)
        return list(dict.fromkeys(names)) or None

    return rerun


def probe_steps(
    method: str, trajectory: Trajectory, context: DiagnosisContext, *, mode: ProbeMode, k: int = DEFAULT_K
) -> Diagnosis:
    """Diagnose by probing every candidate step in causal order (see the module docstring)."""
    verify = context.verifier_callable()

    def verifier(run: Trajectory) -> bool | None:
        return verify(run)

    result = compute_crs(
        trajectory,
        context.backend,  # type: ignore[arg-type]
        generic_proposer(context),
        verifier,
        k=k,
        max_reexecutions=context.max_reexecutions,
        mode=mode,
        rerun_for=frozen_rerun(trajectory) if mode == "frozen" else None,
    )
    diagnosis = crs_diagnosis(method, trajectory, result, mode=mode)
    if not result.flagged and not result.capped:
        diagnosis = confirm_answer_step(method, trajectory, context, diagnosis, k=k)
    ambiguous = ambiguous_locations(trajectory, context)
    if ambiguous:
        diagnosis.details["ambiguous"] = ambiguous
        diagnosis.root_cause += "; " + "; ".join(ambiguous.values())
    return diagnosis


def ambiguous_locations(trajectory: Trajectory, context: DiagnosisContext) -> dict[str, str]:
    """Node -> why its documents could not be located in one state key (the user names one with
    ``instrument(..., state_keys=...)`` or ``--state-key NODE=KEY``)."""
    from causal_middleware.interventions.locate import step_contents

    keys = context.state_keys or {}
    out: dict[str, str] = {}
    for step in candidate_steps(trajectory):
        if step.node in out or step.node in keys:
            continue
        contents = step_contents(trajectory, step)
        if contents.ambiguous and contents.note:
            out[str(step.node)] = contents.note
    return out


def crs_diagnosis(method: str, trajectory: Trajectory, result: Any, *, mode: str = "regenerate") -> Diagnosis:
    """A :class:`Diagnosis` from a CRS result: the earliest flipping step, named with its state
    key and evidence; none flips: the answer stage."""
    cost = DiagnosisCost(
        llm_calls=result.cost.llm_calls,
        tokens=result.cost.input_tokens + result.cost.output_tokens,
        reexecutions=result.cost.reexecutions,
    )
    scores = {s.step_id: s.crs for s in result.scores if s.crs is not None}
    notes = {
        f"{s.node}@{s.step_id}": s.skipped for s in result.scores if s.skipped and "no proposals" in s.skipped
    }
    details: dict[str, Any] = {
        "mode": mode,
        "k": result.k,
        "naive_reexecutions": result.cost.naive_reexecutions,
        "stopped_early": result.stopped_early,
        "capped": result.capped,
        "baseline_success": result.baseline_success,
        "probes": [probe_record(p) for p in result.probes],
    }
    if notes:
        details["not_probed"] = notes
    views = hop_views(trajectory)
    flagged = result.flagged
    if not flagged:
        why = "no single-step intervention restored a correct answer: the answer generation failed"
        if result.capped:
            why = "the re-execution cap stopped the search before any step's change restored the answer"
        return Diagnosis(
            method=method,
            stage="answer",
            root_cause=why,
            step_scores=scores,
            uncertain=result.capped,
            cost=cost,
            details=details,
        )
    top = flagged[0]
    by_index = {v.index: v for v in views}
    hop = top.hop if top.hop in by_index else None
    sev, propagation = impact(views, question_text(trajectory), hop)
    probe = next((p for p in result.probes if p.success and p.proposal.step_id == top.step_id), None)
    where = f"node {top.node!r}" + (f" (hop {hop})" if hop is not None else " (outside every hop)")
    change = probe.proposal.description if probe is not None and probe.proposal.description else ""
    if probe is not None:
        details["evidence"] = {
            "state_key": probe.proposal.target,
            "ids": probe.proposal.evidence,
            "change": change,
            "source": probe.proposal.source,
        }
    stage = by_index[hop].kind if hop is not None else _stage_outside_hops(probe)
    return Diagnosis(
        method=method,
        stage=stage,
        hop=hop,
        step_id=top.step_id,
        node=top.node,
        propagation=propagation,
        severity=sev,
        root_cause=f"changing {where} restored a correct answer" + (f": {change}" if change else ""),
        step_scores=scores,
        cost=cost,
        details=details,
    )


def _stage_outside_hops(probe: Any) -> Any:
    """A step outside every hop that is not the final answer (a planner, a router): planning."""
    return "planning"


def confirm_answer_step(
    method: str,
    trajectory: Trajectory,
    context: DiagnosisContext,
    diagnosis: Diagnosis,
    *,
    k: int = DEFAULT_K,
) -> Diagnosis:
    """When no earlier step's change restores the answer, probe the step that produced it.

    Its own evidence holding a value that restores the answer confirms an answer-stage fault (the
    reader had what it needed) and names the step and the document; otherwise the right value was
    never in front of the agent, and the diagnosis says the blame is uncertain.
    """
    from causal_middleware.protocols import RepairCost

    final = final_answer_step(trajectory)
    if final is None or context.backend is None:
        return diagnosis
    cap = context.max_reexecutions
    spent = diagnosis.cost.reexecutions
    batch = generic_proposer(context).propose(trajectory, final, k)
    cost = RepairCost()
    verifier = CallableVerifier(context.verifier_callable(), on="trajectory")
    probes: list[Any] = []
    restored = None
    for proposal in batch.proposals[:k]:
        if cap is not None and spent + cost.reexecutions >= cap:
            break
        probe = run_probe(context.backend, verifier, trajectory, proposal, cost)
        probes.append(probe)
        if probe.success:
            restored = probe
            break
    diagnosis.cost.reexecutions += cost.reexecutions
    diagnosis.cost.llm_calls += cost.llm_calls + batch.cost.llm_calls
    diagnosis.details.setdefault("probes", []).extend(probe_record(p) for p in probes)
    if restored is None:
        diagnosis.uncertain = True
        diagnosis.root_cause += (
            "; the answer step's own evidence holds no value that restores it either: the right "
            "information may never have reached the agent"
        )
        return diagnosis
    change = restored.proposal.description
    hops = {h.index for h in trajectory.hops}
    diagnosis.node = final.node
    diagnosis.step_id = final.step_id
    diagnosis.hop = final.hop if final.hop in hops else None
    diagnosis.step_scores[final.step_id] = 1.0
    diagnosis.details["evidence"] = {
        "state_key": restored.proposal.target,
        "ids": restored.proposal.evidence,
        "change": change,
        "source": restored.proposal.source,
    }
    diagnosis.root_cause = (
        f"no earlier step's change restored a correct answer, but the answer step {final.node!r} had "
        f"the right value in its own evidence: {change}"
    )
    return diagnosis


def probe_record(probe: Any) -> dict[str, Any]:
    """One probe as ``details.probes`` lists it: the step, the change, its evidence, the outcome."""
    p = probe.proposal
    return {
        "node": p.node,
        "step_id": p.step_id,
        "hop": p.hop,
        "change": p.description,
        "target": p.target,
        "evidence": p.evidence,
        "restored": probe.success,
        "answer": probe.answer,
        "fork_run_id": probe.fork_run_id,
        "error": probe.error,
    }
