"""Many forks of one run at once: threads and asyncio tasks, InMemorySaver and SqliteSaver."""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Any

import pytest
from causal_middleware.integrations.langgraph import CausalNodeWrapper
from causal_middleware.integrations.langgraph.replayer import ForkRequest, Replayer
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from causal_middleware.spans.model import Trajectory

from .conftest import Shape, checkpoint_rows, run_snapshot


def _requests(run_id: str, n: int) -> list[ForkRequest]:
    modes = ("regenerate", "frozen", "replay")
    return [
        ForkRequest(
            run_id=run_id,
            hop=2,
            values={"docs": [{"id": f"N{i}", "text": f"doc {i}", "score": 1.0}]},
            mode=modes[i % 3],  # type: ignore[arg-type]
            labels={"i": i},
        )
        for i in range(n)
    ]


def _check_forks(shape: Shape, run_id: str, forks: list[Trajectory]) -> None:
    parent = shape.graph.store.get_trajectory(run_id)
    for i, fork in enumerate(forks):
        assert fork.labels["i"] == i and fork.lineage.parent_run_id == run_id  # type: ignore[union-attr]
        expected = parent.answer if fork.lineage.mode == "replay" else f"q1-d,N{i},q3-d"  # type: ignore[union-attr]
        assert fork.answer == expected, (i, fork.lineage.mode)  # type: ignore[union-attr]
        assert [d.id for d in fork.hop(2).documents] == [f"N{i}"]
    assert len({f.run_id for f in forks}) == len(forks)
    assert len({f.labels["replay.branch_checkpoint_id"] for f in forks}) == len(forks)
    assert len({f.thread_id for f in forks}) == len(forks)  # one fork thread each
    assert {r.run_id for r in shape.graph.store.list_runs(parent_run_id=run_id)} == {f.run_id for f in forks}
    assert shape.effects == collections.Counter()
    for fork in forks:
        if fork.lineage.mode == "frozen":  # type: ignore[union-attr]
            # forks on threads of their own never start from a superseded checkpoint, so LangGraph
            # saves no extra "fork" checkpoint and the steps keep the parent's numbers
            assert fork.labels["replay.suffix"]["diverged"] == []
            assert fork.labels["replay.suffix"]["step_offset"] == 0


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_fork_many_on_threads(make_shape: Any, sqlite_saver: Any, saver: str) -> None:
    shape = make_shape("custom", checkpointer=InMemorySaver() if saver == "memory" else sqlite_saver)
    run_id = shape.run()
    rows_before = checkpoint_rows(shape.graph.graph.checkpointer)
    snapshot = run_snapshot(shape.graph.store, run_id)
    shape.reset()
    forks = Replayer(shape.graph, max_concurrency=4).fork_many(_requests(run_id, 9))
    _check_forks(shape, run_id, forks)  # type: ignore[arg-type]
    # 3 regenerate forks re-run decide, retrieve, decide, answer; 3 frozen ones only answer
    assert shape.nodes == collections.Counter({"decide": 6, "retrieve": 3, "answer": 6})
    rows_after = checkpoint_rows(shape.graph.graph.checkpointer)
    assert {k: rows_after[k] for k in rows_before} == rows_before
    assert run_snapshot(shape.graph.store, run_id) == snapshot


class _Gate(Runnable[Any, Any]):
    """Records how many executions of a node overlap (each fork runs its nodes one at a time)."""

    def __init__(self, inner: Runnable[Any, Any]) -> None:
        self.inner = inner
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(0.01)
            return self.inner.invoke(input, config, **kwargs)
        finally:
            with self.lock:
                self.active -= 1


def test_max_concurrency_bounds_parallel_forks(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    wrapper = shape.graph.graph.nodes["decide"].bound
    assert isinstance(wrapper, CausalNodeWrapper)
    gate = _Gate(wrapper.inner)
    wrapper.inner = gate
    Replayer(shape.graph, max_concurrency=2).fork_many(
        [{"run_id": run_id, "hop": 1, "labels": {"i": i}} for i in range(6)]
    )
    assert 1 <= gate.peak <= 2


def test_fork_many_reports_failures_in_place(make_shape: Any) -> None:
    shape = make_shape("custom")
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    requests = [ForkRequest(run_id=run_id, hop=2), ForkRequest(run_id=run_id, hop=9)]
    results = replayer.fork_many(requests, return_exceptions=True)
    assert isinstance(results[0], Trajectory) and isinstance(results[1], ValueError)
    with pytest.raises(ValueError, match="hop=9"):
        replayer.fork_many(requests)


def test_forks_of_different_runs_from_threads(make_shape: Any, sqlite_saver: Any) -> None:
    shape = make_shape("custom", checkpointer=sqlite_saver)
    run_a, run_b = shape.run("thread-a"), shape.run("thread-b")
    replayer = Replayer(shape.graph, max_concurrency=4)
    results: dict[int, Trajectory] = {}

    def work(i: int) -> None:
        run_id = run_a if i % 2 else run_b
        results[i] = replayer.fork(
            run_id, hop=3, values={"docs": [{"id": f"X{i}", "text": "", "score": 0.0}]}
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, fork in results.items():
        assert fork.lineage.parent_run_id == (run_a if i % 2 else run_b)  # type: ignore[union-attr]
        # each fork runs on a thread of its own, named after its parent's
        assert (fork.thread_id or "").startswith(("thread-a" if i % 2 else "thread-b") + "::fork-")
        assert fork.answer == f"q1-d,q2-d,X{i}"
    assert len(results) == 8


@pytest.mark.parametrize("saver", ["memory", "async-sqlite"])
def test_afork_many_as_tasks(make_shape: Any, tmp_path: Any, saver: str) -> None:
    async def main() -> None:
        if saver == "memory":
            await scenario(InMemorySaver())
        else:
            async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.db")) as checkpointer:
                await scenario(checkpointer)

    async def scenario(checkpointer: Any) -> None:
        shape = make_shape("custom", checkpointer=checkpointer)
        await shape.graph.ainvoke(shape.input, {"configurable": {"thread_id": shape.thread_id}})
        run_id = shape.graph.last_run_id
        shape.reset()
        replayer = Replayer(shape.graph, max_concurrency=3)
        forks = await replayer.afork_many(_requests(run_id, 6))
        _check_forks(shape, run_id, forks)  # type: ignore[arg-type]
        single = await replayer.afork(run_id, hop=3, mode="frozen", values={"docs": []})
        assert single.answer == "q1-d,q2-d" and single.lineage.mode == "frozen"  # type: ignore[union-attr]

    asyncio.run(main())
