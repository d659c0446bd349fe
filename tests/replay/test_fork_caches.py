"""What a fork no longer reads twice (issue 16): the snapshots of a branch's checkpoints above its
leaf (final once a child exists) are kept by the replayer, the parent it already read is lent to
the store's stitching; neither changes what a fork is, and nothing handed out can reach them."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import Replayer
from causal_middleware.integrations.langgraph.replayer.branch import SnapshotCache
from causal_middleware.integrations.langgraph.replayer.locate import leaf_checkpoint_id
from langgraph.checkpoint.sqlite import SqliteSaver

from causal_middleware.replay.policy import ForkPolicy, RecordedCall
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore
from causal_middleware.store.stitch import own_steps

from .conftest import Shape

NEW_DOCS = {"docs": [{"id": "NEW", "text": "replacement", "score": 1.0}]}


def _count_get_state(shape: Shape, monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    calls: collections.Counter[str] = collections.Counter()
    graph = shape.graph.graph
    real = graph.get_state

    def counting(config: Any, *args: Any, **kwargs: Any) -> Any:
        calls[str(config["configurable"].get("checkpoint_id"))] += 1
        return real(config, *args, **kwargs)

    monkeypatch.setattr(graph, "get_state", counting)
    return calls


def _what_ran(fork: Trajectory) -> list[tuple[Any, ...]]:
    """A fork without its ids and times: its own steps, its answer, its lineage's fork point."""
    lineage = fork.lineage
    assert lineage is not None
    return [
        *((s.kind, s.node, s.hop, s.langgraph_step, s.status) for s in own_steps(fork)),
        (fork.answer, lineage.parent_run_id, lineage.fork_node, lineage.fork_step, lineage.mode),
        (len(fork.steps), [h.index for h in fork.hops]),
    ]


