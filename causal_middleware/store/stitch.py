"""Stitch a fork's trajectory: the parent's prefix, the intervened step, then what the fork ran.

A fork's own trace holds only the suffix it executed (LangGraph resumes from the fork
checkpoint), so read on its own it starts mid-run. :func:`stitch_fork` turns it into the whole
counterfactual run, which is what diagnosers compare against the original:

* the parent's steps that ran before the fork step (copied, ``attributes["causal.replay.inherited"]``
  names the parent run);
* the intervened step: a :class:`NodeStep` whose output is the intervention's values
  (``attributes["causal.intervened"] = True``), plus a :class:`RetrievalStep` holding the new
  documents when those values carry documents;
* the fork's own steps, hop-renumbered: own steps before the fork's first own hop belong to the
  fork hop, own hop ``k`` becomes ``fork_hop + k`` (unless the fork run's label
  ``replay.hops_offset`` says the instrumentation already numbered them on from the fork hop, as
  the replayer's forks are);
* under each of the fork's frozen nodes (``causal.node.frozen``: it returned the parent's recorded
  output without running), the parent's child steps of that node execution (its retrievals, LLM
  calls, tools), copied with ``attributes["causal.replay.frozen_copy"]`` naming the parent run, so
  the fork's hops show the evidence the agent actually saw;
* in ``replay`` mode (nothing executes) the parent's steps after the fork step, copied with
  ``attributes["causal.replay.replayed"]`` naming the parent run.

``run_id``, status, outcome, labels, lineage, times and ``cost`` stay the fork's own (cost is
what the fork really spent); ``input`` and ``reference`` fall back to the parent's.
Pure functions over :class:`Trajectory`: stores call :func:`stitch_from_store` when they read a
run that has lineage. A forker that already holds the parent (as the store gave it out) names it
with :func:`lend_parent` around its read of the fork, so the store stitches onto that object
instead of reading the parent again (the stores of ``_common`` use it only when it is the very
object they handed out for the parent's current version).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from causal_middleware.spans.builder import hop_sub_query
from causal_middleware.spans.model import (
    Document,
    Hop,
    NodeStep,
    RetrievalStep,
    Status,
    Trajectory,
)

__all__ = [
    "INHERITED",
    "FROZEN_COPY",
    "INTERVENED",
    "REPLAYED",
    "STITCHED",
    "at_root",
    "documents_in",
    "executed_node_steps",
    "is_stitched",
    "lend_parent",
    "lent_parent",
    "own_steps",
    "stitch_fork",
    "stitch_from_store",
]

INHERITED = "causal.replay.inherited"
INTERVENED = "causal.intervened"
REPLAYED = "causal.replay.replayed"
FROZEN_COPY = "causal.replay.frozen_copy"
FROZEN = "causal.node.frozen"
STITCHED = "causal.replay.stitched"
HOPS_OFFSET_LABEL = "replay.hops_offset"
BRANCH_CHECKPOINT_LABEL = "replay.branch_checkpoint_id"


_LENT: ContextVar[Trajectory | None] = ContextVar("causal_mw_lent_parent", default=None)


@contextmanager
def lend_parent(parent: Trajectory) -> Iterator[None]:
    """While active (in this thread or task), a store stitching a fork of ``parent.run_id`` may
    stitch onto ``parent`` instead of reading the parent again. ``parent`` must be a trajectory the
    store returned and nobody has modified since; a store that did not hand out this very object
    for the parent's current version (or that is not one of the cached stores) ignores it."""
    token = _LENT.set(parent)
    try:
        yield
    finally:
        _LENT.reset(token)


def lent_parent(run_id: str | None) -> Trajectory | None:
    """The trajectory lent for ``run_id`` by an enclosing :func:`lend_parent`, if any."""
    lent = _LENT.get()
    return lent if lent is not None and run_id is not None and lent.run_id == run_id else None


def is_stitched(trajectory: Trajectory) -> bool:
    """Whether ``trajectory`` is already a stitched fork trajectory."""
    return bool(trajectory.metadata.get(STITCHED))


_NOT_OWN = (INHERITED, REPLAYED, INTERVENED, FROZEN_COPY)


