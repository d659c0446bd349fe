"""``benchmarks.perf.scale_store``: a store of N runs made by SQL copies of runs written through the
real write path, read back through the store (small sizes here; the figures are the bench's job)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.perf import __main__ as cli
from benchmarks.perf import scale_store
from causal_middleware.store.sqlite import SqliteSpanStore


def test_copies_are_whole_runs_with_their_own_ids_times_and_labels(tmp_path: Path) -> None:
    template = scale_store._unlabelled(scale_store.template_run())
    path = tmp_path / "s.db"
    n_sample, n_runs = 8, 40
    with SqliteSpanStore(path) as store:
        written = scale_store.write_sample(store, template, n_sample)
        scale_store._relabel_sample(store, n_sample, n_runs)
        assert written["sample_spans"] == n_sample * len(template) and written["ingest_spans_per_s"] > 0
        sample_run = store.list_runs(limit=None)[-1].run_id
        sample = store.get_trajectory(sample_run)
    scale_store.copy_runs(path, n_sample, n_runs)
    with SqliteSpanStore(path) as store:
        runs = store.list_runs(limit=None)
        assert len(runs) == n_runs and len({r.run_id for r in runs}) == n_runs
        starts = [r.started_at for r in runs]
        assert starts == sorted(starts, reverse=True)  # one second apart, newest first
        assert (starts[0] - starts[-1]).total_seconds() == n_runs - 1
        needle = store.list_runs(label="needle=1")
        assert [r.labels["i"] for r in needle] == [n_runs // 2]
        assert len(store.list_runs(label="split=a", limit=None)) == n_runs // 4
        copy_id = f"{scale_store.COPY_PREFIX:016x}{n_runs - 1:016x}"
        copy = store.get_trajectory(copy_id)
        assert copy.labels == {"i": n_runs - 1}
        assert copy.answer == sample.answer and len(copy.steps) == len(sample.steps)
        assert [h.sub_query for h in copy.hops] == [h.sub_query for h in sample.hops]
        assert store.get_spans(copy_id)[0].trace_id == copy_id
        reads = scale_store.measure(store, n_runs, repeat=3)
        assert reads["returned"]["label_1match"] == 1 and reads["get_trajectory_runs"] == 3
        assert reads["pages_read"] == n_runs


def test_run_deletes_its_file_and_reports_the_stored_runs(tmp_path: Path) -> None:
    result = scale_store.run(30, workdir=tmp_path, n_sample=10)
    assert result["stored_runs"] == 30 and result["newest_copy_labels"] == {"i": 29, "split": "b"}
    assert result["file_bytes_per_span"] > 0 and result["reads"]["list_runs_p50_ms"] > 0
    assert not list(tmp_path.glob("perf-scale-*/scale.db"))
    rows = {r["figure"]: r for r in cli.summary({"store_scale": result})}
    assert rows["store at --store-runs: list_runs() p50, ms"]["now"] == result["reads"]["list_runs_p50_ms"]
