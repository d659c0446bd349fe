"""One task end to end: build the agent over the task's world, run it instrumented, keep it when it
fails, diagnose it with each method (no adapter) and repair it; score against the planted cause."""

from __future__ import annotations

import time
import traceback
from types import ModuleType
from typing import Any

from causal_middleware.integrations.langgraph.auto_repair import trace_proposer_for
from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.retrievers import index_for_graph
from causal_middleware.integrations.langgraph.tool_runner import tool_runner

from causal_middleware import instrument
from causal_middleware.attribution.base import DiagnosisContext
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.service import repair_run
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.scoring import answer_matches

from .world import Task

HOP_SCOPED = {"poisoned_document", "missing_document", "stale_tool_row", "reader_error"}


def forkable(traj: Trajectory, step: NodeStep) -> NodeStep:
    """``step``, or the parent-graph node step it ran inside (a subgraph's node)."""
    by_id = {s.step_id: s for s in traj.steps}
    outer = step
    cursor = by_id.get(step.parent_step_id or "")
    while cursor is not None:
        if isinstance(cursor, NodeStep):
            outer = cursor
        cursor = by_id.get(cursor.parent_step_id or "")
    return outer


def true_step(traj: Trajectory, node: str, occurrence: int | None, entity: str | None) -> NodeStep | None:
    """The recorded execution of ``node`` the plant corrupted: its ``occurrence``-th execution (in
    recorded order), or the one whose input names ``entity``."""
    steps = [s for s in traj.steps if isinstance(s, NodeStep) and s.node == node]
    if entity is not None:
        named = [s for s in steps if entity in _flat(s.input)]
        return named[0] if named else None
    if occurrence is not None and 1 <= occurrence <= len(steps):
        return steps[occurrence - 1]
    return None


def _flat(value: Any) -> str:
    import json

    try:
        return json.dumps(value, default=str)
    except Exception:
        return str(value)


def _names_doc(diagnosis: Any, doc_ids: list[str]) -> bool | None:
    ev = diagnosis.details.get("evidence") if diagnosis.details else None
    if not doc_ids:
        return None
    if not ev:
        return False
    return any(d in (ev.get("ids") or []) for d in doc_ids)


def answer_of(module: ModuleType, task: Task) -> str | None:
    """The agent's answer on ``task``'s world, uninstrumented (the control run)."""
    aut = module.build(task)
    out = aut.graph.invoke(aut.inputs, {"configurable": {"thread_id": f"control-{task.id}"}})
    return module.answer(out)


