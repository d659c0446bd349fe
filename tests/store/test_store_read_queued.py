"""A run the background writer still holds whole is read from what the writer holds, without
waiting for its transaction, and the trajectory is the one the file gives once it is written: the
same spans, annotations and (for a fork) stitched prefix."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, TypedDict

from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from gated_store import GatedStore, recording
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from span_factory import emit_run

from causal_middleware.spans.model import Lineage, Trajectory
from causal_middleware.store.sqlite import SqliteSpanStore


def _dump(trajectory: Trajectory) -> dict[str, Any]:
    return trajectory.model_dump(mode="json")


def test_a_held_run_and_its_queued_annotation_read_as_the_file_will_give_them(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    store = GatedStore(path)
    provider, processor = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        lineage = Lineage(parent_run_id="ab" * 16, fork_hop=2, mode="frozen")
        store.annotate(
            run_id, outcome="failure", reference="Tessaly", labels={"judge": "em"}, lineage=lineage
        )
        early = store.get_trajectory(run_id)  # returns while the writer is still held
        assert store.batches == [] and processor.writer is not None and processor.writer.is_pending(run_id)
        assert early.labels["judge"] == "em" and early.reference == "Tessaly"
        assert early.outcome is not None and early.outcome.value == "failure"
        assert early.lineage == lineage and len(early.hops) == 3
        early.labels["judge"] = "changed by the caller"  # the reader's copy is its own
        store.gate.set()
        assert processor.flush(10)
        assert _dump(store.get_trajectory(run_id))["labels"]["judge"] == "em"
        early.labels["judge"] = "em"
        with SqliteSpanStore(path, create=False) as fresh:  # from the file alone
            assert _dump(fresh.get_trajectory(run_id)) == _dump(early)
    finally:
        store.gate.set()
        provider.shutdown()
        store.close()


def test_without_read_queued_the_read_waits_for_the_write(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "w.db")
    store.read_queued = False
    provider, processor = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        threading.Timer(0.2, store.gate.set).start()
        store.get_trajectory(run_id)
        assert len(store.batches) == 1  # it read only after the writer wrote
        assert processor.flush(10)
    finally:
        store.gate.set()
        provider.shutdown()
        store.close()


class _State(TypedDict, total=False):
    n: int
    answer: str


def _graph(store: SqliteSpanStore) -> Any:
    g = StateGraph(_State)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_node("finish", lambda s: {"answer": f"n={s['n']}"})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 3 else "finish", ["step", "finish"])
    g.add_edge("finish", END)
    return instrument(g.compile(checkpointer=InMemorySaver()), store=store)


def test_a_fork_read_while_held_is_the_stitched_fork_the_file_gives(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    store = GatedStore(path)
    store.gate.set()  # the parent run is written
    graph = _graph(store)
    graph.invoke({"n": 0}, {"configurable": {"thread_id": "t"}})
    parent_id = graph.last_run_id
    assert parent_id is not None
    replayer = Replayer(graph)
    for mode in ("replay", "frozen", "regenerate"):
        store.gate.clear()
        writes = len(store.batches)
        fork = replayer.fork(parent_id, node="step", step=2, values={"n": 5}, mode=mode)
        assert len(store.batches) == writes, mode  # the fork came back before its spans were written
        assert fork.is_counterfactual and fork.lineage is not None and fork.lineage.parent_run_id == parent_id
        assert fork.answer == ("n=3" if mode == "replay" else "n=5"), mode  # replay keeps the suffix
        store.gate.set()
        assert graph.flush(10)
        with SqliteSpanStore(path, create=False) as fresh:
            assert _dump(fresh.get_trajectory(fork.run_id)) == _dump(fork), mode
    graph.shutdown()
    store.close()
