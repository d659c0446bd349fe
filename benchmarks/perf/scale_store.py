"""The span store at a million runs: synthesised inside SQLite from real recorded runs, then read.

Encoding 35M spans one by one in Python would take hours here, so ``run(n_runs)``:

1. records one real run of the reference agent (:func:`benchmarks.perf.store.template_run`) and
   writes :data:`SAMPLE_RUNS` copies of it (new trace ids, one second apart) through the store's
   real write path, ``write_batch`` in batches of :data:`~benchmarks.perf.store.BATCH_RUNS` runs:
   ``ingest_spans_per_s`` and ``sample_bytes_per_span`` come from these;
2. copies those rows with SQL (``INSERT ... SELECT`` from a numbers table, in transactions of
   :data:`CHUNK_RUNS` runs, the WAL truncated after each) until the file holds ``n_runs`` runs:
   each copy gets a new trace id (``printf('%016x%016x', ...)``), start and end times shifted by
   one second per run, and its labels (``i``, ``split=a`` on every fourth run, ``split=b`` on the
   next, ``needle=1`` on the run in the middle) as the run's annotations, exactly what
   ``annotate(labels=...)`` stores, so ``runs.labels``, the label index (kept by the store's own
   triggers) and the trajectory all agree. The copies share the sample's content blobs (the
   store is content-addressed), so the file's bytes per span understate a real store's: the
   sample's figure is the one to quote;
3. opens the file with :class:`~causal_middleware.store.sqlite.SqliteSpanStore` and measures
   ``list_runs()``, each filter of :data:`benchmarks.perf.store.QUERIES`, keyset pages, an
   outcome and a thread filter, ``get_trajectory`` of distinct runs spread over the file (cache
   misses), and their query plans.

``run(..., keep=False)`` deletes the file afterwards (tens of GB at 1M runs).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.perf.store import BATCH_RUNS, QUERIES, default_plan, run_labels, synthesise, template_run
from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.sqlite import SqliteSpanStore

SAMPLE_RUNS = 2_000
CHUNK_RUNS = 20_000
# the high 64 bits of every synthesised trace id (the sample's ids come from synthesise())
COPY_PREFIX = 0x5CA1E
_SPAN_COPY_COLUMNS = (
    "span_id, parent_span_id, name, kind, start_time_ns, end_time_ns, status_code, status_message, "
    "attributes, events, links, resource, scope, span_type, declared_run, hop_index, answer_text"
)
_RUN_COPY_COLUMNS = (
    "thread_id, graph, started_at_ns, ended_at_ns, status, answer, n_hops, n_spans, has_root, "
    "is_run, outcome, reference, lineage, parent_run_id, version"
)


def _unlabelled(template: list[SpanRecord]) -> list[SpanRecord]:
    """The template without its root's labels: every run's labels are its annotations."""
    return [
        s.model_copy(
            update={"attributes": {k: v for k, v in s.attributes.items() if k != A.CAUSAL_RUN_LABELS}}
        )
        if A.CAUSAL_RUN_LABELS in s.attributes
        else s
        for s in template
    ]


def _labels_sql(n_runs: int) -> str:
    """The labels of run ``n.i`` as JSON text, in SQL: :func:`run_labels`'s, keys in its order."""
    return (
        "json_patch(json_patch(json_object('i', n.i), "
        """CASE n.i % 4 WHEN 0 THEN '{"split":"a"}' WHEN 1 THEN '{"split":"b"}' ELSE '{}' END), """
        f"""CASE WHEN n.i = {n_runs // 2} THEN '{{"needle":1}}' ELSE '{{}}' END)"""
    )


def _annotations_sql(labels: str) -> str:
    # Annotations.model_dump_json's layout (outcome, reference, labels, lineage)
    return f"json_object('outcome', NULL, 'reference', NULL, 'labels', json({labels}), 'lineage', NULL)"