def own_steps(trajectory: Trajectory) -> list[Any]:
    """The steps of a (stitched) fork's own trace: not inherited, replayed, intervened or copied
    under a frozen node. Frozen node steps themselves are own steps (their spans are the fork's)."""
    return [s for s in trajectory.steps if not any(s.attributes.get(k) for k in _NOT_OWN)]


def executed_node_steps(trajectory: Trajectory) -> list[Any]:
    """Node steps a (stitched) fork really executed: own node steps that were not frozen."""
    return [s for s in own_steps(trajectory) if s.kind == "node" and not s.attributes.get(FROZEN)]


def _synthetic_id(*parts: Any) -> str:
    return hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _doc_from(item: Any) -> Document | None:
    if isinstance(item, Document):
        return item
    if not isinstance(item, Mapping):
        return None
    raw_metadata = item.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
    text = item.get("text", item.get("page_content", item.get("content")))
    doc_id = item.get("id") if item.get("id") is not None else metadata.get("id")
    if doc_id is None or not isinstance(text, str):
        return None
    score = item.get("score", metadata.get("score"))
    source = item.get("source", metadata.get("source"))
    # top-level extras (the reference agent's evidence carries title and date there) are metadata too
    extras = {
        k: v
        for k, v in item.items()
        if k not in ("id", "text", "page_content", "content", "score", "source", "metadata") and v is not None
    }
    return Document(
        id=str(doc_id),
        text=text,
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        source=source if isinstance(source, str) else None,
        metadata={**extras, **dict(metadata)},
    )


def documents_in(values: Any) -> list[Document]:
    """Documents found in a node output (lists of documents, or dicts shaped like them), in order.

    Accepts core :class:`Document`s and dicts with an ``id`` (or ``metadata.id``) and a ``text``,
    ``page_content`` or ``content`` string (the JSON form of LangChain documents).
    """
    if not isinstance(values, Mapping):
        return []
    docs: list[Document] = []
    for value in values.values():
        if isinstance(value, list | tuple) and value:
            converted = [_doc_from(v) for v in value]
            if all(d is not None for d in converted):
                docs.extend(d for d in converted if d is not None)
    return docs


def at_root(step: Any) -> bool:
    """Whether a step ran in the root graph (not inside a subgraph).

    A root node's ``checkpoint_ns`` is ``"<node>:<task id>"``; a subgraph's inner nodes add
    ``|``-separated segments.
    """
    return "|" not in (step.checkpoint_ns or "")


def _find_fork_step(parent: Trajectory, node: str | None, step: int | None) -> NodeStep | None:
    for s in parent.steps:
        if s.kind == "node" and s.node == node and s.langgraph_step == step and at_root(s):
            return s
    return None


def _is_prefix(s: Any, fork_step: int, fork_start: Any) -> bool:
    if s.langgraph_step is not None:
        return bool(s.langgraph_step < fork_step)
    return fork_start is not None and s.start_time is not None and s.start_time < fork_start


def _is_suffix(s: Any, fork_step: int, fork_end: Any) -> bool:
    if s.langgraph_step is not None:
        return bool(s.langgraph_step > fork_step)
    return fork_end is not None and s.start_time is not None and s.start_time > fork_end


def _tagged(step: Any, key: str, value: Any) -> Any:
    # Shallow: the copy gets its own attributes dict; nested values are never mutated here.
    return step.model_copy(update={"attributes": {**step.attributes, key: value}})


