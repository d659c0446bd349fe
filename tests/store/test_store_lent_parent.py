"""A forker's parent lent to the store's stitching (``stitch.lend_parent``): used only when it is
the very object this store handed out for the parent's current version; otherwise the store reads
the parent itself, so a stale, copied or foreign parent never shapes (or poisons) a stitched fork."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from span_factory import fabricate_run

from causal_middleware.spans.model import Intervention, Lineage, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore
from causal_middleware.store.stitch import INHERITED, lend_parent, lent_parent


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpanStore]:
    made: SpanStore = InMemorySpanStore() if request.param == "memory" else SqliteSpanStore(tmp_path / "l.db")
    yield made
    made.close()


def _fork_of(store: SpanStore) -> tuple[str, str]:
    parent_id, parent_spans = fabricate_run(thread_id="parent")
    fork_id, fork_spans = fabricate_run(thread_id="fork", base_ns=2_000_000_000_000_000_000)
    store.write_spans(parent_spans)
    store.write_spans(fork_spans)
    node = [s for s in store.get_trajectory(parent_id).steps if s.kind == "node" and s.langgraph_step][-1]
    lineage = Lineage(
        parent_run_id=parent_id,
        fork_node=node.node,
        fork_step=node.langgraph_step,
        fork_hop=node.hop,
        intervention=Intervention(node=node.node, values={"answer": "changed"}),
    )
    store.annotate(fork_id, lineage=lineage)
    return parent_id, fork_id


class _Spy:
    """Counts the store's reads of one run through ``get_trajectory``."""

    def __init__(self, store: SpanStore, run_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = 0
        real = store.get_trajectory

        def counting(wanted: str) -> Trajectory:
            if wanted == run_id:
                self.reads += 1
            return real(wanted)

        monkeypatch.setattr(store, "get_trajectory", counting)


def _inherited(fork: Trajectory) -> list[str]:
    return [s.step_id for s in fork.steps if s.attributes.get(INHERITED)]


def _cold(store: SpanStore, *run_ids: str) -> InMemorySpanStore:
    """A store that never cached anything, holding the same spans and annotations."""
    fresh = InMemorySpanStore()
    for run_id in run_ids:
        fresh.write_spans(store.get_spans(run_id))
        got = store.get_annotations(run_id)  # type: ignore[attr-defined]
        fresh.annotate(run_id, lineage=got.lineage, labels=got.labels, reference=got.reference)
    return fresh


def test_the_lent_parent_is_stitched_onto_without_a_second_read(
    store: SpanStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent_id, fork_id = _fork_of(store)
    parent = store.get_trajectory(parent_id)
    spy = _Spy(store, parent_id, monkeypatch)
    with lend_parent(parent):
        assert lent_parent(parent_id) is parent and lent_parent(fork_id) is None
        fork = store.get_trajectory(fork_id)
    assert lent_parent(parent_id) is None  # only inside the block
    assert spy.reads == 0
    assert _inherited(fork) and fork == _cold(store, parent_id, fork_id).get_trajectory(fork_id)


def test_a_stale_lent_parent_is_not_used(store: SpanStore, monkeypatch: pytest.MonkeyPatch) -> None:
    parent_id, fork_id = _fork_of(store)
    parent = store.get_trajectory(parent_id)
    store.annotate(parent_id, reference="the new reference")  # the parent changed since it was read
    spy = _Spy(store, parent_id, monkeypatch)
    with lend_parent(parent):
        fork = store.get_trajectory(fork_id)
    assert spy.reads == 1 and fork.reference == "the new reference"


def test_a_copied_or_modified_parent_is_not_used(store: SpanStore, monkeypatch: pytest.MonkeyPatch) -> None:
    parent_id, fork_id = _fork_of(store)
    copied: Trajectory = pickle.loads(pickle.dumps(store.get_trajectory(parent_id)))
    copied.steps.clear()  # were it used, the fork would inherit nothing
    spy = _Spy(store, parent_id, monkeypatch)
    with lend_parent(copied):
        fork = store.get_trajectory(fork_id)
    assert spy.reads == 1 and _inherited(fork)
    monkeypatch.undo()
    assert fork == _cold(store, parent_id, fork_id).get_trajectory(fork_id)


def test_a_parent_from_another_store_is_not_used(store: SpanStore, tmp_path: Path) -> None:
    parent_id, fork_id = _fork_of(store)
    other = _cold(store, parent_id, fork_id)
    foreign = other.get_trajectory(parent_id)  # issued by the other store, at its own version
    foreign.steps.clear()
    with lend_parent(foreign):
        fork = store.get_trajectory(fork_id)
    assert _inherited(fork)