def write_sample(store: SqliteSpanStore, template: list[SpanRecord], n_sample: int) -> dict[str, Any]:
    """``n_sample`` runs through ``write_batch`` (the background writer's call), timed."""
    spent, spans = 0.0, 0
    for first in range(0, n_sample, BATCH_RUNS):
        # no labels in the spans: every run's labels are its annotations (see _relabel_sample)
        batch = [
            s
            for i in range(first, min(first + BATCH_RUNS, n_sample))
            for s in _unlabelled(synthesise(template, i, n_sample))
        ]
        start = time.perf_counter()
        store.write_batch(batch, counters={"store.spans_written": len(batch)})
        spent += time.perf_counter() - start
        spans += len(batch)
    return {"sample_runs": n_sample, "sample_spans": spans, "ingest_spans_per_s": round(spans / spent)}


def copy_runs(path: Path, n_sample: int, n_runs: int, progress: Callable[[str], None] | None = None) -> float:
    """Fill the file up to ``n_runs`` runs by SQL copies of the sample's runs; returns seconds."""
    conn = sqlite3.connect(path, isolation_level=None)
    started = time.perf_counter()
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MB
        sources = [row[0] for row in conn.execute("SELECT run_id FROM runs WHERE is_run = 1 ORDER BY run_id")]
        if len(sources) != n_sample:
            raise RuntimeError(f"expected {n_sample} sample runs in {path}, found {len(sources)}")
        conn.execute(
            "CREATE TEMP TABLE source (k INTEGER PRIMARY KEY, run_id TEXT NOT NULL, base_ns INTEGER)"
        )
        conn.executemany(
            "INSERT INTO source (k, run_id, base_ns) SELECT ?, run_id, started_at_ns FROM runs WHERE run_id = ?",
            list(enumerate(sources)),
        )
        conn.execute("CREATE TEMP TABLE n (i INTEGER PRIMARY KEY)")
        labels = _labels_sql(n_runs)
        for first in range(n_sample, n_runs, CHUNK_RUNS):
            last = min(first + CHUNK_RUNS, n_runs)
            conn.execute("BEGIN")
            conn.execute("DELETE FROM n")
            conn.executemany("INSERT INTO n (i) VALUES (?)", ((i,) for i in range(first, last)))
            new_id = f"printf('%016x%016x', {COPY_PREFIX}, n.i)"
            # shift: run i starts i seconds after the first sample run (as synthesise() spaces them)
            shift = "(n.i * 1000000000 + (SELECT min(base_ns) FROM source) - s.base_ns)"
            conn.execute(
                f"INSERT INTO spans (trace_id, {_SPAN_COPY_COLUMNS}) "
                f"SELECT {new_id}, sp.span_id, sp.parent_span_id, sp.name, sp.kind, "
                f"sp.start_time_ns + {shift}, sp.end_time_ns + {shift}, sp.status_code, sp.status_message, "
                "sp.attributes, sp.events, sp.links, sp.resource, sp.scope, sp.span_type, sp.declared_run, "
                "sp.hop_index, sp.answer_text "
                f"FROM n JOIN source AS s ON s.k = n.i % {n_sample} "
                "JOIN spans AS sp ON sp.trace_id = s.run_id ORDER BY n.i"
            )
            conn.execute(
                f"INSERT INTO runs (run_id, {_RUN_COPY_COLUMNS}, labels, annotations) "
                f"SELECT {new_id}, r.thread_id, r.graph, r.started_at_ns + {shift}, r.ended_at_ns + {shift}, "
                "r.status, r.answer, r.n_hops, r.n_spans, r.has_root, r.is_run, r.outcome, r.reference, "
                f"r.lineage, r.parent_run_id, 1, {labels}, {_annotations_sql(labels)} "
                f"FROM n JOIN source AS s ON s.k = n.i % {n_sample} JOIN runs AS r ON r.run_id = s.run_id "
                "ORDER BY n.i"
            )
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if progress is not None:
                progress(f"{last:,} runs ({time.perf_counter() - started:.0f} s)")
    finally:
        conn.close()
    return time.perf_counter() - started


