"""The span store at scale: N runs synthesised from one real recorded run, written and read back.

``run(n_runs) -> dict`` records one run of the reference agent (offline model, generated world),
copies its spans into ``n_runs`` runs (new trace ids, start times one second apart, labels:
``split=a`` on every fourth run, ``needle=1`` on one), writes them through ``write_batch`` in
batches of :data:`BATCH_RUNS` runs (what the background writer hands the store), and measures:

* ``ingest_spans_per_s``: spans / seconds inside ``write_batch``;
* ``bytes_per_span``: the file (after a WAL checkpoint) / spans;
* ``list_runs_p50_ms``: ``list_runs()`` (the default 100 newest); ``list_runs_all_ms``:
  ``list_runs(limit=None)`` once;
* ``label_25pct_p50_ms`` / ``label_1match_p50_ms``: ``list_runs(label=...)`` matching 25 % of the
  runs / one run; ``label_key_p50_ms``: a key-only filter (25 %);
* ``page_p50_ms``: ``list_runs(after=...)``, pages 2..11 of 100;
* ``get_trajectory_p50_ms``: distinct runs (cache misses);
* ``plan``: EXPLAIN QUERY PLAN of the default listing.

``before`` repeats it with the store of git ``HEAD`` (``git show HEAD:causal_middleware/store/
sqlite.py``) on its own file, which the current store then opens (``migrate_s``: bringing that
old file forward, backfilling the label index) and lists again: ``same_answers`` says whether old
and new code return identical listings for every query.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

from .redaction import STORE_COMPANIONS, head_module

BATCH_RUNS = 8
BASE_NS = 1_750_000_000_000_000_000
QUERIES: dict[str, dict[str, Any]] = {
    "list_runs": {},
    "label_25pct": {"label": "split=a"},
    "label_1match": {"label": "needle=1"},
    "label_key": {"label": "split"},
}


def template_run() -> list[SpanRecord]:
    """The spans of one real run: the reference agent on a small generated world (offline model)."""
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.world.generator import generate_world

    world = generate_world(4, seed=0)
    store = InMemorySpanStore()
    env = reference_sweep_environment(world, store=store, seed=0)
    try:
        run_ids = [env.run_base(q) for q in world.questions]
        spans = [store.get_spans(run_id) for run_id in run_ids]
    finally:
        env.close()
    return max(spans, key=len)  # the longest of the few (multi-hop) runs


def run_labels(i: int, n_runs: int) -> dict[str, Any]:
    """Run ``i``'s labels: ``i``, ``split=a`` on every fourth run, ``split=b`` on the next,
    ``needle=1`` on the run in the middle."""
    labels: dict[str, Any] = {"i": i}
    if i % 4 == 0:
        labels["split"] = "a"
    elif i % 4 == 1:
        labels["split"] = "b"
    if i == n_runs // 2:
        labels["needle"] = 1
    return labels


def synthesise(template: list[SpanRecord], i: int, n_runs: int) -> list[SpanRecord]:
    """Run ``i`` of ``n_runs``: the template's spans under a new trace id, started ``i`` seconds
    after :data:`BASE_NS`, with its labels."""
    trace_id = f"{(i + 1) * 0x9E3779B97F4A7C15 % (1 << 128):032x}"
    first = min(s.start_time_ns for s in template)
    shift = BASE_NS + i * 1_000_000_000 - first
    labels = run_labels(i, n_runs)
    out = []
    for span in template:
        update: dict[str, Any] = {
            "trace_id": trace_id,
            "start_time_ns": span.start_time_ns + shift,
            "end_time_ns": span.end_time_ns + shift if span.end_time_ns is not None else None,
        }
        if span.parent_span_id is None:
            update["attributes"] = {**span.attributes, A.CAUSAL_RUN_LABELS: json.dumps(labels)}
        out.append(span.model_copy(update=update))
    return out


def _timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def ingest(stores: dict[str, Any], template: list[SpanRecord], n_runs: int) -> dict[str, dict[str, Any]]:
    """The same batches written to every store, interleaved batch by batch (fair on a busy machine)."""
    spent = dict.fromkeys(stores, 0.0)
    spans = 0
    for first in range(0, n_runs, BATCH_RUNS):
        batch = [
            s for i in range(first, min(first + BATCH_RUNS, n_runs)) for s in synthesise(template, i, n_runs)
        ]
        for name, store in stores.items():
            spent[name] += _timed(
                partial(store.write_batch, batch, counters={"store.spans_written": len(batch)})
            )
        spans += len(batch)
    return {
        name: {
            "spans": spans,
            "spans_per_run": round(spans / n_runs, 1),
            "ingest_spans_per_s": round(spans / spent[name]),
        }
        for name in stores
    }


def reads(
    stores: dict[str, Any], repeat: int = 30
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list[str]]]]:
    """Read figures per store (each query timed on the stores in turn), and the run ids each query
    returned (to compare code versions)."""
    out: dict[str, dict[str, Any]] = {name: {} for name in stores}
    answers: dict[str, dict[str, list[str]]] = {name: {} for name in stores}
    for query, kwargs in QUERIES.items():
        times: dict[str, list[float]] = {name: [] for name in stores}
        for name, store in stores.items():
            answers[name][query] = [r.run_id for r in store.list_runs(**kwargs)]
        for _ in range(repeat):
            for name, store in stores.items():
                times[name].append(_timed(partial(store.list_runs, **kwargs)))
        for name in stores:
            out[name][f"{query}_p50_ms"] = _ms(times[name])
    for name, store in stores.items():
        start = time.perf_counter()
        everything = store.list_runs(limit=None)
        out[name]["list_runs_all_ms"] = round((time.perf_counter() - start) * 1000, 1)
        answers[name]["all"] = [r.run_id for r in everything]
    for name, store in stores.items():
        if "after" not in _parameters(store.list_runs):
            continue
        pages: list[str] = []
        cursor = answers[name]["list_runs"][-1]
        page_times = []
        for _ in range(10):
            start = time.perf_counter()
            page = store.list_runs(after=cursor)
            page_times.append(time.perf_counter() - start)
            pages += [r.run_id for r in page]
            if not page:
                break
            cursor = page[-1].run_id
        out[name]["page_p50_ms"] = _ms(page_times)
        out[name]["pages_match_listing"] = pages == answers[name]["all"][100:1100]
    ids = next(iter(answers.values()))["all"]
    picks = [ids[(k * 7919) % len(ids)] for k in range(min(repeat, len(ids)))]
    trajectory_times: dict[str, list[float]] = {name: [] for name in stores}
    for store in stores.values():  # every pick read from the file, the newest run included
        getattr(store, "_written", {}).clear()
    for run_id in picks:
        for name, store in stores.items():
            trajectory_times[name].append(_timed(partial(store.get_trajectory, run_id)))
    for name in stores:
        out[name]["get_trajectory_p50_ms"] = _ms(trajectory_times[name])
    return out, answers


def _parameters(function: Callable[..., Any]) -> set[str]:
    import inspect

    return set(inspect.signature(function).parameters)


def file_bytes(store: Any, path: Path) -> int:
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def default_plan(store: Any) -> list[str]:
    """EXPLAIN QUERY PLAN of the statement ``list_runs()`` runs (caught with a trace callback)."""
    seen: list[str] = []
    # reads have their own connection since the reader/writer split; older stores read on _conn
    read = getattr(store, "_read", None)
    with read("tracing the listing") if read is not None else nullcontext(store._conn) as conn:
        conn.set_trace_callback(seen.append)
        try:
            store.list_runs()
        finally:
            conn.set_trace_callback(None)
        listing = [q for q in seen if q.lstrip().upper().startswith("SELECT") and "FROM RUNS" in q.upper()]
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + listing[-1])]


def head_store_module(ref: str = "HEAD") -> ModuleType | None:
    """The SQLite store of git ``ref`` (with its cache helpers) as a module of its own, or None
    outside a git checkout."""
    return head_module(
        "causal_middleware/store/sqlite.py",
        "causal_middleware.store._sqlite_head",
        ref,
        companions=STORE_COMPANIONS,
    )


def run(
    n_runs: int = 10_000,
    *,
    before: bool = True,
    workdir: str | os.PathLike[str] | None = None,
    before_ref: str = "HEAD",
) -> dict[str, Any]:
    template = template_run()
    folder = Path(tempfile.mkdtemp(prefix="perf-store-", dir=workdir))
    head = head_store_module(before_ref) if before else None
    paths = {"after": folder / "after.db", "before": folder / "before.db"}
    stores: dict[str, Any] = {"after": SqliteSpanStore(paths["after"])}
    if head is not None:
        stores["before"] = head.SqliteSpanStore(paths["before"])
    result: dict[str, Any] = {
        "n_runs": n_runs,
        "batch_runs": BATCH_RUNS,
        "cpus": os.cpu_count(),
        "before_ref": before_ref if head is not None else None,
    }
    try:
        figures = ingest(stores, template, n_runs)
        for name, store in stores.items():
            figures[name]["bytes_per_span"] = round(file_bytes(store, paths[name]) / figures[name]["spans"])
        read_figures, answers = reads(stores)
        for name, store in stores.items():
            figures[name].update(read_figures[name])
            figures[name]["plan"] = default_plan(store)
            store.close()
        result.update(figures)
        if head is not None:
            old, new = figures["before"], figures["after"]
            start = time.perf_counter()
            migrated = SqliteSpanStore(paths["before"])  # the old file brought forward
            result["migrate_s"] = round(time.perf_counter() - start, 2)
            try:
                _, migrated_answers = reads({"migrated": migrated}, repeat=1)
            finally:
                migrated.close()
            result["same_answers"] = all(
                answers["before"][k] == answers["after"][k] == migrated_answers["migrated"][k]
                for k in answers["before"]
            )
            result["speedup"] = {
                key: round(old[key] / new[key], 1)
                for key in new
                if key.endswith("_ms") and key in old and new[key]
            }
            result["speedup"]["ingest"] = round(new["ingest_spans_per_s"] / old["ingest_spans_per_s"], 2)
    finally:
        for store in stores.values():
            try:
                store.close()
            except Exception:  # noqa: BLE001 - already closed
                pass
        shutil.rmtree(folder, ignore_errors=True)
    return result
