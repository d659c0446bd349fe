"""``Replayer``: fork a recorded run at any step, intervene, and run (or freeze, or replay) the suffix.

A fork never touches the original, nor the thread it ran on: the parent's branch up to the
checkpoint before the node is copied into a fork thread of its own (``fork_thread``), where
``update_state`` writes the new output as a child of that checkpoint and the suffix runs from the
child; its spans form a new trace. The store links that trace to the parent (lineage) and reads
it back stitched onto the parent's prefix (``causal_middleware.store.stitch``). ``discard_fork``
deletes a fork's thread from the checkpointer once the fork is no longer needed.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from langgraph.types import StateUpdate

from causal_middleware.replay.determinism import (
    DeterminismReport,
    compare_suffixes,
    determinism_settings,
)
from causal_middleware.replay.errors import ReplayError
from causal_middleware.replay.policy import ForkPolicy, fork_policy
from causal_middleware.replay.request import ForkPoint, ForkRequest, SuffixMode
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.stitch import (
    BRANCH_CHECKPOINT_LABEL,
    FROZEN,
    INTERVENED,
    REPLAYED,
    at_root,
    is_stitched,
    lend_parent,
    stitch_fork,
)

from ..instrument import InstrumentedGraph
from .branch import Branch, CheckpointFirst, SnapshotCache, aread_branch, read_branch
from .emit import emit_replay_run
from .fork_thread import (
    FORK_THREAD_MARK,
    acopy_branch,
    adelete_fork_thread,
    adiscard_thread,
    agraph_task_paths,
    copy_branch,
    delete_fork_thread,
    discard_thread,
    graph_task_paths,
    has_delta_channels,
    is_fork_thread,
)
from .frozen import SuffixOverride
from .lineage import run_metadata
from .locate import (
    LEAF_LABEL,
    find_leaf_in_history,
    first_checkpoint_id,
    leaf_checkpoint_id,
    pre_checkpoint,
    select_fork_step,
)
from .plan import ForkPlan, awrite_fork, make_plan, task_id_of, write_fork
from .prelude import AVAILABLE as DIRECT_AVAILABLE
from .prelude import arun_frozen, run_frozen
from .side_effects import guard_graph_tools

__all__ = ["Replayer"]

_UPDATE_CACHE = 4096


class _LockedView(Mapping[str, tuple[str, Any]]):
    """The replayer's cache of ``update_state`` writes as a branch read sees it: each lookup under
    the replayer's lock (other forks add to it meanwhile), with no copy of the whole cache."""

    def __init__(self, lock: threading.Lock, data: Mapping[str, tuple[str, Any]]) -> None:
        self._lock = lock
        self._data = data

    def __getitem__(self, key: str) -> tuple[str, Any]:
        with self._lock:
            return self._data[key]

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._data))

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


_SNAPSHOT_CACHE = 256
COPIED_LABEL = "replay.copied_checkpoints"
DISCARDED_LABEL = "replay.discarded"
FROZEN_APPLIED_LABEL = "replay.frozen_applied_supersteps"