def stitch_fork(parent: Trajectory, own: Trajectory) -> Trajectory:
    """The whole counterfactual run of fork ``own`` (its own trace) forked from ``parent``.

    ``parent`` should itself be the stitched trajectory when it is a fork. The result is a new
    trajectory whose steps are copies, but nested values (documents, messages, labels) are shared
    with ``own`` and ``parent``: copy them before mutating. Raises ``ValueError`` when ``own`` has
    no lineage or names another parent.
    """
    lineage = own.lineage
    if lineage is None:
        raise ValueError(f"run {own.run_id} has no lineage: it is not a fork, there is nothing to stitch")
    if lineage.parent_run_id != parent.run_id:
        raise ValueError(
            f"run {own.run_id} was forked from {lineage.parent_run_id}, not from {parent.run_id}"
        )
    if lineage.fork_step is None or lineage.fork_node is None:
        raise ValueError(f"the lineage of run {own.run_id} names no fork step (fork_node/fork_step)")
    fork_step, fork_node, fork_hop = lineage.fork_step, lineage.fork_node, lineage.fork_hop
    replaced = _find_fork_step(parent, fork_node, fork_step)
    fork_start = replaced.start_time if replaced is not None else None
    fork_end = replaced.end_time if replaced is not None else None
    intervention = lineage.intervention
    values = dict(intervention.values) if intervention is not None else {}

    steps: list[Any] = [
        _tagged(s, INHERITED, parent.run_id) for s in parent.steps if _is_prefix(s, fork_step, fork_start)
    ]

    intervened_id = _synthetic_id(own.run_id, fork_node, fork_step)
    intervened_attrs: dict[str, Any] = {
        INTERVENED: True,
        "causal.replay.intervention_kind": intervention.kind if intervention is not None else "replace",
    }
    if replaced is not None:
        intervened_attrs["causal.replay.replaced_step_id"] = replaced.step_id
    branch_checkpoint = own.labels.get(BRANCH_CHECKPOINT_LABEL)
    if branch_checkpoint:
        intervened_attrs[BRANCH_CHECKPOINT_LABEL] = branch_checkpoint
    steps.append(
        NodeStep(
            step_id=intervened_id,
            name=fork_node,
            node=fork_node,
            hop=fork_hop,
            langgraph_step=fork_step,
            checkpoint_id=lineage.fork_checkpoint_id,
            checkpoint_ns=None,
            start_time=own.started_at,
            end_time=own.started_at,
            status=Status.OK,
            attributes=intervened_attrs,
            input=replaced.input if replaced is not None else None,
            output=values,
            side_effecting=replaced.side_effecting if replaced is not None else False,
        )
    )
    new_docs = documents_in(values)
    if new_docs:
        old_retrieval = next(
            (
                s
                for s in parent.steps
                if s.kind == "retrieval" and replaced and s.parent_step_id == replaced.step_id
            ),
            None,
        )
        steps.append(
            RetrievalStep(
                step_id=_synthetic_id(own.run_id, fork_node, fork_step, "retrieval"),
                parent_step_id=intervened_id,
                name=old_retrieval.name if old_retrieval is not None else "intervention",
                node=fork_node,
                hop=fork_hop,
                langgraph_step=fork_step,
                start_time=own.started_at,
                end_time=own.started_at,
                status=Status.OK,
                attributes={INTERVENED: True},
                query=old_retrieval.query if old_retrieval is not None else "",
                retriever=old_retrieval.retriever if old_retrieval is not None else None,
                documents=new_docs,
            )
        )

    offset_applied = bool(own.labels.get(HOPS_OFFSET_LABEL))
    base = fork_hop or 0
    seen_own_hop = False
    own_hop_of: dict[int, int] = {}
    recorded: _Recorded | None = None  # built on the first frozen node: an index of the parent
    for s in own.steps:
        copy = s.model_copy()
        if copy.hop is not None:
            seen_own_hop = True
            own_index = copy.hop
            copy.hop = own_index if offset_applied else base + own_index
            own_hop_of[copy.hop] = own_index
        elif not seen_own_hop:
            copy.hop = fork_hop
        steps.append(copy)
        if copy.kind == "node" and copy.attributes.get(FROZEN):
            recorded = recorded or _Recorded(parent)
            steps.extend(_frozen_children(recorded, copy))

    if lineage.mode == "replay" and not own.steps:
        steps.extend(
            _tagged(s, REPLAYED, parent.run_id) for s in parent.steps if _is_suffix(s, fork_step, fork_end)
        )

    hops = _rebuild_hops(steps, parent, own, own_hop_of)
    answers = [s.answer for s in steps if s.kind == "answer" and s.answer]
    answer = own.answer if own.answer is not None else (answers[-1] if answers else None)
    if answer is None:
        for key in ("answer", "final_answer"):
            if isinstance(values.get(key), str):
                answer = values[key]
    return own.model_copy(
        update={
            "graph": own.graph or parent.graph,
            "thread_id": own.thread_id or parent.thread_id,
            "input": own.input if own.input is not None else parent.input,
            "reference": own.reference if own.reference is not None else parent.reference,
            "answer": answer,
            "steps": steps,
            "hops": hops,
            "metadata": {**own.metadata, STITCHED: True, "causal.replay.own_steps": len(own.steps)},
        }
    )


