"""Find a fork point: the node step the caller named, and the checkpoint just before it ran.

The step comes from the run's stored trajectory (by hop and/or node, or by ``langgraph_step``).
Its checkpoint is the one the node ran from (``NodeStep.checkpoint_id``, recorded by the
instrumentation) on the run's own branch; when the spans carry no checkpoint ids the run's
branch is found in the thread's history instead: its last checkpoint is the one before the run's
last node step, created closest before that node started.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from causal_middleware.replay.errors import ReplayError
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.store.stitch import at_root

from .branch import Branch

__all__ = [
    "answer_nodes_of",
    "hop_nodes_of",
    "describe_node_steps",
    "find_leaf_in_history",
    "first_checkpoint_id",
    "leaf_checkpoint_id",
    "pre_checkpoint",
    "select_fork_step",
]

LEAF_LABEL = "replay.leaf_checkpoint_id"


def _node_steps(trajectory: Trajectory) -> list[NodeStep]:
    return [s for s in trajectory.steps if s.kind == "node" and s.langgraph_step is not None]


def describe_node_steps(trajectory: Trajectory, limit: int = 40) -> str:
    """``hop/node/step`` triples of a run's root-graph node steps, for error messages."""
    rows = [
        f"(hop={s.hop}, node={s.node!r}, step={s.langgraph_step})"
        for s in _node_steps(trajectory)
        if at_root(s)
    ]
    shown = ", ".join(rows[:limit]) + (", ..." if len(rows) > limit else "")
    return shown or "none"


def hop_nodes_of(trajectory: Trajectory) -> list[str]:
    """The root-graph nodes that opened the run's hops (the first node step of each hop), in order.

    Instrumenting a graph with ``hop_nodes=hop_nodes_of(run)`` numbers a fork's hops the way the
    run's were numbered.
    """
    out: list[str] = []
    for hop in trajectory.hops:
        first = next((s for s in hop.steps if s.kind == "node" and s.node and at_root(s)), None)
        if first is not None and first.node not in out:
            out.append(str(first.node))
    return out


def answer_nodes_of(trajectory: Trajectory) -> list[str]:
    """The nodes that produced the run's answer steps."""
    return list(dict.fromkeys(str(s.node) for s in trajectory.steps if s.kind == "answer" and s.node))


def _parent_node_of(step: NodeStep) -> str:
    first = (step.checkpoint_ns or "").split("|", 1)[0]
    return first.split(":", 1)[0]


def select_fork_step(
    trajectory: Trajectory, *, hop: int | None = None, node: str | None = None, step: int | None = None
) -> NodeStep:
    """The node step named by ``hop``/``node``/``step`` (all given ones must match).

    ``hop`` alone picks the hop's first node step (the node that opened it); ``hop`` and ``node``
    the node's first execution in that hop. Raises ``ValueError`` when nothing is named and
    ``ReplayError`` when no step matches, when ``step`` matches parallel nodes and ``node`` is
    not given, or when the step runs inside a subgraph.
    """
    if hop is None and node is None and step is None:
        raise ValueError("name the fork point: hop=, node= or step= (the step's langgraph_step)")
    candidates = _node_steps(trajectory)
    if step is not None:
        candidates = [s for s in candidates if s.langgraph_step == step]
    if hop is not None:
        candidates = [s for s in candidates if s.hop == hop]
    if node is not None:
        candidates = [s for s in candidates if s.node == node]
    asked = ", ".join(
        f"{k}={v!r}" for k, v in (("hop", hop), ("node", node), ("step", step)) if v is not None
    )
    if not candidates:
        raise ReplayError(
            f"run {trajectory.run_id} has no node step with {asked}; its node steps are: "
            f"{describe_node_steps(trajectory)}"
        )
    root = [s for s in candidates if at_root(s)]
    if not root:
        inner = candidates[0]
        outer = _parent_node_of(inner)
        outer_steps = [s for s in _node_steps(trajectory) if s.node == outer and at_root(s)]
        hint = (
            f" (node={outer!r}, step={outer_steps[0].langgraph_step})"
            if outer_steps
            else f" (node={outer!r})"
        )
        raise ReplayError(
            f"node {inner.node!r} of run {trajectory.run_id} runs inside subgraph {outer!r} "
            f"(checkpoint_ns {inner.checkpoint_ns!r}); forking inside a subgraph is not supported: "
            "LangGraph re-runs the whole subgraph when a run resumes from a checkpoint inside it "
            "(langchain-ai/langgraph#8458), so the intervention would be lost. Fork at the "
            f"parent-graph node instead{hint}, replacing the subgraph's whole output"
        )
    if step is not None and node is None and len({s.node for s in root}) > 1:
        names = sorted({str(s.node) for s in root})
        raise ReplayError(
            f"step {step} of run {trajectory.run_id} ran several nodes in parallel {names}; pass node="
        )
    return root[0]


