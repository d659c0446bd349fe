"""Planning a fork: the new output of the fork step, its lineage, what the suffix may replay,
and the fork's own thread.

Everything here is decided before anything is written, so a bad request fails without leaving a
checkpoint behind.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.errors import InvalidUpdateError
from langgraph.types import Overwrite, StateUpdate

from causal_middleware.interventions.edit import revive
from causal_middleware.replay.determinism import determinism_settings
from causal_middleware.replay.errors import ReplayError
from causal_middleware.replay.policy import RecordedCall
from causal_middleware.replay.request import ForkPoint, ForkRequest
from causal_middleware.spans.model import Lineage, NodeStep, Trajectory
from causal_middleware.store.stitch import HOPS_OFFSET_LABEL, at_root

from .branch import Branch, checkpoint_config
from .fork_thread import new_fork_thread_id
from .lineage import build_lineage

__all__ = ["ForkPlan", "awrite_fork", "make_plan", "write_fork"]


@dataclass
class ForkPlan:
    """Everything decided before the fork is written: the parent, the fork point, the new output,
    the thread the fork runs on (``fork_thread_id``; the parent's is ``thread_id``)."""

    request: ForkRequest
    parent: Trajectory
    thread_id: str
    fork_thread_id: str
    fork_step: NodeStep
    pre: Any
    branch: Branch
    new_output: Any
    update_values: Any
    lineage: Lineage
    rerun: frozenset[str]
    side_effecting_nodes: frozenset[str]
    recorded_tools: list[RecordedCall]
    labels: dict[str, Any] = field(default_factory=dict)
    siblings: list[tuple[str, Any]] = field(default_factory=list)  # parallel tasks of the fork's superstep

    @property
    def node(self) -> str:
        return str(self.fork_step.node)

    @property
    def langgraph_step(self) -> int:
        return int(self.fork_step.langgraph_step or 0)


def make_plan(
    request: ForkRequest,
    parent: Trajectory,
    point: ForkPoint,
    fork_step: NodeStep,
    branch: Branch,
    *,
    channels: Iterable[str],
    node_names: frozenset[str],
    side_effecting: frozenset[str],
    answer_nodes: frozenset[str] | None,
) -> ForkPlan:
    """The plan of ``request`` on ``parent`` at ``point``. Raises ``ReplayError``/``ValueError`` for
    requests that cannot work (no recorded output to build on, unknown state keys or nodes)."""
    pre = branch.snapshot(point.checkpoint_id)
    recorded = branch.output_of(point.node, point.langgraph_step, task_id_of(fork_step))
    if recorded is None and request.values is None and request.update is None:
        raise ReplayError(
            f"run {parent.run_id} has no recorded output for node {point.node!r} at step "
            f"{point.langgraph_step} (did it fail?); pass values= to say what it should return"
        )
    output = new_output(recorded.output if recorded is not None else None, request)
    check_state_keys(output, point.node, channels)
    kind = request.intervention_kind
    if kind == "replace" and request.values is None and request.update is None:
        kind = "identity"
    lineage = build_lineage(
        parent_run_id=parent.run_id,
        checkpoint_id=point.checkpoint_id,
        node=point.node,
        langgraph_step=point.langgraph_step,
        hop=point.hop,
        mode=request.mode,
        new_output=output,
        kind=kind,
        description=describe(request),
    )
    rerun = rerun_set(request, parent, node_names, answer_nodes)
    side_nodes = frozenset(
        str(s.node) for s in parent.steps if s.kind == "node" and s.side_effecting and s.node
    )
    tools = [
        RecordedCall(name=s.tool_name, args=s.args, output=s.output, langgraph_step=s.langgraph_step)
        for s in parent.steps
        if s.kind == "tool" and (s.langgraph_step or 0) > point.langgraph_step
    ]
    labels: dict[str, Any] = {
        **(request.labels or {}),
        "replay.mode": request.mode,
        HOPS_OFFSET_LABEL: True,  # run_metadata passes the fork hop as the run's hop offset
        "replay.determinism": determinism_settings(parent).model_dump(mode="json"),
    }
    if request.mode == "frozen":
        labels["replay.rerun"] = sorted(rerun)
    return ForkPlan(
        request=request,
        parent=parent,
        thread_id=point.thread_id,
        fork_thread_id=new_fork_thread_id(point.thread_id),
        fork_step=fork_step,
        pre=pre,
        branch=branch,
        new_output=output,
        update_values=with_overwrites(output, request.overwrite),
        lineage=lineage,
        rerun=rerun,
        side_effecting_nodes=side_nodes | (side_effecting & node_names),
        recorded_tools=tools,
        labels=labels,
        siblings=[(t.node, t.output) for t in branch.siblings_of(recorded)] if recorded is not None else [],
    )


def task_id_of(step: NodeStep) -> str | None:
    """LangGraph's task id of a root-graph node step (its checkpoint namespace is ``node:<task id>``)."""
    ns = step.checkpoint_ns or ""
    if "|" in ns or ":" not in ns:
        return None
    return ns.split(":", 1)[1] or None


def check_state_keys(output: Any, node: str, channels: Iterable[str]) -> None:
    """Reject outputs naming keys the state does not have (LangGraph would silently drop them,
    turning a typo into a fork that changes nothing)."""
    if not isinstance(output, Mapping):
        return
    known = {k for k in channels if not k.startswith(("branch:", "__"))}
    unknown = sorted(str(k) for k in output if k not in known)
    if known and unknown:
        raise ReplayError(
            f"the new output of node {node!r} names unknown state key(s) {unknown}; "
            f"the graph's state keys are {sorted(known)}"
        )


def rerun_set(
    request: ForkRequest, parent: Trajectory, node_names: frozenset[str], answer_nodes: frozenset[str] | None
) -> frozenset[str]:
    """The nodes a frozen fork runs live: ``request.rerun``; else ``answer_nodes``; else the nodes
    of the parent's answer steps; else the parent's last node."""
    if request.rerun is not None:
        unknown = sorted({name.split("@", 1)[0] for name in request.rerun} - node_names)
        if unknown:
            raise ValueError(
                f"rerun names unknown node(s) {unknown}; the graph's nodes are {sorted(node_names)}"
            )
        return frozenset(request.rerun)
    if answer_nodes:
        return answer_nodes
    answered = frozenset(str(s.node) for s in parent.steps if s.kind == "answer" and s.node)
    if answered:
        return answered
    last = max(
        (s for s in parent.steps if s.kind == "node" and s.langgraph_step is not None and at_root(s)),
        key=lambda s: s.langgraph_step or 0,
        default=None,
    )
    return frozenset({str(last.node)}) if last is not None else frozenset()


def new_output(recorded: Any, request: ForkRequest) -> Any:
    if request.update is not None:
        if not callable(request.update):
            raise TypeError("update= must be a callable taking the recorded output and returning the new one")
        return request.update(copy.deepcopy(recorded))
    if request.values is not None:
        base = copy.deepcopy(dict(recorded)) if isinstance(recorded, Mapping) else {}
        # JSON values (a model's proposal) rebuilt in the recorded objects' types: a document dict
        # becomes a Document where the agent held one
        return (
            revive(recorded, {**base, **request.values})
            if recorded is not None
            else {**base, **request.values}
        )
    return copy.deepcopy(recorded)


def with_overwrites(new_output: Any, keys: Sequence[str]) -> Any:
    if not keys:
        return new_output
    if not isinstance(new_output, Mapping):
        raise ValueError("overwrite= needs the new output to be a dict of state keys")
    missing = sorted(set(keys) - set(new_output))
    if missing:
        raise ValueError(f"overwrite= names keys {missing} that the new output does not set")
    return {k: Overwrite(v) if k in keys else v for k, v in new_output.items()}


def describe(request: ForkRequest) -> str:
    if request.update is not None:
        return f"update={getattr(request.update, '__name__', type(request.update).__name__)}"
    if request.values is not None:
        return f"values for {sorted(request.values)}"
    return "recorded output put back unchanged"


def _write_error(plan: ForkPlan, exc: Exception) -> ReplayError:
    return ReplayError(
        f"cannot write the new output of node {plan.node!r} at step {plan.langgraph_step} into the fork: "
        f"{type(exc).__name__}: {exc}"
    )


def _superstep(plan: ForkPlan) -> list[StateUpdate]:
    return [
        StateUpdate(values=plan.update_values, as_node=plan.node),
        *(StateUpdate(values=copy.deepcopy(output), as_node=node) for node, output in plan.siblings),
    ]


def write_fork(
    update_state: Callable[..., Any], plan: ForkPlan, bulk: Callable[..., Any] | None = None
) -> Any:
    """``update_state`` the plan's new output onto the fork checkpoint, as the fork node, on the fork
    thread (which must already hold the copied branch); the new config. When the fork step ran in
    parallel with others (``plan.siblings``), all of them are written as one superstep
    (``bulk_update_state``): the intervened output beside the others' recorded ones."""
    config = checkpoint_config(plan.fork_thread_id, str(plan.pre.config["configurable"]["checkpoint_id"]))
    try:
        if plan.siblings and bulk is not None:
            return dict(bulk(config, [_superstep(plan)]))
        return dict(update_state(config, plan.update_values, as_node=plan.node))
    except (InvalidUpdateError, ValueError, TypeError, KeyError) as exc:
        raise _write_error(plan, exc) from exc


async def awrite_fork(
    update_state: Callable[..., Awaitable[Any]],
    plan: ForkPlan,
    bulk: Callable[..., Awaitable[Any]] | None = None,
) -> Any:
    """Async twin of :func:`write_fork`."""
    config = checkpoint_config(plan.fork_thread_id, str(plan.pre.config["configurable"]["checkpoint_id"]))
    try:
        if plan.siblings and bulk is not None:
            return dict(await bulk(config, [_superstep(plan)]))
        return dict(await update_state(config, plan.update_values, as_node=plan.node))
    except (InvalidUpdateError, ValueError, TypeError, KeyError) as exc:
        raise _write_error(plan, exc) from exc