class Replayer:
    """Forks recorded runs of an instrumented graph.

    Args:
        graph: the ``InstrumentedGraph`` the runs were recorded with (``causal_middleware.instrument``);
            its compiled graph must have the checkpointer that holds the runs' checkpoints.
        store: where runs are read and forks are written; default the instrumented graph's store.
        max_concurrency: forks running at once (threads share one bound, each event loop has its own).
        side_effecting: extra node or tool names that must not re-run in a fork (besides those marked
            ``@side_effecting`` or passed to ``instrument(side_effecting=...)``).
        answer_nodes: the default re-run set of ``frozen`` mode; default the graph's answer nodes.
        fork_history: what a fork thread starts with: ``"run"`` (default) a copy of the parent's
            checkpoints from the parent run's first step to the fork point (all that the fork and
            forks of it use); ``"thread"`` a copy from the thread's root (the fork thread's
            history then shows the whole conversation; the copy grows with the thread). Graphs
            with ``DeltaChannel`` state always copy from the root.
        refused_side_effects: what a side-effecting tool call the fork may not serve (its arguments
            changed, or the parent never made it) does: ``"raise"`` (default) ends the fork with
            ``SideEffectBlockedError``; ``"withhold"`` answers the agent with a notice that the call
            was not executed and lets the suffix finish (diagnosis and repair probes use this). The
            refusal is in the fork's labels either way; the effect never happens.

    Every fork runs on a thread of its own (``"<parent thread>::fork-<12 hex>"``, the fork
    trajectory's ``thread_id``) holding a copy of the parent's branch up to the fork point, so the
    parent's thread (its checkpoints and its latest state) is never modified.

    ``fork`` is safe to call from many threads, ``afork`` from many tasks. ``discard_fork``
    deletes a fork's thread once the fork is no longer needed (it implements
    ``DiscardingForkBackend``).
    """

    # Opt-in: a frozen fork writes its leading frozen supersteps with ``update_state`` instead of
    # running them in LangGraph's loop (``prelude``; the same fork, see docs/replay.md). Off by
    # default: measured, it saves the loop's thread hand-offs but not CPU (docs/bench.md).
    frozen_direct: bool = False

    def __init__(
        self,
        graph: InstrumentedGraph,
        *,
        store: SpanStore | None = None,
        max_concurrency: int = 4,
        side_effecting: Iterable[str] = (),
        answer_nodes: Iterable[str] | None = None,
        fork_history: Literal["run", "thread"] = "run",
        refused_side_effects: Literal["raise", "withhold"] = "raise",
    ) -> None:
        if not isinstance(graph, InstrumentedGraph):
            raise TypeError(
                "Replayer needs an InstrumentedGraph (causal_middleware.instrument(graph, ...)), "
                f"got {type(graph).__name__}"
            )
        if getattr(graph.graph, "checkpointer", None) in (None, False):
            raise ReplayError(
                "the graph has no checkpointer; compile it with one (e.g. SqliteSaver) so runs can be forked"
            )
        resolved = store if store is not None else graph.store
        if resolved is None:
            raise ValueError("the instrumented graph keeps no local store; pass store= to the Replayer")
        self.store: SpanStore = resolved
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if fork_history not in ("run", "thread"):
            raise ValueError(f"fork_history must be 'run' or 'thread', got {fork_history!r}")
        if isinstance(side_effecting, str):
            side_effecting = (side_effecting,)
        self.graph = graph
        self.max_concurrency = max_concurrency
        self.fork_history = fork_history
        if refused_side_effects not in ("raise", "withhold"):
            raise ValueError(
                f"refused_side_effects must be 'raise' or 'withhold', got {refused_side_effects!r}"
            )
        self.refused_side_effects = refused_side_effects
        self._copy_from_root = fork_history == "thread" or has_delta_channels(graph.graph)
        info = graph.handler.info
        self._node_names = frozenset(info.node_names)
        self.side_effecting = frozenset(side_effecting) | frozenset(info.side_effecting)
        self._answer_nodes = frozenset(answer_nodes) if answer_nodes is not None else None
        self._info_answer_nodes = frozenset(info.answer_nodes)
        self.guarded_tools = guard_graph_tools(graph.original_graph, self.side_effecting)
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._async_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._updates: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._fork_threads: OrderedDict[str, str] = OrderedDict()  # fork run id -> its fork thread
        self._snapshots = SnapshotCache(_SNAPSHOT_CACHE)  # the branches forked again and again

    # --- public API ----------------------------------------------------------------------
    def locate(
        self, run_id: str, *, hop: int | None = None, node: str | None = None, step: int | None = None
    ) -> ForkPoint:
        """The checkpoint just before the named step of ``run_id`` ran, on the run's own branch."""
        parent = self.store.get_trajectory(run_id)
        thread_id = self._thread_of(parent)
        fork_step = select_fork_step(parent, hop=hop, node=node, step=step)
        branch = self._read_branch(parent, thread_id, stop_at=fork_step.checkpoint_id)
        point = self._fork_point(parent, thread_id, fork_step, branch)
        # the recorded output lives in a cached snapshot: the caller gets its own copy
        return point.model_copy(update={"recorded_output": copy.deepcopy(point.recorded_output)})

    def fork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Callable[[Any], Any] | None = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
        overwrite: Sequence[str] = (),
    ) -> Trajectory:
        """Fork ``run_id`` before the named step, replace the step's output, run the suffix.

        The fork point is ``hop`` (its first node step) and/or ``node``, or ``step`` (the
        ``langgraph_step``). ``values`` overrides keys of the step's recorded output; ``update`` is
        a function of the recorded output (a deep copy) returning the new output; with neither, the
        recorded output is put back unchanged (a plain re-run from that step). The new output goes
        through the state's reducers as if the node had returned it (an ``operator.add`` channel
        gets it instead of the original contribution, not on top of it); name keys in ``overwrite``
        to replace their whole accumulated value instead.

        ``mode``: ``"regenerate"`` runs the suffix live; ``"frozen"`` returns every later node's
        recorded output except nodes in ``rerun`` (default: the answer nodes), running live only
        where the path diverged; ``"replay"`` rebuilds the recorded path with no node execution.
        Side-effecting nodes and tools return recorded outputs (or raise ``SideEffectBlockedError``)
        unless ``allow_side_effects``.

        The fork runs on a new thread (the returned trajectory's ``thread_id``) that starts as a
        copy of the parent's branch up to the fork point; the parent's thread is not written to.

        Returns the fork's stored trajectory, stitched onto the parent's prefix, whose ``lineage``
        names the parent run, the fork point, the mode and the intervention.
        """
        request = ForkRequest(
            run_id=run_id,
            hop=hop,
            node=node,
            step=step,
            values=values,
            update=update,
            mode=mode,
            rerun=rerun,
            allow_side_effects=allow_side_effects,
            intervention_kind=intervention_kind,
            labels=labels,
            overwrite=list(overwrite),
        )
        with self._slots:
            return self._fork(request)

    async def afork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Callable[[Any], Any] | None = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
        overwrite: Sequence[str] = (),
    ) -> Trajectory:
        """Async twin of :meth:`fork` (needs an async-capable checkpointer, e.g. InMemorySaver,
        AsyncSqliteSaver, AsyncPostgresSaver)."""
        request = ForkRequest(
            run_id=run_id,
            hop=hop,
            node=node,
            step=step,
            values=values,
            update=update,
            mode=mode,
            rerun=rerun,
            allow_side_effects=allow_side_effects,
            intervention_kind=intervention_kind,
            labels=labels,
            overwrite=list(overwrite),
        )
        async with self._async_slot():
            return await self._afork(request)

    def fork_many(
        self, requests: Iterable[ForkRequest | Mapping[str, Any]], *, return_exceptions: bool = False
    ) -> list[Trajectory | BaseException]:
        """Run many forks on a thread pool of ``max_concurrency`` threads; results in request order.

        With ``return_exceptions=True`` a failed fork's exception takes its place in the list;
        otherwise the first failure (in request order) is raised after every fork has finished.
        """
        reqs = [_as_request(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="causal-fork") as pool:
            # each fork runs in a copy of the caller's context, so context variables the caller set
            # (a scoped index override, say) reach it as they reach a single fork
            futures = [pool.submit(self._fork_in_context, contextvars.copy_context(), r) for r in reqs]
            results: list[Trajectory | BaseException] = []
            for future in futures:
                exc = future.exception()
                results.append(exc if exc is not None else future.result())
        if not return_exceptions:
            for item in results:
                if isinstance(item, BaseException):
                    raise item
        return results

    def _fork_in_context(self, context: contextvars.Context, request: ForkRequest) -> Trajectory:
        return context.run(lambda: self.fork(request.run_id, **request.kwargs()))

    async def afork_many(
        self, requests: Iterable[ForkRequest | Mapping[str, Any]], *, return_exceptions: bool = False
    ) -> list[Trajectory | BaseException]:
        """Run many forks as asyncio tasks (at most ``max_concurrency`` at once); results in order."""
        reqs = [_as_request(r) for r in requests]
        results = await asyncio.gather(
            *(self.afork(r.run_id, **r.kwargs()) for r in reqs), return_exceptions=return_exceptions
        )
        return list(results)

    def discard_fork(self, run_id: str) -> bool:
        """Delete the fork ``run_id``'s fork thread (its checkpoints and writes) from the graph's
        checkpointer; the fork's spans stay in the store, labelled ``replay.discarded``.

        Only forks are discarded: a run with no counterfactual lineage, or whose thread is not a
        fork thread (``"<thread>::fork-<12 hex>"``), or whose fork thread also holds other runs
        (someone continued on it), raises ``ValueError`` naming the run, and so does a run the store
        does not know. Returns True when checkpoints were deleted; False when the thread held none
        (already discarded: a second call is a no-op) or the checkpointer cannot delete threads.
        A discarded fork can no longer be forked (``ReplayError``); forks made of it before keep
        working (each fork thread holds its own copy).
        """
        thread = self._made_thread(run_id)
        if thread is None:
            try:
                fork = self.store.get_trajectory(run_id)
            except KeyError:
                raise _unknown(run_id) from None
            thread = _fork_thread_of(fork)
        _check_sole_run(
            run_id, thread, [r.run_id for r in self.store.list_runs(thread_id=thread, limit=None)]
        )
        deleted = delete_fork_thread(self.graph.graph.checkpointer, thread)
        self._snapshots.forget_thread(thread)
        if deleted:
            self.store.annotate(run_id, labels={DISCARDED_LABEL: True})
        return deleted

    async def adiscard_fork(self, run_id: str) -> bool:
        """Async twin of :meth:`discard_fork` (``adelete_thread``; needs an async-capable checkpointer,
        else returns False)."""
        thread = self._made_thread(run_id)
        if thread is None:
            try:
                fork = await self.store.aget_trajectory(run_id)
            except KeyError:
                raise _unknown(run_id) from None
            thread = _fork_thread_of(fork)
        runs = await self.store.alist_runs(thread_id=thread, limit=None)
        _check_sole_run(run_id, thread, [r.run_id for r in runs])
        deleted = await adelete_fork_thread(self.graph.graph.checkpointer, thread)
        self._snapshots.forget_thread(thread)
        if deleted:
            await self.store.aannotate(run_id, labels={DISCARDED_LABEL: True})
        return deleted

    def _made_thread(self, run_id: str) -> str | None:
        """The fork thread of a fork this replayer made (None when it did not, or forgot)."""
        with self._lock:
            return self._fork_threads.get(run_id)

    def check_determinism(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Callable[[Any], Any] | None = None,
        mode: SuffixMode = "regenerate",
        repeats: int = 2,
    ) -> DeterminismReport:
        """Fork ``run_id`` the same way ``repeats`` times and report whether the executed suffixes
        differ. With no fork point, forks before the run's first node (a full re-run from the input)."""
        if repeats < 2:
            raise ValueError(f"repeats must be at least 2 to compare re-runs, got {repeats}")
        parent = self.store.get_trajectory(run_id)
        if hop is None and node is None and step is None:
            first = min(
                (s for s in parent.steps if s.kind == "node" and s.langgraph_step is not None and at_root(s)),
                key=lambda s: s.langgraph_step or 0,
                default=None,
            )
            if first is None:
                raise ReplayError(f"run {run_id} has no node steps to fork")
            node, step = first.node, first.langgraph_step
        forks = [
            self.fork(
                run_id,
                hop=hop,
                node=node,
                step=step,
                values=values,
                update=update,
                mode=mode,
                intervention_kind="determinism-check",
                labels={"replay.determinism_check": i},
            )
            for i in range(repeats)
        ]
        difference = compare_suffixes(forks)
        lineage = forks[0].lineage
        return DeterminismReport(
            run_id=run_id,
            fork_node=lineage.fork_node if lineage else node,
            fork_step=lineage.fork_step if lineage else step,
            fork_hop=lineage.fork_hop if lineage else hop,
            mode=mode,
            repeats=repeats,
            fork_run_ids=[f.run_id for f in forks],
            deterministic=difference is None,
            answers=[f.answer for f in forks],
            first_difference=difference,
            settings=determinism_settings(parent),
        )

    # --- planning ------------------------------------------------------------------------
    def _thread_of(self, parent: Trajectory) -> str:
        if parent.labels.get(DISCARDED_LABEL):
            origin = parent.lineage.parent_run_id if parent.lineage is not None else None
            raise ReplayError(
                f"run {parent.run_id} is a fork whose checkpoints were discarded (discard_fork): it "
                f"can no longer be forked; fork its parent run {origin} instead"
            )
        if not parent.thread_id:
            raise ReplayError(
                f"run {parent.run_id} has no thread id: it was not run with a checkpointer and "
                "config={'configurable': {'thread_id': ...}}, so it has no checkpoints to fork"
            )
        return parent.thread_id

    def _fallback_outputs(self, parent: Trajectory) -> dict[tuple[str, int], Any]:
        out: dict[tuple[str, int], Any] = {}
        for s in parent.steps:
            if s.kind != "node" or s.langgraph_step is None:
                continue
            if s.attributes.get(INTERVENED) or s.attributes.get(REPLAYED):
                out[(str(s.node), int(s.langgraph_step))] = s.output
            elif s.attributes.get(FROZEN):  # written by update_state (prelude): its checkpoint has it
                out.setdefault((str(s.node), int(s.langgraph_step)), CheckpointFirst(s.output))
        return out

    def _updates_snapshot(self) -> Mapping[str, tuple[str, Any]]:
        return _LockedView(self._lock, self._updates)

    def _remember_fork(self, run_id: str, fork_thread_id: str) -> None:
        with self._lock:
            self._fork_threads[run_id] = fork_thread_id
            while len(self._fork_threads) > _UPDATE_CACHE:
                self._fork_threads.popitem(last=False)

    def _remember_update(self, checkpoint_id: str, node: str, output: Any) -> None:
        with self._lock:
            self._updates[checkpoint_id] = (node, copy.deepcopy(output))
            while len(self._updates) > _UPDATE_CACHE:
                self._updates.popitem(last=False)

    def _leaf(self, parent: Trajectory, thread_id: str) -> str:
        leaf = leaf_checkpoint_id(parent)
        if leaf is not None:
            return leaf
        history = list(self.graph.graph.get_state_history({"configurable": {"thread_id": thread_id}}))
        return find_leaf_in_history(history, parent)

    async def _aleaf(self, parent: Trajectory, thread_id: str) -> str:
        leaf = leaf_checkpoint_id(parent)
        if leaf is not None:
            return leaf
        history = [
            s async for s in self.graph.graph.aget_state_history({"configurable": {"thread_id": thread_id}})
        ]
        return find_leaf_in_history(history, parent)

    def _read_branch(self, parent: Trajectory, thread_id: str, stop_at: str | None = None) -> Branch:
        return read_branch(
            self.graph.graph,
            thread_id,
            self._leaf(parent, thread_id),
            updates=self._updates_snapshot(),
            fallback=self._fallback_outputs(parent),
            stop_at=stop_at,
            cache=self._snapshots,
        )

    async def _aread_branch(self, parent: Trajectory, thread_id: str, stop_at: str | None = None) -> Branch:
        return await aread_branch(
            self.graph.graph,
            thread_id,
            await self._aleaf(parent, thread_id),
            updates=self._updates_snapshot(),
            fallback=self._fallback_outputs(parent),
            stop_at=stop_at,
            cache=self._snapshots,
        )

    def _plan(
        self, request: ForkRequest, parent: Trajectory, thread_id: str, fork_step: NodeStep, branch: Branch
    ) -> ForkPlan:
        return make_plan(
            request,
            parent,
            self._fork_point(parent, thread_id, fork_step, branch),
            fork_step,
            branch,
            channels=getattr(self.graph.graph, "channels", None) or {},
            node_names=self._node_names,
            side_effecting=self.side_effecting,
            answer_nodes=self._answer_nodes if self._answer_nodes is not None else self._info_answer_nodes,
        )

    def _fork_point(
        self, parent: Trajectory, thread_id: str, fork_step: NodeStep, branch: Branch
    ) -> ForkPoint:
        pre = pre_checkpoint(branch, fork_step)
        recorded = branch.output_of(
            str(fork_step.node), int(fork_step.langgraph_step or 0), task_id_of(fork_step)
        )
        return ForkPoint(
            run_id=parent.run_id,
            thread_id=thread_id,
            node=str(fork_step.node),
            langgraph_step=int(fork_step.langgraph_step or 0),
            hop=fork_step.hop,
            checkpoint_id=str(pre.config["configurable"]["checkpoint_id"]),
            step_id=fork_step.step_id,
            recorded_output=recorded.output if recorded is not None else None,
        )

    def _run_config(
        self, plan: ForkPlan, fork_config: Mapping[str, Any], hook: SuffixOverride
    ) -> dict[str, Any]:
        return {
            "configurable": {**fork_config["configurable"], "causal_node_override": hook},
            "metadata": run_metadata(plan.lineage, plan.labels, plan.parent.reference),
        }

    def _hook(self, plan: ForkPlan) -> SuffixOverride:
        return SuffixOverride(
            mode=plan.request.mode,
            recorded=plan.branch.outputs_after(plan.langgraph_step),
            first_step=plan.langgraph_step + 1,
            rerun=plan.rerun,
            side_effecting=plan.side_effecting_nodes,
            allow_side_effects=plan.request.allow_side_effects,
        )

    def _policy(self, plan: ForkPlan) -> ForkPolicy:
        return ForkPolicy(
            allow_side_effects=plan.request.allow_side_effects,
            recorded=plan.recorded_tools,
            side_effecting=self.side_effecting,
            withhold=self.refused_side_effects == "withhold",
        )

    def _supersteps(self, plan: ForkPlan) -> list[list[StateUpdate]]:
        steps: dict[int, list[StateUpdate]] = {}
        for task in plan.branch.outputs_after(plan.langgraph_step):
            steps.setdefault(task.langgraph_step, []).append(
                StateUpdate(values=copy.deepcopy(task.output), as_node=task.node)
            )
        return [steps[k] for k in sorted(steps)]

    def _copy_start(self, plan: ForkPlan) -> str | None:
        """The first checkpoint to copy to the fork thread; None: the thread's root."""
        return None if self._copy_from_root else first_checkpoint_id(plan.parent)

    def _finish(self, plan: ForkPlan, own: Trajectory) -> Trajectory:
        if own.lineage is not None and not is_stitched(own):
            return stitch_fork(plan.parent, own)
        return own

    # --- sync execution ------------------------------------------------------------------
    def _write(self, plan: ForkPlan) -> Any:
        """Copy the parent's branch to the fork thread and write the new output there; a failure
        removes the half-made fork thread."""
        graph = self.graph.graph
        pre_id = str(plan.pre.config["configurable"]["checkpoint_id"])
        try:
            copied = copy_branch(
                graph.checkpointer,
                plan.thread_id,
                pre_id,
                plan.fork_thread_id,
                start_at=self._copy_start(plan),
                task_paths=graph_task_paths(graph),
            )
            plan.labels[COPIED_LABEL] = len(copied.checkpoint_ids)
            return write_fork(graph.update_state, plan, graph.bulk_update_state)
        except BaseException:
            discard_thread(graph.checkpointer, plan.fork_thread_id)
            raise

    def _fork(self, request: ForkRequest) -> Trajectory:
        parent = self.store.get_trajectory(request.run_id)
        thread_id = self._thread_of(parent)
        fork_step = select_fork_step(parent, hop=request.hop, node=request.node, step=request.step)
        branch = self._read_branch(parent, thread_id, stop_at=fork_step.checkpoint_id)
        plan = self._plan(request, parent, thread_id, fork_step, branch)
        graph = self.graph.graph
        fork_config = self._write(plan)
        branch_id = str(fork_config["configurable"]["checkpoint_id"])
        self._remember_update(branch_id, plan.node, plan.new_output)
        plan.labels[BRANCH_CHECKPOINT_LABEL] = branch_id
        if request.mode == "replay":
            supersteps = self._supersteps(plan)
            end = graph.bulk_update_state(fork_config, supersteps) if supersteps else fork_config
            final = graph.get_state(end).values
            return self._record_replay(plan, end, final, len(supersteps))
        hook, policy = self._hook(plan), self._policy(plan)
        error: BaseException | None = None
        with fork_policy(policy):
            if request.mode == "frozen" and self.frozen_direct and DIRECT_AVAILABLE:
                done = run_frozen(
                    graph,
                    self.graph.handler,
                    hook,
                    self.graph._prepare(self._run_config(plan, fork_config, hook)),
                    graph_name=self.graph.handler.info.name,
                    on_update=self._remember_update,
                )
                error, run_id = done.error, self._run_id_after(done.error, done.run_id)
                plan.labels[FROZEN_APPLIED_LABEL] = done.applied
            else:
                try:
                    self.graph.invoke(None, self._run_config(plan, fork_config, hook))
                except Exception as exc:
                    error = exc
                run_id = self._run_id_after(error)
        self._remember_fork(run_id, plan.fork_thread_id)
        self.store.annotate(run_id, **self._annotations(plan, hook, policy, error))
        if error is not None:
            raise error
        return self._finish(plan, self._read_fork(plan, run_id))

    def _record_replay(self, plan: ForkPlan, end: Mapping[str, Any], final: Any, n_steps: int) -> Trajectory:
        plan.labels[LEAF_LABEL] = str(end["configurable"]["checkpoint_id"])
        plan.labels["replay.replayed_supersteps"] = n_steps
        run_id = emit_replay_run(
            self.graph.tracer_provider,
            graph_name=self.graph.handler.info.name,
            thread_id=plan.fork_thread_id,
            lineage=plan.lineage,
            labels=plan.labels,
            reference=plan.parent.reference,
            final_state=final,
        )
        self._remember_fork(run_id, plan.fork_thread_id)
        self.store.annotate(run_id, lineage=plan.lineage, labels=plan.labels, reference=plan.parent.reference)
        return self._finish(plan, self._read_fork(plan, run_id))

    def _read_fork(self, plan: ForkPlan, run_id: str) -> Trajectory:
        """The fork as stored, stitched onto the parent this fork already read (never modified
        here: every output taken from it is deep-copied before use)."""
        with lend_parent(plan.parent):
            return self.store.get_trajectory(run_id)

    def _run_id_after(self, error: BaseException | None, run_id: str | None = None) -> str:
        run_id = run_id or self.graph.last_run_id
        if run_id is None:
            raise ReplayError(
                "the fork run left no trace (the instrumentation did not start a run)"
            ) from error
        return run_id

    def _annotations(
        self, plan: ForkPlan, hook: SuffixOverride, policy: ForkPolicy, error: BaseException | None
    ) -> dict[str, Any]:
        labels = {**plan.labels, "replay.suffix": hook.summary(), "replay.side_effects": policy.summary()}
        if error is not None:
            labels["replay.error"] = f"{type(error).__name__}: {error}"
        return {"lineage": plan.lineage, "labels": labels, "reference": plan.parent.reference}

    # --- async execution -----------------------------------------------------------------
    def _async_slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            slot = self._async_slots.get(loop)
            if slot is None:
                slot = self._async_slots[loop] = asyncio.Semaphore(self.max_concurrency)
            return slot

    async def _awrite(self, plan: ForkPlan) -> Any:
        """Async twin of :meth:`_write`."""
        graph = self.graph.graph
        pre_id = str(plan.pre.config["configurable"]["checkpoint_id"])
        try:
            copied = await acopy_branch(
                graph.checkpointer,
                plan.thread_id,
                pre_id,
                plan.fork_thread_id,
                start_at=self._copy_start(plan),
                task_paths=agraph_task_paths(graph),
            )
            plan.labels[COPIED_LABEL] = len(copied.checkpoint_ids)
            return await awrite_fork(graph.aupdate_state, plan, graph.abulk_update_state)
        except BaseException:
            await adiscard_thread(graph.checkpointer, plan.fork_thread_id)
            raise

    async def _afork(self, request: ForkRequest) -> Trajectory:
        parent = await self.store.aget_trajectory(request.run_id)
        thread_id = self._thread_of(parent)
        fork_step = select_fork_step(parent, hop=request.hop, node=request.node, step=request.step)
        branch = await self._aread_branch(parent, thread_id, stop_at=fork_step.checkpoint_id)
        plan = self._plan(request, parent, thread_id, fork_step, branch)
        graph = self.graph.graph
        fork_config = await self._awrite(plan)
        branch_id = str(fork_config["configurable"]["checkpoint_id"])
        self._remember_update(branch_id, plan.node, plan.new_output)
        plan.labels[BRANCH_CHECKPOINT_LABEL] = branch_id
        if request.mode == "replay":
            supersteps = self._supersteps(plan)
            end = await graph.abulk_update_state(fork_config, supersteps) if supersteps else fork_config
            final = (await graph.aget_state(end)).values
            return await asyncio.to_thread(self._record_replay, plan, end, final, len(supersteps))
        hook, policy = self._hook(plan), self._policy(plan)
        error: BaseException | None = None
        with fork_policy(policy):
            if request.mode == "frozen" and self.frozen_direct and DIRECT_AVAILABLE:
                done = await arun_frozen(
                    graph,
                    self.graph.handler,
                    hook,
                    self.graph._prepare(self._run_config(plan, fork_config, hook)),
                    graph_name=self.graph.handler.info.name,
                    on_update=self._remember_update,
                )
                error, run_id = done.error, self._run_id_after(done.error, done.run_id)
                plan.labels[FROZEN_APPLIED_LABEL] = done.applied
            else:
                try:
                    await self.graph.ainvoke(None, self._run_config(plan, fork_config, hook))
                except Exception as exc:
                    error = exc
                run_id = self._run_id_after(error)
        self._remember_fork(run_id, plan.fork_thread_id)
        await self.store.aannotate(run_id, **self._annotations(plan, hook, policy, error))
        if error is not None:
            raise error
        with lend_parent(plan.parent):
            fork = await self.store.aget_trajectory(run_id)
        return self._finish(plan, fork)


# --- helpers ----------------------------------------------------------------------------------
def _unknown(run_id: str) -> ValueError:
    return ValueError(f"run {run_id!r} is not in the store: there is no fork to discard")


def _fork_thread_of(fork: Trajectory) -> str:
    """The fork thread of ``fork`` when discard_fork may delete it; ValueError naming the run if not."""
    if not fork.is_counterfactual:
        raise ValueError(
            f"run {fork.run_id} is not a fork (it has no counterfactual lineage): discard_fork only "
            "deletes fork threads, never a user's run"
        )
    thread = fork.thread_id
    if thread is None or not is_fork_thread(thread):
        raise ValueError(
            f"run {fork.run_id} ran on thread {thread!r}, not on a fork thread "
            f"('<thread>{FORK_THREAD_MARK}<12 hex>'): not deleting it"
        )
    return thread


def _check_sole_run(run_id: str, thread: str, thread_runs: Sequence[str]) -> None:
    """``thread_runs`` (the store's runs on ``thread``) must be ``run_id`` alone."""
    if run_id not in thread_runs:
        raise _unknown(run_id)
    others = sorted(r for r in thread_runs if r != run_id)
    if others:
        raise ValueError(
            f"the fork thread {thread!r} of run {run_id} also holds run(s) {', '.join(others)} "
            "(someone continued on it): not deleting it"
        )


def _as_request(item: ForkRequest | Mapping[str, Any]) -> ForkRequest:
    if isinstance(item, ForkRequest):
        return item
    if isinstance(item, Mapping):
        return ForkRequest(**item)
    raise TypeError(f"fork requests must be ForkRequest objects or dicts, got {type(item).__name__}")
