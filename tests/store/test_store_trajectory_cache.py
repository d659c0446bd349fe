"""Issue 16 item 3: trajectories are cached as pickles (a reader's copy is its own), a fork is
stitched once per version of its ancestors, and any change to the fork or an ancestor shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from span_factory import fabricate_run

from causal_middleware.spans.model import Intervention, Lineage
from causal_middleware.store import _common
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpanStore]:
    made: SpanStore = InMemorySpanStore() if request.param == "memory" else SqliteSpanStore(tmp_path / "c.db")
    yield made
    made.close()


def _fork_of(store: SpanStore) -> tuple[str, str]:
    parent_id, parent_spans = fabricate_run(thread_id="parent")
    fork_id, fork_spans = fabricate_run(thread_id="fork", base_ns=2_000_000_000_000_000_000)
    store.write_spans(parent_spans)
    store.write_spans(fork_spans)
    node = next(s for s in store.get_trajectory(parent_id).steps if s.kind == "node" and s.langgraph_step)
    lineage = Lineage(
        parent_run_id=parent_id,
        fork_node=node.node,
        fork_step=node.langgraph_step,
        fork_hop=node.hop,
        intervention=Intervention(node=node.node, values={"answer": "changed"}),
    )
    store.annotate(fork_id, lineage=lineage)
    return parent_id, fork_id


def test_a_reader_mutating_its_trajectory_never_reaches_the_cache(store: SpanStore) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records)
    first = store.get_trajectory(run_id)
    expected = first.model_copy(deep=True)
    first.steps[0].attributes["mutated"] = True
    first.labels["mutated"] = 1
    first.hops.clear()
    assert store.get_trajectory(run_id) == expected


def test_a_fork_is_stitched_once_until_it_or_its_parent_changes(
    store: SpanStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent_id, fork_id = _fork_of(store)
    calls: list[str] = []
    real = _common.stitch_from_store

    def counting(get_trajectory, own):  # type: ignore[no-untyped-def]
        calls.append(own.run_id)
        return real(get_trajectory, own)

    monkeypatch.setattr(_common, "stitch_from_store", counting)
    first = store.get_trajectory(fork_id)
    assert first.metadata.get("causal.replay.stitched") and calls == [fork_id]
    again = store.get_trajectory(fork_id)
    assert again == first and again is not first and calls == [fork_id]  # cached, a copy of its own
    store.annotate(parent_id, labels={"seen": "yes"})  # the parent changed: stitched afresh
    store.get_trajectory(fork_id)
    assert calls == [fork_id, fork_id]
    store.annotate(fork_id, labels={"again": 1})  # the fork changed
    assert store.get_trajectory(fork_id).labels["again"] == 1
    assert calls == [fork_id, fork_id, fork_id]
    monkeypatch.undo()
    fresh = InMemorySpanStore()  # the same answer as a store that never cached anything
    fresh.write_spans(store.get_spans(parent_id))
    fresh.write_spans(store.get_spans(fork_id))
    fresh.annotate(parent_id, labels={"seen": "yes"})
    fresh.annotate(fork_id, **_annotations(store, fork_id))
    assert fresh.get_trajectory(fork_id) == store.get_trajectory(fork_id)


def _annotations(store: SpanStore, run_id: str) -> dict[str, object]:
    got = store.get_annotations(run_id)  # type: ignore[attr-defined]
    return {"lineage": got.lineage, "labels": got.labels}