def _relabel_sample(store: SqliteSpanStore, n_sample: int, n_runs: int) -> None:
    """The sample's runs get the labels of runs 0..n_sample-1 of ``n_runs`` as annotations (their
    spans carry none), so the needle sits in the middle of the whole file."""
    ids = [r.run_id for r in store.list_runs(limit=None)]
    for i, run_id in enumerate(reversed(ids)):  # oldest first: run i
        store.annotate(run_id, labels=run_labels(i, n_runs))


def _ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def _timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def measure(store: SqliteSpanStore, n_runs: int, repeat: int = 30) -> dict[str, Any]:
    """Read figures of a store holding ``n_runs`` runs."""
    out: dict[str, Any] = {}
    # (no thread filter: every copy keeps its sample run's thread id, so a thread holds ~n/2,000
    # runs, not the few a real thread has)
    queries = {**QUERIES, "outcome": {"outcome": "success"}}
    counts: dict[str, int] = {}
    for name, kwargs in queries.items():
        counts[name] = len(store.list_runs(**kwargs))
        out[f"{name}_p50_ms"] = _ms([_timed(partial(store.list_runs, **kwargs)) for _ in range(repeat)])
    out["returned"] = counts
    first_page = store.list_runs()
    cursor, page_times, seen = first_page[-1].run_id, [], len(first_page)
    for _ in range(10):
        start = time.perf_counter()
        page = store.list_runs(after=cursor)
        page_times.append(time.perf_counter() - start)
        if not page:
            break
        seen += len(page)
        cursor = page[-1].run_id
    out["page_p50_ms"] = _ms(page_times)
    out["pages_read"] = seen
    # distinct runs spread over the file, each read once (cache misses)
    ids = [
        row[0]
        for row in store._conn.execute(
            "SELECT run_id FROM runs WHERE rowid IN (" + ", ".join("?" * repeat) + ")",
            [1 + (k * 7919 * 131) % n_runs for k in range(repeat)],
        )
    ]
    out["get_trajectory_p50_ms"] = _ms([_timed(partial(store.get_trajectory, run_id)) for run_id in ids])
    out["get_trajectory_runs"] = len(ids)
    out["plan"] = default_plan(store)
    return out


def run(
    n_runs: int = 1_000_000,
    *,
    workdir: str | os.PathLike[str] | None = None,
    keep: bool = False,
    n_sample: int = SAMPLE_RUNS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    if n_runs < n_sample:
        raise ValueError(f"n_runs must be at least the sample's {n_sample}, got {n_runs}")
    folder = Path(tempfile.mkdtemp(prefix="perf-scale-", dir=workdir))
    path = folder / "scale.db"
    result: dict[str, Any] = {"n_runs": n_runs, "path": str(path), "cpus": os.cpu_count()}
    try:
        template = _unlabelled(template_run())
        result["spans_per_run"] = len(template)
        with SqliteSpanStore(path) as store:
            result.update(write_sample(store, template, n_sample))
            _relabel_sample(store, n_sample, n_runs)
            store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        result["sample_bytes_per_span"] = round(path.stat().st_size / result["sample_spans"])
        result["copy_s"] = round(copy_runs(path, n_sample, n_runs, progress), 1)
        result["file_bytes"] = sum(p.stat().st_size for p in folder.glob("scale.db*"))
        result["file_bytes_per_span"] = round(result["file_bytes"] / (n_runs * len(template)))
        start = time.perf_counter()
        with SqliteSpanStore(path) as store:
            result["open_s"] = round(time.perf_counter() - start, 2)
            stored = store._conn.execute("SELECT count(*) FROM runs WHERE is_run = 1").fetchone()[0]
            result["stored_runs"] = int(stored)
            result["reads"] = measure(store, n_runs)
            last = f"{COPY_PREFIX:016x}{n_runs - 1:016x}"
            if n_runs > n_sample:  # the newest copy, read back through the store
                result["newest_copy_labels"] = store.get_trajectory(last).labels
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return result