def run_task(
    module: ModuleType, task: Task, methods: list[str], *, control: Task | None = None, repair: bool = True
) -> dict[str, Any]:
    """The record of one task (see :mod:`benchmarks.agents.report` for its keys). ``control``: the
    same world without the plant; the task is kept only when the agent answers it correctly."""
    t0 = time.perf_counter()
    if control is not None:
        try:
            control_answer = answer_of(module, control)
        except Exception as exc:
            control_answer = f"<raised {type(exc).__name__}: {exc}>"
        if not answer_matches(control_answer, control.gold):
            return {
                "task": task.id,
                "agent": module.SHAPE,
                "cause": task.cause,
                "kept": False,
                "skipped": f"control run (no plant) answered {control_answer!r}, gold {control.gold!r}",
            }
    aut = module.build(task)
    store = InMemorySpanStore()
    ig = instrument(aut.graph, store=store)
    rec: dict[str, Any] = {
        "task": task.id,
        "agent": module.SHAPE,
        "cause": task.cause,
        "world_hop": task.hop,
        "question": task.question,
        "gold": task.gold,
        "plant": task.plant,
    }
    try:
        ig.invoke(
            aut.inputs,
            {"configurable": {"thread_id": task.id}, "metadata": {"causal_reference": task.gold}},
        )
    except Exception as exc:
        rec.update(kept=False, error=f"run raised {type(exc).__name__}: {exc}")
        return rec
    aut.after_run()
    run_id = ig.last_run_id
    traj = store.get_trajectory(run_id)
    rec["run_id"] = run_id
    rec["answer"] = traj.answer
    failed = not answer_matches(traj.answer, task.gold)
    rec["kept"] = failed
    if not failed:
        return rec
    node, occurrence = module.truth(task)
    entity = task.plant.get("subject") if getattr(module, "TRUTH_BY_ENTITY", False) else None
    inner = true_step(traj, node, occurrence if entity is None else None, entity)
    # a cause inside a subgraph is scored at the subgraph's node in the parent graph: the finest
    # step LangGraph can fork (langgraph#8458); the inner node is kept as ``inner_node``
    step = forkable(traj, inner) if inner is not None else None
    node = step.node if step is not None and step.node else node
    rec["truth"] = {
        "node": node,
        "inner_node": inner.node if inner is not None and step is not inner else None,
        "occurrence": occurrence,
        "step_id": step.step_id if step else None,
        "hop": step.hop if step else None,
        "hop_scoped": task.cause in HOP_SCOPED,
        "located": step is not None,
    }
    rec["hops_recorded"] = len(traj.hops)
    rec["steps"] = [
        {"node": s.node, "hop": s.hop, "step_id": s.step_id} for s in traj.steps if isinstance(s, NodeStep)
    ]
    suspect_docs = [d for d in (task.plant.get("planted_doc"), task.plant.get("distractor")) if d]
    index = index_for_graph(ig)
    runner = tool_runner(ig)
    rec["index_found"] = index is not None
    rec["tool_runner_found"] = runner is not None
    rec["diagnoses"] = {}
    for method in methods:
        t1 = time.perf_counter()
        try:
            d = get_diagnoser(method).diagnose(
                traj,
                DiagnosisContext(
                    backend=Replayer(ig, refused_side_effects="withhold"),
                    index=index,
                    reference=task.gold,
                    rerun_tool=runner,
                    proposer=trace_proposer_for(ig),
                ),
            )
            ev = d.details.get("evidence") if d.details else None
            node_ok = d.node == node
            hop_ok = (d.hop == rec["truth"]["hop"]) if rec["truth"]["hop_scoped"] else True
            rec["diagnoses"][method] = {
                "ran": d.ran,
                "reason": d.reason,
                "node": d.node,
                "hop": d.hop,
                "stage": d.stage,
                "step_id": d.step_id,
                "correct": bool(d.ran and node_ok and hop_ok),
                "node_correct": bool(d.ran and node_ok),
                "step_exact": bool(d.ran and step is not None and d.step_id == step.step_id),
                "names_planted_doc": _names_doc(d, suspect_docs)
                if task.cause in ("poisoned_document", "missing_document")
                else None,
                "evidence": ev,
                "root_cause": d.root_cause,
                "reexecutions": d.cost.reexecutions,
                "seconds": round(time.perf_counter() - t1, 3),
                "probe_errors": sorted(
                    {str(p.get("error"))[:200] for p in (d.details or {}).get("probes", []) if p.get("error")}
                )[:3],
                "not_probed": (d.details or {}).get("not_probed"),
                "probed_nodes": sorted({str(p.get("node")) for p in (d.details or {}).get("probes", [])}),
            }
        except Exception as exc:
            rec["diagnoses"][method] = {
                "ran": False,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=6),
                "correct": False,
                "node_correct": False,
                "step_exact": False,
                "reexecutions": 0,
            }
    if repair:
        t1 = time.perf_counter()
        try:
            result = repair_run(
                traj,
                backend=Replayer(ig, refused_side_effects="withhold"),
                proposer=trace_proposer_for(ig),
                verifier=ReferenceVerifier(task.gold),
                store=store,
            )
            r = result.repair
            rec["repair"] = {
                "status": result.status,
                "repaired": result.status == "repaired",
                "node": r.node if r else None,
                "hop": r.hop if r else None,
                "step_id": r.step_id if r else None,
                "step_correct": bool(r and step is not None and r.step_id == step.step_id),
                "node_correct": bool(r and r.node == node),
                "minimality": r.minimality if r else None,
                "description": r.description if r else None,
                "target": r.target if r else None,
                "evidence": r.evidence if r else None,
                "answer_after": r.answer_after if r else None,
                "reexecutions": result.cost.reexecutions,
                "seconds": round(time.perf_counter() - t1, 3),
            }
        except Exception as exc:
            rec["repair"] = {
                "status": "error",
                "repaired": False,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=6),
                "reexecutions": 0,
            }
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    try:
        ig.shutdown()
    except Exception:
        pass
    return rec
