"""Fork threads: every fork runs on a thread of its own, so the parent's thread never moves.

``update_state`` on a past checkpoint adds a checkpoint to the *same* thread and makes it the
thread's latest, so a fork written on the user's thread would become what the user's next
``invoke`` on that thread continues from. Instead, a fork first copies the parent's branch (the
checkpoints down to the fork point, following ``parent_config``, with their pending writes) into a
fresh thread ``f"{thread_id}::fork-{12 hex digits}"``, keeping the same checkpoint ids and parent
links, and writes and runs the fork there. Forks of that fork find every checkpoint id they need
on the fork thread.

The copy starts at the thread's root, or at ``start_at`` (a checkpoint on the branch, which becomes
the fork thread's root): every checkpoint holds the whole state, so the branch above it is only
history, and copying it costs time that grows with the thread (a long chat thread has hundreds of
checkpoints, each holding the conversation so far). Graphs with ``DeltaChannel`` state are the
exception: their values are rebuilt from the ancestors' writes, so they need the whole branch.

Only the public ``BaseCheckpointSaver`` API is used (``get_tuple``, ``put`` with every channel's
version so savers that store one blob per channel version get every value, ``put_writes`` per
task), so any saver works. The API does not expose the ``task_path`` a write was saved with; it
only orders the writes of one checkpoint (``writes_sort_key``), so where several tasks wrote at
one checkpoint their paths are taken from the graph's snapshot of that checkpoint.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, BaseCheckpointSaver, CheckpointTuple

from causal_middleware.replay.errors import ReplayError

from .branch import checkpoint_config

__all__ = [
    "FORK_THREAD_MARK",
    "CopiedBranch",
    "acopy_branch",
    "agraph_task_paths",
    "adelete_fork_thread",
    "copy_branch",
    "delete_fork_thread",
    "graph_task_paths",
    "has_delta_channels",
    "is_fork_thread",
    "new_fork_thread_id",
    "task_path_str",
]

FORK_THREAD_MARK = "::fork-"
_FORK_THREAD = re.compile(r".+" + re.escape(FORK_THREAD_MARK) + r"[0-9a-f]{12}")

# Guards against cycles in a corrupt checkpointer; far above any real thread's length.
_MAX_CHAIN = 100_000

TaskPaths = Callable[[RunnableConfig], Mapping[str, str]]
ATaskPaths = Callable[[RunnableConfig], Awaitable[Mapping[str, str]]]
Writes = dict[str, list[tuple[str, Any]]]


def new_fork_thread_id(thread_id: str) -> str:
    """A fresh thread id for a fork of a run on ``thread_id``: ``"<thread_id>::fork-<12 hex>"``."""
    if not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    return f"{thread_id}{FORK_THREAD_MARK}{uuid.uuid4().hex[:12]}"


def is_fork_thread(thread_id: str | None) -> bool:
    """Whether ``thread_id`` is a fork thread as :func:`new_fork_thread_id` names them."""
    return bool(thread_id) and _FORK_THREAD.fullmatch(str(thread_id)) is not None


def task_path_str(path: Any) -> str:
    """A task's path as LangGraph's loop passes it to ``put_writes`` (``~a, b`` for tuples,
    zero-padded integers)."""
    if isinstance(path, (tuple, list)):
        return "~" + ", ".join(task_path_str(x) for x in path)
    if isinstance(path, int):
        return f"{path:010d}"
    return str(path)


@dataclass(frozen=True)
class CopiedBranch:
    """The copy of one branch: the fork thread, the checkpoint ids copied (root first), how many
    pending writes came along, and whether the copy starts at the source thread's root."""

    thread_id: str
    source_thread_id: str
    checkpoint_ids: list[str]
    writes: int
    from_root: bool

    @property
    def head(self) -> str:
        """The fork-point checkpoint: the copied branch's last, the fork thread's latest."""
        return self.checkpoint_ids[-1]


def has_delta_channels(graph: Any) -> bool:
    """Whether ``graph`` keeps state in ``DeltaChannel``s (values rebuilt from ancestors' writes)."""
    try:
        from langgraph.channels.delta import DeltaChannel
    except ImportError:  # a LangGraph without DeltaChannel
        return False
    return any(isinstance(c, DeltaChannel) for c in (getattr(graph, "channels", None) or {}).values())


