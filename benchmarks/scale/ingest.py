"""Store ingest from several writer processes, and reads at scale.

Runs are synthesised from one real recorded run (:func:`benchmarks.perf.store.template_run`: the
reference agent, offline model) exactly as the store perf suite does, and written through
``write_batch`` in batches of :data:`benchmarks.perf.store.BATCH_RUNS` runs, which is what the
background writer of an instrumented agent hands its store. Each writer process synthesises its
next batch outside the timed section; ``busy_s`` is its time inside ``write_batch``.
"""

from __future__ import annotations

import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.perf.store import BATCH_RUNS, synthesise
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import SpanStore
from causal_middleware.store.open import open_store


def _write_runs(
    target: str, template: list[SpanRecord], first: int, count: int, n_total: int, start: Any
) -> dict[str, float]:
    """Write runs ``first .. first+count`` into ``target``; busy seconds, wall start/end, spans."""
    store = open_store(target)
    start.wait()
    began, busy, spans = time.time(), 0.0, 0
    try:
        for lo in range(first, first + count, BATCH_RUNS):
            batch = [
                s
                for i in range(lo, min(lo + BATCH_RUNS, first + count))
                for s in synthesise(template, i, n_total)
            ]
            t = time.perf_counter()
            store.write_batch(batch, counters={"store.spans_written": len(batch)})
            busy += time.perf_counter() - t
            spans += len(batch)
    finally:
        store.close()
    return {"began": began, "ended": time.time(), "busy_s": busy, "spans": spans}


def _child(args: tuple[Any, ...]) -> dict[str, float]:
    return _write_runs(*args)


def ingest(
    target: str, template: list[SpanRecord], n_runs: int, writers: int, *, offset: int = 0
) -> dict[str, Any]:
    """``n_runs`` runs written by ``writers`` processes at once into ``target`` (run ids from
    ``offset`` on, so several calls fill one store)."""
    ctx = multiprocessing.get_context("spawn")
    share = [n_runs // writers + (1 if w < n_runs % writers else 0) for w in range(writers)]
    firsts = [offset + sum(share[:w]) for w in range(writers)]
    with ctx.Manager() as manager:
        start = manager.Barrier(writers)
        with ctx.Pool(writers) as pool:
            results = pool.map(
                _child,
                [(target, template, firsts[w], share[w], offset + n_runs, start) for w in range(writers)],
            )
    spans = int(sum(r["spans"] for r in results))
    wall = max(r["ended"] for r in results) - min(r["began"] for r in results)
    return {
        "writers": writers,
        "runs": n_runs,
        "spans": spans,
        "wall_s": round(wall, 3),
        "spans_per_s": round(spans / wall),
        "busy_spans_per_s": round(spans / max(r["busy_s"] for r in results)),
    }


def _p50_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def reads(store: SpanStore, repeat: int) -> dict[str, Any]:
    """p50 of the listing (100 newest), a 25 % label filter, a 1-run label filter, pages 2..11 of
    100 by keyset, and ``get_trajectory`` of distinct runs (cache misses)."""
    out: dict[str, Any] = {}
    queries: dict[str, dict[str, Any]] = {
        "list_runs": {},
        "label_25pct": {"label": "split=a"},
        "label_1match": {"label": "needle=1"},
    }
    for name, kwargs in queries.items():
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            store.list_runs(**kwargs)
            times.append(time.perf_counter() - t)
        out[f"{name}_p50_ms"] = _p50_ms(times)
    first_page = store.list_runs()
    times, after = [], first_page[-1].run_id
    for _ in range(10):
        t = time.perf_counter()
        page = store.list_runs(after=after)
        times.append(time.perf_counter() - t)
        if not page:
            break
        after = page[-1].run_id
    out["page_p50_ms"] = _p50_ms(times)
    run_ids = [r.run_id for r in store.list_runs(limit=1000)][:: max(1, 1000 // repeat)][:repeat]
    times = []
    for run_id in run_ids:
        t = time.perf_counter()
        store.get_trajectory(run_id)
        times.append(time.perf_counter() - t)
    out["get_trajectory_p50_ms"] = _p50_ms(times)
    return out


def sqlite_target() -> str:
    return str(Path(tempfile.mkdtemp(prefix="causal-scale-")) / "runs.db")
