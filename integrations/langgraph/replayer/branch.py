"""One run's branch of a thread's checkpoint tree, and the node outputs recorded along it.

Once a thread has been forked it holds a tree of checkpoints; a run's branch is the path from
its last checkpoint up to the thread's root (``parent_config`` links). Along it, the output of
the node that ran from checkpoint ``C`` is ``C.tasks[i].result`` (LangGraph keeps a task's
writes with the checkpoint it ran from) when the next checkpoint on the branch came from the
loop. When the next checkpoint came from ``update_state`` (an intervention, or a replayed step)
the checkpointer keeps no record of what was written, so the output is taken from the in-process
cache of updates this replayer made, else from the run's own trajectory (the span JSON). A next
checkpoint of source ``fork`` is a copy LangGraph saves when a run starts from a checkpoint the
thread has moved past (LangGraph time travel on the user's own thread, or forks recorded before
each fork got a thread of its own): no node ran in between.

Reading a branch costs one ``get_state`` per checkpoint (LangGraph rebuilds the channels and the
tasks each time), and a diagnosis forks one run many times. A :class:`SnapshotCache` keeps the
snapshots of checkpoints that already have a child on the branch: their tasks ran and their writes
are final, so the snapshot cannot change. The walk's first checkpoint (the run's leaf, whose
writes may still change when the thread is resumed) is always read from the checkpointer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.replay.errors import ReplayError

__all__ = [
    "Branch",
    "CheckpointFirst",
    "RecordedTask",
    "SnapshotCache",
    "aread_branch",
    "checkpoint_config",
    "read_branch",
]

# Guards against cycles in a corrupt checkpointer; far above any real run's length.
_MAX_BRANCH = 100_000


@dataclass(frozen=True)
class RecordedTask:
    """One node execution on a branch: the node, its ``langgraph_step``, and what it returned."""

    node: str
    langgraph_step: int
    output: Any
    checkpoint_id: str = field(metadata={"doc": "the checkpoint the node ran from"})
    via: str = "loop"  # "loop" (the node ran) or "update" (written by update_state)
    task_id: str | None = None  # LangGraph's task id (parallel executions of one node differ)


@dataclass
class Branch:
    """A run's checkpoints, oldest first, and the node outputs recorded between them."""

    thread_id: str
    snapshots: list[Any]
    tasks: list[RecordedTask]

    def snapshot(self, checkpoint_id: str) -> Any:
        for snap in self.snapshots:
            if snap.config["configurable"]["checkpoint_id"] == checkpoint_id:
                return snap
        raise KeyError(checkpoint_id)

    def outputs_after(self, langgraph_step: int) -> list[RecordedTask]:
        """Recorded node executions with a ``langgraph_step`` above ``langgraph_step``, in step order."""
        return [t for t in self.tasks if t.langgraph_step > langgraph_step]

    def output_of(self, node: str, langgraph_step: int, task_id: str | None = None) -> RecordedTask | None:
        """The execution of ``node`` at ``langgraph_step`` (``task_id`` picks one of parallel ones)."""
        matches = [t for t in self.tasks if t.node == node and t.langgraph_step == langgraph_step]
        if task_id is not None:
            exact = [t for t in matches if t.task_id == task_id]
            matches = exact or matches
        return matches[0] if matches else None

    def siblings_of(self, task: RecordedTask) -> list[RecordedTask]:
        """The other executions of ``task``'s superstep (parallel branches, ``Send`` fan-out): a fork
        writes them back beside the intervened one so their outputs are not lost."""
        return [
            t
            for t in self.tasks
            if t is not task
            and t.checkpoint_id == task.checkpoint_id
            and t.langgraph_step == task.langgraph_step
        ]


class SnapshotCache:
    """Snapshots of checkpoints with a child on a branch, by ``(thread_id, checkpoint_id)``; at
    most ``size``, least recently used dropped first. Thread-safe. The snapshots are shared: the
    replayer only reads them (outputs are deep-copied before they are written or returned)."""

    def __init__(self, size: int = 256) -> None:
        if size < 0:
            raise ValueError(f"size must be at least 0, got {size}")
        self._size = size
        self._entries: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, thread_id: str, checkpoint_id: str) -> Any | None:
        with self._lock:
            snap = self._entries.get((thread_id, checkpoint_id))
            if snap is not None:
                self._entries.move_to_end((thread_id, checkpoint_id))
            return snap

    def put(self, thread_id: str, checkpoint_id: str, snapshot: Any) -> None:
        with self._lock:
            self._entries[(thread_id, checkpoint_id)] = snapshot
            self._entries.move_to_end((thread_id, checkpoint_id))
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def forget_thread(self, thread_id: str) -> None:
        """Drop every snapshot of ``thread_id`` (its checkpoints were deleted)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == thread_id]:
                del self._entries[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _cached(cache: SnapshotCache | None, thread_id: str, config: Any, is_leaf: bool) -> Any | None:
    if cache is None or is_leaf:
        return None
    checkpoint_id = config["configurable"].get("checkpoint_id")
    return cache.get(thread_id, str(checkpoint_id)) if checkpoint_id else None


def _remember(cache: SnapshotCache | None, thread_id: str, snap: Any, is_leaf: bool) -> None:
    if cache is not None and not is_leaf:
        cache.put(thread_id, str(snap.config["configurable"]["checkpoint_id"]), snap)


def checkpoint_config(thread_id: str, checkpoint_id: str) -> dict[str, Any]:
    """The config addressing one root-graph checkpoint of a thread."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}