def graph_task_paths(graph: Any) -> TaskPaths:
    """``task_paths`` read from ``graph``'s snapshot of a checkpoint (its tasks' paths)."""

    def paths(config: RunnableConfig) -> Mapping[str, str]:
        return {task.id: task_path_str(task.path) for task in graph.get_state(config).tasks}

    return paths


def agraph_task_paths(graph: Any) -> ATaskPaths:
    """Async twin of :func:`graph_task_paths`."""

    async def paths(config: RunnableConfig) -> Mapping[str, str]:
        return {task.id: task_path_str(task.path) for task in (await graph.aget_state(config)).tasks}

    return paths


# --- copying -----------------------------------------------------------------------------------
def _saver(checkpointer: Any) -> BaseCheckpointSaver[Any]:
    if not isinstance(checkpointer, BaseCheckpointSaver):
        raise ReplayError(
            f"the graph's checkpointer is {type(checkpointer).__name__}, not a BaseCheckpointSaver: "
            "cannot copy the run's checkpoints to a fork thread"
        )
    return checkpointer


def _check_target(source: str, target: str) -> None:
    if not target or target == source:
        raise ValueError(f"the fork thread must be a new thread id, got {target!r} (source {source!r})")


def _missing(thread_id: str, checkpoint_id: str | None) -> ReplayError:
    return ReplayError(
        f"checkpoint {checkpoint_id} of thread {thread_id!r} is not in the graph's checkpointer; "
        "cannot copy the run's branch to a fork thread"
    )


def _next_up(tup: CheckpointTuple, start_at: str | None) -> Any:
    """The config of the checkpoint above ``tup`` on the branch, None at the copy's first one."""
    return None if tup.checkpoint["id"] == start_at else tup.parent_config


