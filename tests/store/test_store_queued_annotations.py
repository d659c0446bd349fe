"""``annotate`` of a run whose spans the background writer still holds is queued behind them
(no wait on the caller's thread), and every read of the run sees it; the run row is recomputed
from remembered facts only while nobody else changed the run."""

from __future__ import annotations

from pathlib import Path

from gated_store import GatedStore, recording
from span_factory import emit_run, fabricate_run

from causal_middleware.spans.health import health
from causal_middleware.spans.model import Lineage
from causal_middleware.spans.writer import QueuedAnnotation, writers_for
from causal_middleware.store.sqlite import SqliteSpanStore


def test_an_annotation_of_a_queued_run_is_queued_and_every_read_sees_it(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "q.db")
    provider, processor = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        writer = processor.writer
        assert writer is not None and writer.is_pending(run_id)
        lineage = Lineage(parent_run_id="ab" * 16, fork_hop=2, mode="frozen")
        labels = {"judge": "em", "nested": [1, 2]}
        store.annotate(run_id, outcome="failure", reference="Tessaly", labels=labels, lineage=lineage)
        labels["judge"] = "changed after the call"  # the queued copy is not the caller's dict
        assert writer.stats.submitted == 2  # the run, then its annotation behind it
        assert store.batches == []  # annotate returned while the writer was still held
        store.gate.set()
        trajectory = store.get_trajectory(run_id)  # waits for the run and its annotation
        assert trajectory.labels["judge"] == "em" and trajectory.labels["nested"] == [1, 2]
        assert trajectory.outcome is not None and trajectory.outcome.value == "failure"
        assert trajectory.reference == "Tessaly"
        assert trajectory.lineage is not None and trajectory.lineage.fork_hop == 2
        summary = store.list_runs()[0]
        assert summary.labels["judge"] == "em" and summary.parent_run_id == "ab" * 16
        assert [r.run_id for r in store.list_runs(label="judge=em")] == [run_id]
        assert store.get_annotations(run_id).reference == "Tessaly"
        assert sum(a for _, a in store.batches) == 1
    finally:
        store.gate.set()
        provider.shutdown()
        store.close()


def test_a_run_already_written_is_annotated_at_once(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "w.db")
    store.gate.set()
    provider, processor = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        assert processor.flush(10)
        submitted = processor.writer.stats.submitted if processor.writer else 0
        store.annotate(run_id, labels={"late": True})
        assert processor.writer is not None and processor.writer.stats.submitted == submitted
        assert store.get_trajectory(run_id).labels["late"] is True
    finally:
        provider.shutdown()
        store.close()


def test_annotations_queued_in_order_merge_in_order(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "o.db")
    provider, _ = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        store.annotate(run_id, labels={"k": 1, "a": "x"})
        store.annotate(run_id, labels={"k": 2}, outcome="success")
        store.gate.set()
        labels = store.get_trajectory(run_id).labels
        assert labels["k"] == 2 and labels["a"] == "x"
        assert store.list_runs()[0].outcome is not None
    finally:
        store.gate.set()
        provider.shutdown()
        store.close()


def test_a_queued_annotation_of_a_run_not_in_the_file_is_skipped_and_counted(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    health.reset()
    with SqliteSpanStore(tmp_path / "u.db") as store:
        store.write_batch(records, annotations=[QueuedAnnotation("cd" * 16, labels={"x": 1})])
        assert store.get_trajectory(run_id).run_id == run_id  # the spans are written all the same
        assert health.counts.get("store.annotations_unknown_run") == 1
        store.write_batch([], annotations=[QueuedAnnotation(run_id, labels={"x": 1})])
        assert store.get_trajectory(run_id).labels["x"] == 1


def test_a_cached_trajectory_is_replaced_after_an_annotation(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    with SqliteSpanStore(tmp_path / "c.db") as store:
        store.write_spans(records)
        before = store.get_trajectory(run_id)
        assert "flag" not in before.labels
        assert store.get_trajectory(run_id).labels == before.labels  # served from the cache
        store.annotate(run_id, labels={"flag": "on"})
        assert store.get_trajectory(run_id).labels["flag"] == "on"
        store.write_batch([], annotations=[QueuedAnnotation(run_id, labels={"flag": "off"})])
        assert store.get_trajectory(run_id).labels["flag"] == "off"
        root = next(r for r in records if r.parent_span_id is None)
        late = root.model_copy(
            update={
                "span_id": "e" * 16,
                "parent_span_id": root.span_id,
                "name": "late tool",
                "start_time_ns": root.end_time_ns or root.start_time_ns,
                "attributes": {"causal.span.type": "tool", "tool.name": "late"},
            }
        )
        steps = len(store.get_trajectory(run_id).steps)
        store.write_spans([late])  # a later span of the run: the cached trajectory is not served
        after = store.get_trajectory(run_id)
        assert len(after.steps) == steps + 1 and after.steps[-1].kind == "tool"
        assert after.labels["flag"] == "off"


def test_an_annotation_after_another_writer_changed_the_run_reads_its_spans_again(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    root = next(r for r in records if r.parent_span_id is None)
    path = tmp_path / "two.db"
    with SqliteSpanStore(path) as first, SqliteSpanStore(path) as second:
        first.write_spans(records)  # first remembers the run's facts
        extra = root.model_copy(
            update={
                "span_id": "f" * 16,
                "parent_span_id": root.span_id,
                "name": "late child",
                "attributes": {},
            }
        )
        second.write_spans([extra])  # another connection adds a span: the row's version moves on
        first.annotate(run_id, labels={"after": 1})
        summary = first.list_runs()[0]
        assert summary.n_spans == len(records) + 1
        assert summary.labels["after"] == 1


def test_no_writer_is_left_registered_for_a_closed_store(tmp_path: Path) -> None:
    store = SqliteSpanStore(tmp_path / "r.db")
    provider, _ = recording(store)
    provider.shutdown()
    key = store.pending_key()
    store.close()
    assert all(not w.accepts_annotations or w.closed for w in writers_for(key))