def leaf_checkpoint_id(trajectory: Trajectory) -> str | None:
    """The run's last known checkpoint: a replay fork's recorded leaf, else the checkpoint its last
    root-graph node ran from; None when the spans carry no checkpoint ids."""
    leaf = trajectory.labels.get(LEAF_LABEL)
    if isinstance(leaf, str) and leaf:
        return leaf
    with_ids = [s for s in _node_steps(trajectory) if at_root(s) and s.checkpoint_id]
    if not with_ids:
        return None
    return max(with_ids, key=lambda s: s.langgraph_step or 0).checkpoint_id


def first_checkpoint_id(trajectory: Trajectory) -> str | None:
    """The checkpoint the run's first root-graph node ran from (for a fork, its stitched prefix's
    first: the original run's); None when the spans carry no checkpoint ids."""
    with_ids = [s for s in _node_steps(trajectory) if at_root(s) and s.checkpoint_id]
    if not with_ids:
        return None
    return min(with_ids, key=lambda s: s.langgraph_step or 0).checkpoint_id


def _created(snapshot: Any) -> datetime | None:
    created = getattr(snapshot, "created_at", None)
    if not created:
        return None
    try:
        return datetime.fromisoformat(str(created))
    except ValueError:
        return None


def find_leaf_in_history(history: Sequence[Any], trajectory: Trajectory) -> str:
    """The run's last checkpoint among a thread's snapshots (``get_state_history``), for runs whose
    spans carry no checkpoint ids: the checkpoint at the run's last node step's ``step - 1`` with
    that node pending, created closest before that node started."""
    steps = [s for s in _node_steps(trajectory) if at_root(s)]
    if not steps:
        raise ReplayError(f"run {trajectory.run_id} has no node steps to locate its checkpoints by")
    last = max(steps, key=lambda s: s.langgraph_step or 0)
    matches = [
        snap
        for snap in history
        if (snap.metadata or {}).get("step") == (last.langgraph_step or 0) - 1 and last.node in snap.next
    ]
    if not matches:
        raise ReplayError(
            f"no checkpoint of thread {trajectory.thread_id!r} matches run {trajectory.run_id}'s last node "
            f"step ({last.node!r} at step {last.langgraph_step}); was the run recorded with this checkpointer?"
        )
    started = last.start_time

    def distance(snap: Any) -> float:
        created = _created(snap)
        if created is None or started is None:
            return float("inf")
        gap = (started - created).total_seconds()
        return gap if gap >= -0.001 else float("inf")

    best = min(matches, key=distance)
    if len(matches) > 1 and distance(best) == float("inf"):
        raise ReplayError(
            f"thread {trajectory.thread_id!r} has {len(matches)} branches that could be run "
            f"{trajectory.run_id}'s and its spans carry no checkpoint ids to tell them apart"
        )
    return str(best.config["configurable"]["checkpoint_id"])


def pre_checkpoint(branch: Branch, fork_step: NodeStep) -> Any:
    """The snapshot on ``branch`` that ``fork_step``'s node ran from (checks step and pending node)."""
    wanted_step = (fork_step.langgraph_step or 0) - 1
    if fork_step.checkpoint_id:
        try:
            snap = branch.snapshot(fork_step.checkpoint_id)
        except KeyError:
            raise ReplayError(
                f"checkpoint {fork_step.checkpoint_id} (before node {fork_step.node!r} at step "
                f"{fork_step.langgraph_step}) is not on the run's branch of thread {branch.thread_id!r}"
            ) from None
    else:
        found = [
            s
            for s in branch.snapshots
            if (s.metadata or {}).get("step") == wanted_step and fork_step.node in s.next
        ]
        if not found:
            raise ReplayError(
                f"no checkpoint at step {wanted_step} with {fork_step.node!r} pending on the run's branch "
                f"of thread {branch.thread_id!r}"
            )
        snap = found[0]
    if (snap.metadata or {}).get("step") != wanted_step or fork_step.node not in snap.next:
        raise ReplayError(
            f"checkpoint {snap.config['configurable']['checkpoint_id']} is at step "
            f"{(snap.metadata or {}).get('step')} with {tuple(snap.next)} pending, not before node "
            f"{fork_step.node!r} at step {fork_step.langgraph_step}: the run's spans and checkpoints disagree"
        )
    return snap