class _Recorded:
    """The parent's root node steps by ``(node, langgraph_step)`` (the first of each) and every
    step's descendants, in start order: what a frozen node's copied children are, found in one
    pass over the parent instead of one per frozen node.

    A step is a descendant of ``a`` when its parent is ``a``, or its parent is a descendant of
    ``a`` that started before it (start order: parents come before their children)."""

    def __init__(self, parent: Trajectory) -> None:
        self.run_id = parent.run_id
        self.node_steps: dict[tuple[str | None, int | None], NodeStep] = {}
        self.descendants: dict[str, list[Any]] = {}
        above: dict[str, list[str]] = {}  # step id -> its ancestors through earlier steps
        for s in parent.steps:
            if s.kind == "node" and at_root(s):
                self.node_steps.setdefault((s.node, s.langgraph_step), s)
            chain = [] if s.parent_step_id is None else [s.parent_step_id, *above.get(s.parent_step_id, ())]
            above[s.step_id] = chain
            for ancestor in chain:
                self.descendants.setdefault(ancestor, []).append(s)


def _frozen_children(parent: _Recorded, frozen: NodeStep) -> list[Any]:
    recorded = parent.node_steps.get((frozen.node, frozen.langgraph_step))
    if recorded is None:
        return []
    out = []
    for s in parent.descendants.get(recorded.step_id, ()):
        if s.kind == "decision":  # routers run live even for frozen nodes: the fork has its own
            continue
        copy = _tagged(s, FROZEN_COPY, parent.run_id)
        if copy.parent_step_id == recorded.step_id:
            copy.parent_step_id = frozen.step_id
        copy.hop = frozen.hop
        out.append(copy)
    return out


def _rebuild_hops(
    steps: list[Any], parent: Trajectory, own: Trajectory, own_hop_of: dict[int, int]
) -> list[Hop]:
    parent_hops = {h.index: h for h in parent.hops}
    own_hops = {h.index: h for h in own.hops}
    by_hop: dict[int, list[Any]] = {}
    for s in steps:
        if s.hop is not None:
            by_hop.setdefault(s.hop, []).append(s)
    out = []
    for index in sorted(by_hop):
        hop_steps = by_hop[index]
        inherited_only = all(s.attributes.get(INHERITED) or s.attributes.get(REPLAYED) for s in hop_steps)
        own_only = all(
            not (s.attributes.get(INHERITED) or s.attributes.get(REPLAYED) or s.attributes.get(INTERVENED))
            for s in hop_steps
        )
        source: Hop | None
        if inherited_only:
            source = parent_hops.get(index)
        elif own_only and index in own_hop_of:
            source = own_hops.get(own_hop_of[index])
        else:
            source = None
        sub_query = source.sub_query if source is not None else None
        if sub_query is None:
            sub_query = hop_sub_query(hop_steps) or (
                parent_hops[index].sub_query if index in parent_hops else None
            )
        span_id = source.span_id if source is not None else None
        if span_id is None and index in parent_hops and not own_only:
            span_id = parent_hops[index].span_id
        out.append(
            Hop(
                index=index,
                sub_query=sub_query,
                documents=[d for s in hop_steps if s.kind == "retrieval" for d in s.documents],
                steps=hop_steps,
                span_id=span_id,
            )
        )
    return out


def stitch_from_store(get_trajectory: Callable[[str], Trajectory], own: Trajectory) -> Trajectory:
    """``own`` stitched onto its parent read through ``get_trajectory`` (a store's method).

    Runs without lineage, already-stitched trajectories and forks whose parent the store does not
    hold are returned unchanged (the latter with ``metadata["causal.replay.parent_missing"]``).
    """
    if own.lineage is None or is_stitched(own) or own.lineage.fork_step is None:
        return own
    try:
        parent = get_trajectory(own.lineage.parent_run_id)
    except KeyError:
        return own.model_copy(update={"metadata": {**own.metadata, "causal.replay.parent_missing": True}})
    return stitch_fork(parent, own)