@pytest.mark.parametrize("mode", ["regenerate", "frozen", "replay"])
def test_forking_a_run_again_reads_only_its_leaf_again(
    make_shape: Callable[..., Shape], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    calls = _count_get_state(shape, monkeypatch)
    first = replayer.fork(run_id, hop=1, values=NEW_DOCS, mode=mode)  # type: ignore[arg-type]
    read_first = sum(calls.values())
    calls.clear()
    second = replayer.fork(run_id, hop=1, values=NEW_DOCS, mode=mode)  # type: ignore[arg-type]
    leaf = leaf_checkpoint_id(shape.graph.store.get_trajectory(run_id))
    assert read_first >= 3 and calls[str(leaf)] == 1
    assert sum(calls.values()) <= read_first - 2
    # a replayer with nothing cached makes the same fork
    cold = Replayer(shape.graph).fork(run_id, hop=1, values=NEW_DOCS, mode=mode)  # type: ignore[arg-type]
    assert _what_ran(first) == _what_ran(second) == _what_ran(cold)
    assert first.thread_id != second.thread_id


def test_the_leaf_of_a_branch_is_never_kept(make_shape: Callable[..., Shape]) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    replayer.fork(run_id, hop=1, values=NEW_DOCS)
    leaf = leaf_checkpoint_id(shape.graph.store.get_trajectory(run_id))
    assert leaf is not None and len(replayer._snapshots) > 0
    assert replayer._snapshots.get(shape.thread_id, leaf) is None


def test_discarding_a_fork_forgets_its_threads_snapshots(
    make_shape: Callable[..., Shape], sqlite_saver: SqliteSaver
) -> None:
    shape = make_shape("custom", checkpointer=sqlite_saver)
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    fork = replayer.fork(run_id, hop=2, values=NEW_DOCS)
    replayer.fork(fork.run_id, hop=2, values={"docs": []})  # reads (and keeps) the fork's branch
    assert fork.thread_id is not None
    kept = [k for k in replayer._snapshots._entries if k[0] == fork.thread_id]
    assert kept
    assert replayer.discard_fork(fork.run_id) is True
    assert all(replayer._snapshots.get(*k) is None for k in kept)


def test_snapshot_cache_is_bounded_and_rejects_a_negative_size() -> None:
    cache = SnapshotCache(2)
    for i in range(3):
        cache.put("t", f"c{i}", object())
    assert len(cache) == 2 and cache.get("t", "c0") is None and cache.get("t", "c2") is not None
    with pytest.raises(ValueError, match="size must be at least 0"):
        SnapshotCache(-1)


def test_locate_gives_the_caller_its_own_recorded_output(make_shape: Callable[..., Shape]) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    point = replayer.locate(run_id, hop=2)
    recorded = point.recorded_output
    assert isinstance(recorded, dict) and recorded["docs"]
    recorded["docs"].clear()
    recorded["poison"] = True
    again = replayer.locate(run_id, hop=2)
    assert again.recorded_output["docs"] and "poison" not in again.recorded_output
    # a plain re-run from the step puts back what the run really recorded
    fork = replayer.fork(run_id, hop=2)
    assert fork.answer == shape.graph.store.get_trajectory(run_id).answer


def test_a_served_recorded_tool_output_is_the_agents_own_copy() -> None:
    output = {"receipt": ["r-1"]}
    policy = ForkPolicy(recorded=[RecordedCall(name="send", args={"to": "x"}, output=output)])
    served = policy.recorded_output("send", {"to": "x"})
    assert served == output and served is not output
    served["receipt"].append("changed")
    assert output == {"receipt": ["r-1"]}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_fork_is_stitched_onto_the_parent_it_read_once(
    make_shape: Callable[..., Shape], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    store = InMemorySpanStore() if kind == "memory" else SqliteSpanStore(tmp_path / "s.db")
    shape = make_shape("custom", store=store)
    run_id = shape.run()
    shape.graph.flush(10)
    reads: list[str] = []
    real = store.get_trajectory

    def counting(wanted: str) -> Trajectory:
        reads.append(wanted)
        return real(wanted)

    monkeypatch.setattr(store, "get_trajectory", counting)
    replayer = Replayer(shape.graph)
    forks = [replayer.fork(run_id, hop=2, values=NEW_DOCS, mode=m) for m in ("regenerate", "replay")]
    assert reads.count(run_id) == 2  # once per fork, at its start
    monkeypatch.undo()
    cold = InMemorySpanStore()  # a store that never cached or was lent anything
    for wanted in (run_id, *(f.run_id for f in forks)):
        cold.write_spans(store.get_spans(wanted))
        got = store.get_annotations(wanted)  # type: ignore[attr-defined]
        cold.annotate(wanted, lineage=got.lineage, labels=got.labels, reference=got.reference)
    for fork in forks:
        assert fork == cold.get_trajectory(fork.run_id) == store.get_trajectory(fork.run_id)
    shape.graph.shutdown()


def test_an_async_fork_reads_its_parent_once_and_reuses_the_branch(
    make_shape: Callable[..., Shape], monkeypatch: pytest.MonkeyPatch
) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    store = shape.graph.store
    reads: list[str] = []
    real = store.get_trajectory

    def counting(wanted: str) -> Trajectory:
        reads.append(wanted)
        return real(wanted)

    monkeypatch.setattr(store, "get_trajectory", counting)
    replayer = Replayer(shape.graph)

    async def two_forks() -> list[Trajectory]:
        return [await replayer.afork(run_id, hop=1, values=NEW_DOCS) for _ in range(2)]

    calls = _count_get_state(shape, monkeypatch)
    real_aget = shape.graph.graph.aget_state

    async def counting_aget(config: Any, *args: Any, **kwargs: Any) -> Any:
        calls[str(config["configurable"].get("checkpoint_id"))] += 1
        return await real_aget(config, *args, **kwargs)

    monkeypatch.setattr(shape.graph.graph, "aget_state", counting_aget)
    first, second = asyncio.run(two_forks())
    assert reads.count(run_id) == 2  # once per fork: stitching used the parent the fork read
    leaf = leaf_checkpoint_id(real(run_id))
    # the second fork read only the leaf again: every checkpoint above it came from the cache
    assert calls[str(leaf)] == 2 and len(calls) > 2
    assert all(n == 1 for checkpoint, n in calls.items() if checkpoint != str(leaf))
    assert _what_ran(first) == _what_ran(second)