def _source(snap: Any) -> str:
    return str((snap.metadata or {}).get("source", "loop"))


def _step(snap: Any) -> int:
    return int((snap.metadata or {}).get("step", -1))


@dataclass(frozen=True)
class CheckpointFirst:
    """A ``fallback`` output (the trajectory's JSON) to use only when the checkpoint keeps none:
    a frozen step a fork wrote with ``update_state`` keeps its writes under its task, with the
    objects' own types (messages, documents), which the span JSON does not."""

    output: Any


def _task_result(snap: Any, node: str, default: Any) -> Any:
    for task in snap.tasks:
        if task.name == node and task.error is None and task.result is not None:
            return task.result
    return default


def _tasks(
    snapshots: Sequence[Any],
    updates: Mapping[str, tuple[str, Any]],
    fallback: Mapping[tuple[str, int], Any],
) -> list[RecordedTask]:
    out: list[RecordedTask] = []
    for i, snap in enumerate(snapshots):
        checkpoint_id = snap.config["configurable"]["checkpoint_id"]
        step = _step(snap) + 1
        following = snapshots[i + 1] if i + 1 < len(snapshots) else None
        if following is not None and _source(following) == "fork":
            continue  # a copy LangGraph saved before running from a superseded checkpoint: nothing ran
        if following is not None and _source(following) == "update":
            written = following.config["configurable"]["checkpoint_id"]
            update = updates.get(written)
            if update is not None:
                node, output = update
                out.append(RecordedTask(node, step, output, checkpoint_id, via="update"))
                continue
            known = [(node, output) for (node, s), output in fallback.items() if s == step]
            for node, output in known:
                if isinstance(output, CheckpointFirst):
                    output = _task_result(snap, node, output.output)
                out.append(RecordedTask(node, step, output, checkpoint_id, via="update"))
            continue
        for task in snap.tasks:
            if task.name.startswith("__") or task.error is not None:
                continue
            if following is None and task.result is None:
                continue  # the leaf's task never ran (or wrote nothing we can tell apart)
            out.append(RecordedTask(task.name, step, task.result, checkpoint_id, task_id=str(task.id)))
    return out


def read_branch(
    graph: Any,
    thread_id: str,
    leaf_checkpoint_id: str,
    *,
    updates: Mapping[str, tuple[str, Any]] | None = None,
    fallback: Mapping[tuple[str, int], Any] | None = None,
    stop_at: str | None = None,
    cache: SnapshotCache | None = None,
) -> Branch:
    """Walk from ``leaf_checkpoint_id`` towards the root of ``thread_id``'s tree.

    ``updates`` maps a checkpoint written by ``update_state`` to the ``(node, output)`` written;
    ``fallback`` maps ``(node, langgraph_step)`` to an output known from the run's trajectory.
    ``stop_at`` ends the walk at that checkpoint (a fork only needs the branch from its fork point
    on). ``cache`` serves and keeps the snapshots above the leaf. Raises ``ReplayError`` when the
    leaf checkpoint is not in the graph's checkpointer.
    """
    snapshots: list[Any] = []
    config: Any = checkpoint_config(thread_id, leaf_checkpoint_id)
    while config is not None and len(snapshots) < _MAX_BRANCH:
        is_leaf = not snapshots
        snap = _cached(cache, thread_id, config, is_leaf)
        if snap is None:
            snap = graph.get_state(config)
            if snap.metadata is None:
                _missing(thread_id, config["configurable"].get("checkpoint_id"))
            _remember(cache, thread_id, snap, is_leaf)
        snapshots.append(snap)
        if stop_at is not None and snap.config["configurable"]["checkpoint_id"] == stop_at:
            break
        config = snap.parent_config
    snapshots.reverse()
    return Branch(thread_id, snapshots, _tasks(snapshots, updates or {}, fallback or {}))


async def aread_branch(
    graph: Any,
    thread_id: str,
    leaf_checkpoint_id: str,
    *,
    updates: Mapping[str, tuple[str, Any]] | None = None,
    fallback: Mapping[tuple[str, int], Any] | None = None,
    stop_at: str | None = None,
    cache: SnapshotCache | None = None,
) -> Branch:
    """Async twin of :func:`read_branch` (``aget_state``; needed by async-only checkpointers)."""
    snapshots: list[Any] = []
    config: Any = checkpoint_config(thread_id, leaf_checkpoint_id)
    while config is not None and len(snapshots) < _MAX_BRANCH:
        is_leaf = not snapshots
        snap = _cached(cache, thread_id, config, is_leaf)
        if snap is None:
            snap = await graph.aget_state(config)
            if snap.metadata is None:
                _missing(thread_id, config["configurable"].get("checkpoint_id"))
            _remember(cache, thread_id, snap, is_leaf)
        snapshots.append(snap)
        if stop_at is not None and snap.config["configurable"]["checkpoint_id"] == stop_at:
            break
        config = snap.parent_config
    snapshots.reverse()
    return Branch(thread_id, snapshots, _tasks(snapshots, updates or {}, fallback or {}))


def _missing(thread_id: str, checkpoint_id: str | None) -> None:
    raise ReplayError(
        f"checkpoint {checkpoint_id} of thread {thread_id!r} is not in the graph's checkpointer; "
        "replay needs the checkpointer the run was recorded with (an InMemorySaver does not outlive "
        "its process: use SqliteSaver or PostgresSaver to replay runs later)"
    )
