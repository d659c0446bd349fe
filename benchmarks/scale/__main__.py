"""``python -m benchmarks.scale --out DIR [--quick] [--postgres URL] [--read-runs N]``

Writes ``DIR/scale.json``:

* ``ingest``: ``sqlite_1_writer`` and ``postgres_{1,2,4}_writers``, each ``writers``, ``runs``,
  ``spans``, ``wall_s``, ``spans_per_s`` (spans / wall seconds, all writers together) and
  ``busy_spans_per_s`` (spans / the longest writer's seconds inside ``write_batch``);
  ``postgres_4_vs_sqlite``: the ratio of ``spans_per_s``.
* ``reads``: ``runs`` (the store size), then per backend (``postgres``, ``sqlite``)
  ``list_runs_p50_ms`` (100 newest), ``label_25pct_p50_ms``, ``label_1match_p50_ms``,
  ``page_p50_ms`` (keyset pages 2..11) and ``get_trajectory_p50_ms`` (distinct runs), plus
  ``fill_s``: seconds to fill it (Postgres: 4 writers; SQLite: 1).
* ``queue``: ``workers_1`` / ``workers_2`` (:mod:`benchmarks.scale.queue`) and ``ratio_2_vs_1``.
* ``machine``: CPU count; ``mode``: quick or full; ``seconds``: the whole benchmark.

Quick mode (under a minute) uses small sizes; the figures are for a smoke check, not capacity.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SIZES = {
    "quick": {"ingest_runs": 160, "read_runs": 400, "queue_runs": 4, "repeat": 10},
    "full": {"ingest_runs": 1600, "read_runs": 20_000, "queue_runs": 24, "repeat": 30},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for scale.json")
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument(
        "--postgres", metavar="URL", help="an existing server (default: start a throwaway one)"
    )
    parser.add_argument("--read-runs", type=int, metavar="N", help="runs in the store the reads are timed on")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    sizes = dict(SIZES[mode])
    if args.read_runs is not None:
        if args.read_runs < 200:
            parser.error(f"--read-runs must be at least 200, got {args.read_runs}")
        sizes["read_runs"] = args.read_runs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    from benchmarks.scale.server import postgres

    with postgres(args.postgres) as url:
        results: dict[str, Any] = {"mode": mode, "machine": {"cpus": os.cpu_count()}, "sizes": sizes}
        results["ingest"] = _ingest(url, sizes)
        results["reads"] = _reads(url, sizes)
        results["queue"] = _queue(url, sizes)
    results["seconds"] = round(time.perf_counter() - started, 1)
    path = out / "scale.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: results[k] for k in ("ingest", "queue", "seconds")}, indent=2))
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _schema_url(url: str, name: str) -> str:
    return f"{url}?causal_schema=scale_{name}_{os.getpid()}"


def _ingest(url: str, sizes: dict[str, int]) -> dict[str, Any]:
    from benchmarks.perf.store import template_run
    from benchmarks.scale.ingest import ingest, sqlite_target

    template = template_run()
    n = sizes["ingest_runs"]
    out: dict[str, Any] = {"sqlite_1_writer": ingest(sqlite_target(), template, n, 1)}
    for writers in (1, 2, 4):
        out[f"postgres_{writers}_writers"] = ingest(
            _schema_url(url, f"ingest{writers}"), template, n, writers
        )
    out["postgres_4_vs_sqlite"] = round(
        out["postgres_4_writers"]["spans_per_s"] / out["sqlite_1_writer"]["spans_per_s"], 2
    )
    return out


def _reads(url: str, sizes: dict[str, int]) -> dict[str, Any]:
    from benchmarks.perf.store import template_run
    from benchmarks.scale.ingest import ingest, reads, sqlite_target
    from causal_middleware.store.open import open_store

    template = template_run()
    n = sizes["read_runs"]
    out: dict[str, Any] = {"runs": n}
    for backend, target, writers in (
        ("postgres", _schema_url(url, "reads"), 4),
        ("sqlite", sqlite_target(), 1),
    ):
        filled = ingest(target, template, n, writers)
        store = open_store(target, create=False)
        try:
            assert len(store.list_runs(limit=None)) == n, f"{backend} lost runs"
            out[backend] = {**reads(store, sizes["repeat"]), "fill_s": filled["wall_s"]}
        finally:
            store.close()
    return out


def _queue(url: str, sizes: dict[str, int]) -> dict[str, Any]:
    from benchmarks.scale.queue import drain, record_failed_runs

    out: dict[str, Any] = {}
    for workers in (1, 2):
        target = _schema_url(url, f"queue{workers}")
        record_failed_runs(target, url, sizes["queue_runs"])
        out[f"workers_{workers}"] = drain(target, url, workers)
    out["ratio_2_vs_1"] = round(out["workers_2"]["repairs_per_min"] / out["workers_1"]["repairs_per_min"], 2)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