def _target_config(thread_id: str, parent_id: str | None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent_id is not None:
        configurable["checkpoint_id"] = parent_id
    return RunnableConfig(configurable=configurable)


def _put_args(tup: CheckpointTuple, target: str, first: bool) -> tuple[Any, ...]:
    """``put``'s arguments for the copy of ``tup`` (the copy's first checkpoint gets no parent)."""
    parent = (
        None if first or tup.parent_config is None else tup.parent_config["configurable"]["checkpoint_id"]
    )
    return (
        _target_config(target, parent),
        tup.checkpoint,
        tup.metadata,
        dict(tup.checkpoint["channel_versions"]),
    )


def _grouped_writes(tup: CheckpointTuple) -> Writes:
    """Pending writes per task, in saved order, regular writes first: ``put_writes`` numbers a
    regular write by its position in the list (special channels have fixed negative indexes)."""
    groups: Writes = {}
    for task_id, channel, value in tup.pending_writes or ():
        groups.setdefault(task_id, []).append((channel, value))
    return {
        task_id: [w for w in writes if w[0] not in WRITES_IDX_MAP]
        + [w for w in writes if w[0] in WRITES_IDX_MAP]
        for task_id, writes in groups.items()
    }


def _copied(target: str, source: str, tuples: list[CheckpointTuple], writes: int) -> CopiedBranch:
    return CopiedBranch(
        thread_id=target,
        source_thread_id=source,
        checkpoint_ids=[str(t.checkpoint["id"]) for t in tuples],
        writes=writes,
        from_root=not tuples or tuples[0].parent_config is None,
    )


def copy_branch(
    checkpointer: Any,
    thread_id: str,
    checkpoint_id: str,
    target_thread_id: str,
    *,
    start_at: str | None = None,
    task_paths: TaskPaths | None = None,
) -> CopiedBranch:
    """Copy the branch of ``thread_id`` that ends at ``checkpoint_id`` (root first) into
    ``target_thread_id``, with the same checkpoint ids, parent links, metadata and pending writes.

    ``start_at``: the branch's first checkpoint to copy (it becomes the copy's root, with no
    parent); the thread's root when None or not on the branch. ``task_paths(config)`` maps the
    task ids of a source checkpoint to their task paths; it is asked only for checkpoints where
    several tasks wrote (the paths order their writes). Reads ``thread_id`` only. Raises
    ``ReplayError`` when a checkpoint of the branch is missing, ``ValueError`` for a target that
    is not a new thread id.
    """
    _check_target(thread_id, target_thread_id)
    saver = _saver(checkpointer)
    tuples: list[CheckpointTuple] = []
    config: Any = checkpoint_config(thread_id, checkpoint_id)
    while config is not None and len(tuples) < _MAX_CHAIN:
        tup = saver.get_tuple(config)
        if tup is None:
            raise _missing(thread_id, config["configurable"].get("checkpoint_id"))
        tuples.append(tup)
        config = _next_up(tup, start_at)
    tuples.reverse()
    writes = 0
    for i, tup in enumerate(tuples):
        groups = _grouped_writes(tup)
        paths = task_paths(tup.config) if task_paths is not None and len(groups) > 1 else {}
        saved = saver.put(*_put_args(tup, target_thread_id, first=i == 0))
        for task_id, task_writes in groups.items():
            saver.put_writes(saved, task_writes, task_id, paths.get(task_id, ""))
            writes += len(task_writes)
    return _copied(target_thread_id, thread_id, tuples, writes)


async def acopy_branch(
    checkpointer: Any,
    thread_id: str,
    checkpoint_id: str,
    target_thread_id: str,
    *,
    start_at: str | None = None,
    task_paths: ATaskPaths | None = None,
) -> CopiedBranch:
    """Async twin of :func:`copy_branch` (``aget_tuple``, ``aput``, ``aput_writes``)."""
    _check_target(thread_id, target_thread_id)
    saver = _saver(checkpointer)
    tuples: list[CheckpointTuple] = []
    config: Any = checkpoint_config(thread_id, checkpoint_id)
    while config is not None and len(tuples) < _MAX_CHAIN:
        tup = await saver.aget_tuple(config)
        if tup is None:
            raise _missing(thread_id, config["configurable"].get("checkpoint_id"))
        tuples.append(tup)
        config = _next_up(tup, start_at)
    tuples.reverse()
    writes = 0
    for i, tup in enumerate(tuples):
        groups = _grouped_writes(tup)
        paths = await task_paths(tup.config) if task_paths is not None and len(groups) > 1 else {}
        saved = await saver.aput(*_put_args(tup, target_thread_id, first=i == 0))
        for task_id, task_writes in groups.items():
            await saver.aput_writes(saved, task_writes, task_id, paths.get(task_id, ""))
            writes += len(task_writes)
    return _copied(target_thread_id, thread_id, tuples, writes)


def discard_thread(checkpointer: Any, thread_id: str) -> None:
    """Delete a fork thread left behind by a fork that failed before it ran (best effort)."""
    try:
        checkpointer.delete_thread(thread_id)
    except Exception:  # noqa: BLE001 - cleanup after a failure must not hide that failure
        pass


async def adiscard_thread(checkpointer: Any, thread_id: str) -> None:
    """Async twin of :func:`discard_thread`."""
    try:
        await checkpointer.adelete_thread(thread_id)
    except Exception:  # noqa: BLE001 - cleanup after a failure must not hide that failure
        pass


def _check_fork_thread(thread_id: str) -> None:
    if not is_fork_thread(thread_id):
        raise ValueError(
            f"{thread_id!r} is not a fork thread ('<thread>{FORK_THREAD_MARK}<12 hex>'): not deleting it"
        )


def _thread_config(thread_id: str) -> RunnableConfig:
    return RunnableConfig(configurable={"thread_id": thread_id})


def delete_fork_thread(checkpointer: Any, thread_id: str) -> bool:
    """Delete the fork thread ``thread_id`` (every checkpoint and write, all namespaces).

    True when the thread held checkpoints; False when it held none or the checkpointer cannot
    list or delete threads (no ``delete_thread``, or one that raises ``NotImplementedError``).
    Raises ``ValueError`` for a thread id that is not a fork thread's.
    """
    _check_fork_thread(thread_id)
    if getattr(checkpointer, "delete_thread", None) is None:
        return False
    try:
        if next(iter(checkpointer.list(_thread_config(thread_id), limit=1)), None) is None:
            return False
        checkpointer.delete_thread(thread_id)
    except NotImplementedError:
        return False
    return True


async def adelete_fork_thread(checkpointer: Any, thread_id: str) -> bool:
    """Async twin of :func:`delete_fork_thread` (``alist``, ``adelete_thread``)."""
    _check_fork_thread(thread_id)
    if getattr(checkpointer, "adelete_thread", None) is None:
        return False
    try:
        held = False
        async for _ in checkpointer.alist(_thread_config(thread_id), limit=1):
            held = True
            break
        if not held:
            return False
        await checkpointer.adelete_thread(thread_id)
    except NotImplementedError:
        return False
    return True
