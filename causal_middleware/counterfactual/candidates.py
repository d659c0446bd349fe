"""Which steps of a failed run CRS probes: every node step but the one that produced the answer."""

from __future__ import annotations

from collections.abc import Iterable

from causal_middleware.spans.model import AnswerStep, NodeStep, Trajectory


def final_answer_step(trajectory: Trajectory) -> NodeStep | None:
    """The node step that produced the run's final answer.

    That is the node enclosing the last answer step (its parent span, or the node step with the
    same node name and ``langgraph_step``); without answer steps, the run's last node step.
    """
    nodes = [s for s in trajectory.steps if isinstance(s, NodeStep)]
    if not nodes:
        return None
    answers = [s for s in trajectory.steps if isinstance(s, AnswerStep)]
    if answers:
        last = answers[-1]
        by_id = {s.step_id: s for s in nodes}
        if last.parent_step_id in by_id:
            return by_id[last.parent_step_id]
        for step in reversed(nodes):
            if step.node == last.node and (
                last.langgraph_step is None or step.langgraph_step == last.langgraph_step
            ):
                return step
    return nodes[-1]


def fork_point(trajectory: Trajectory) -> NodeStep | None:
    """The step a counterfactual run was forked at (its intervened step); None for original runs.

    Found as the node step marked ``causal.intervened``, else the one matching the lineage's fork
    step (``langgraph_step``) and node, else its fork node and hop.
    """
    lineage = trajectory.lineage
    if lineage is None:
        return None
    nodes = [s for s in trajectory.steps if isinstance(s, NodeStep)]
    for s in nodes:
        if s.attributes.get("causal.intervened"):
            return s
    if lineage.fork_step is not None:
        for s in nodes:
            if s.langgraph_step == lineage.fork_step and lineage.fork_node in (None, s.node):
                return s
    if lineage.fork_node is not None:
        for s in nodes:
            if s.node == lineage.fork_node and s.hop == lineage.fork_hop:
                return s
    return None


def subgraph_steps(trajectory: Trajectory) -> set[str]:
    """Ids of node steps that ran inside another node (a subgraph's nodes). LangGraph cannot fork
    inside a subgraph (langgraph#8458), so their parent node's step is the candidate instead."""
    by_id = {s.step_id: s for s in trajectory.steps}
    inner: set[str] = set()
    for step in trajectory.steps:
        if not isinstance(step, NodeStep):
            continue
        cursor = by_id.get(step.parent_step_id or "")
        for _ in range(64):
            if cursor is None:
                break
            if isinstance(cursor, NodeStep):
                inner.add(step.step_id)
                break
            cursor = by_id.get(cursor.parent_step_id or "")
    return inner


def candidate_steps(
    trajectory: Trajectory, only: Iterable[str] | None = None, *, respect_lineage: bool = True
) -> list[NodeStep]:
    """Node steps in causal (start) order, minus the final-answer step and the steps inside
    subgraphs (:func:`subgraph_steps`).

    ``only`` restricts the candidates to these step ids (or node names); the order stays causal.
    A step without a node name cannot be forked and is left out.

    With ``respect_lineage`` (default), a counterfactual run (a fork, e.g. a fault-injected run)
    has no candidates before its fork point: those steps are its parent's, and forking before the
    intervention would regenerate it away, so a "flip" there would credit the wrong step.
    """
    final = final_answer_step(trajectory)
    inner = subgraph_steps(trajectory)
    steps = [
        s
        for s in trajectory.steps
        if isinstance(s, NodeStep)
        and s.node
        and s.step_id not in inner
        and (final is None or s.step_id != final.step_id)
    ]
    start = fork_point(trajectory) if respect_lineage else None
    ids = [s.step_id for s in steps]
    if start is not None and start.step_id in ids:
        steps = steps[ids.index(start.step_id) :]
    if only is None:
        return steps
    wanted = set(only)
    known = {s.step_id for s in steps} | {s.node for s in steps if s.node}
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(
            f"run {trajectory.run_id} has no candidate step {', '.join(map(repr, unknown))}; "
            f"candidates are {[f'{s.node}@{s.step_id}' for s in steps]}"
        )
    return [s for s in steps if s.step_id in wanted or s.node in wanted]
