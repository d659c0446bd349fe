"""``python -m benchmarks.perf --out DIR [--quick] [--n N] [--no-before] [--only PART] [--store-runs N]
[--before-ref REF] [--fp-before-ref REF]``

Writes ``DIR/perf.json`` and prints every figure of issue 16's "Measured" list beside the
issue's "today" figure and its target. Parts (each a module of this package):

* ``overhead``: instrumentation overhead per run on graphs (a) and (b), against the raw-span
  floor, OpenInference, with OTLP export + redaction, 30 against 3 hops, and the caller-thread
  time of the store hand-over (:mod:`benchmarks.perf.overhead`);
* ``redaction``: the OTLP content policy per run, this checkout's against ``--before-ref``'s;
* ``store``: the span store at N synthesised runs (default 10,000; ``--quick`` 2,000): ingest,
  bytes per span, listing / filter / ``get_trajectory`` p50s, against git ``HEAD``'s store;
* ``forks``: a fork's fixed cost, ``frozen`` / ``regenerate`` forks against a fresh run;
* ``fp_wall``: ``bench fp --n 80`` (``--quick``: 20) wall time, run as child processes: this
  checkout's default executor, its threads, and ``--fp-before-ref``'s code (the revision issue 16
  timed), with their accuracy figures compared (:mod:`benchmarks.perf.fp_wall`; about 5 minutes);
* ``--store-runs N`` adds ``store_scale``: a store of N runs synthesised inside SQLite from real
  runs (:mod:`benchmarks.perf.scale_store`; 1,000,000 runs is about 26 GB and 10 minutes here),
  its listing / filter / page / ``get_trajectory`` p50s and the ingest rate of its sample; the
  file is deleted afterwards.

Times come from one process, interleaved, medians: on a shared machine trust the ratios.
``perf.json`` keys: one per part (its own figures) and ``summary``: a list of rows ``figure``,
``today`` (the issue's), ``target``, ``now``, ``met`` (None where no target applies).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PARTS = ("overhead", "redaction", "store", "forks", "fp_wall")


def _get(data: dict[str, Any], path: str) -> Any:
    value: Any = data
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


# (figure, today in issue 16, target, path in perf.json, how the target compares: "<=" / ">=")
ROWS: tuple[tuple[str, str, float | None, str, str], ...] = (
    (
        "graph (a): default overhead / raw-span floor",
        "4.1x",
        2.0,
        "overhead.graph_a.variants.ours_sqlite.x_floor",
        "<=",
    ),
    (
        "graph (b): default overhead / raw-span floor",
        "4.6x",
        2.0,
        "overhead.graph_b.variants.ours_sqlite.x_floor",
        "<=",
    ),
    (
        "graph (a): default overhead / OpenInference's",
        "0.62x",
        0.5,
        "overhead.graph_a.variants.ours_sqlite.x_openinference",
        "<=",
    ),
    (
        "graph (b): default overhead / OpenInference's",
        "0.69x",
        0.5,
        "overhead.graph_b.variants.ours_sqlite.x_openinference",
        "<=",
    ),
    (
        "graph (a): with OTLP + redaction / OpenInference's",
        "0.68x",
        1.0,
        "overhead.graph_a.variants.ours_otlp.x_openinference",
        "<=",
    ),
    (
        "graph (b): with OTLP + redaction / OpenInference's",
        "1.15x",
        1.0,
        "overhead.graph_b.variants.ours_otlp.x_openinference",
        "<=",
    ),
    (
        "graph (a): default overhead, ms (run 4.54 ms bare)",
        "+4.38",
        None,
        "overhead.graph_a.variants.ours_sqlite.overhead_ms",
        "",
    ),
    (
        "graph (b): default overhead, ms (run 11.15 ms bare)",
        "+6.57",
        None,
        "overhead.graph_b.variants.ours_sqlite.overhead_ms",
        "",
    ),
    (
        "graph (b): default, background work included, ms",
        "-",
        None,
        "overhead.graph_b.variants.ours_sqlite.drained_ms",
        "",
    ),
    ("default run / bare run at 3 hops", "1.69x", None, "overhead.growth.ratio_to_bare_3_hops", ""),
    ("default run / bare run at 30 hops", "2.39x", None, "overhead.growth.ratio_to_bare_30_hops", ""),
    ("that ratio at 30 hops / at 3 hops", "1.41", 1.0, "overhead.growth.ratio_30_over_3", "<="),
    ("stored bytes, 30 hops / 3 hops", "109x", None, "overhead.growth.bytes_30_over_3", ""),
    ("caller-thread store write p99, ms", "27-33", 1.0, "overhead.graph_b.caller_store_write_ms.p99", "<="),
    (
        "redaction per run, 3 hops, ms (before in-process)",
        "5.46",
        None,
        "redaction.hops_3.after_ms_per_run",
        "",
    ),
    (
        "redaction speedup at 3 hops, now / before-ref",
        "4.4 (pre-checks)",
        None,
        "redaction.hops_3.speedup",
        "",
    ),
    ("redaction speedup at 30 hops, now / before-ref", "-", None, "redaction.hops_30.speedup", ""),
    ("store ingest, spans/s", "7,311", 15000.0, "store.after.ingest_spans_per_s", ">="),
    ("store ingest, now / before-ref in-process", "-", None, "store.speedup.ingest", ""),
    ("store bytes per span", "3,435", 1000.0, "store.after.bytes_per_span", "<="),
    ("list_runs() p50, ms", "22.5 (10k)", 5.0, "store.after.list_runs_p50_ms", "<="),
    ("label filter 25 % p50, ms", "65 (10k)", 5.0, "store.after.label_25pct_p50_ms", "<="),
    ("label filter 1 match p50, ms", "189 (10k)", 5.0, "store.after.label_1match_p50_ms", "<="),
    ("get_trajectory p50, ms (cache misses)", "~8", 3.0, "store.after.get_trajectory_p50_ms", "<="),
    (
        "store at --store-runs: ingest of its sample, spans/s",
        "7,311",
        15000.0,
        "store_scale.ingest_spans_per_s",
        ">=",
    ),
    (
        "store at --store-runs: list_runs() p50, ms",
        "22.5 (10k)",
        5.0,
        "store_scale.reads.list_runs_p50_ms",
        "<=",
    ),
    (
        "store at --store-runs: label filter 25 % p50, ms",
        "65 (10k)",
        5.0,
        "store_scale.reads.label_25pct_p50_ms",
        "<=",
    ),
    (
        "store at --store-runs: label filter 1 match p50, ms",
        "189 (10k)",
        5.0,
        "store_scale.reads.label_1match_p50_ms",
        "<=",
    ),
    ("store at --store-runs: label key filter p50, ms", "-", 5.0, "store_scale.reads.label_key_p50_ms", "<="),
    ("store at --store-runs: outcome filter p50, ms", "-", 5.0, "store_scale.reads.outcome_p50_ms", "<="),
    ("store at --store-runs: keyset page p50, ms", "-", 5.0, "store_scale.reads.page_p50_ms", "<="),
    (
        "store at --store-runs: get_trajectory p50, ms",
        "~8",
        3.0,
        "store_scale.reads.get_trajectory_p50_ms",
        "<=",
    ),
    (
        "store at --store-runs: bytes per span (file)",
        "3,435",
        1000.0,
        "store_scale.file_bytes_per_span",
        "<=",
    ),
    ("fork fixed cost, ms (replay fork: nothing runs)", "~20", 3.0, "forks.after.fork_fixed_cost_ms", "<="),
    ("frozen fork at hop 1 / fresh run", "1.10x", 0.3, "forks.after.frozen_hop1_x_fresh", "<="),
    ("regenerate fork at hop 1 / fresh run", "1.52x", 1.1, "forks.after.regenerate_hop1_x_fresh", "<="),
    (
        "fork fixed cost, ms, until its spans are written",
        "-",
        None,
        "forks.after.fork_fixed_cost_drained_ms",
        "",
    ),
    (
        "frozen fork at hop 1 / fresh run, spans written",
        "-",
        None,
        "forks.after.frozen_hop1_drained_x_fresh",
        "",
    ),
    (
        "regenerate fork at hop 1 / fresh run, spans written",
        "-",
        None,
        "forks.after.regenerate_hop1_drained_x_fresh",
        "",
    ),
    (
        "frozen fork at hop 1, Replayer.frozen_direct / fresh run",
        "-",
        0.3,
        "forks.after.frozen_hop1_direct_x_fresh",
        "<=",
    ),
    ("frozen fork at hop 1, frozen_direct / loop", "-", None, "forks.after.frozen_direct_vs_loop", ""),
    ("reading a fork again, ms", "-", None, "forks.after.read_fork_ms", ""),
    ("bench fp wall time, s (default executor)", "-", None, "fp_wall.runs.auto.wall_s", ""),
    ("bench fp wall time, s (--executor local: threads)", "-", None, "fp_wall.runs.local.wall_s", ""),
    ("bench fp wall time, s (--fp-before-ref's code)", "-", None, "fp_wall.runs.before.wall_s", ""),
    ("bench fp wall time, now / --fp-before-ref's", "-", 0.5, "fp_wall.auto_over_before", "<="),
    # the same figures for --before-ref's code, measured in the same process (when it loads)
    (
        "before-ref: graph (a) default overhead / floor",
        "4.1x",
        None,
        "overhead.graph_a.variants.before_sqlite.x_floor",
        "",
    ),
    (
        "before-ref: graph (b) default overhead / floor",
        "4.6x",
        None,
        "overhead.graph_b.variants.before_sqlite.x_floor",
        "",
    ),
    (
        "before-ref: graph (b) OTLP + redaction / OpenInference's",
        "1.15x",
        None,
        "overhead.graph_b.variants.before_otlp.x_openinference",
        "",
    ),
    (
        "before-ref: graph (b) default, background work included, ms",
        "-",
        None,
        "overhead.graph_b.variants.before_sqlite.drained_ms",
        "",
    ),
    (
        "before-ref: graph (b) OTLP, background work included, ms",
        "-",
        None,
        "overhead.graph_b.variants.before_otlp.drained_ms",
        "",
    ),
    (
        "graph (b): OTLP, background work included, ms",
        "-",
        None,
        "overhead.graph_b.variants.ours_otlp.drained_ms",
        "",
    ),
    ("before-ref: ratio at 30 hops / at 3 hops", "1.41", None, "overhead.growth.before_ratio_30_over_3", ""),
    ("stored bytes per run, 3 hops", "-", None, "overhead.growth.bytes_per_run_3_hops", ""),
    (
        "before-ref: stored bytes per run, 3 hops",
        "-",
        None,
        "overhead.growth.before_bytes_per_run_3_hops",
        "",
    ),
    ("stored bytes per run, 30 hops", "-", None, "overhead.growth.bytes_per_run_30_hops", ""),
    (
        "before-ref: stored bytes per run, 30 hops",
        "-",
        None,
        "overhead.growth.before_bytes_per_run_30_hops",
        "",
    ),
    ("before-ref: redaction per run, 3 hops, ms", "5.46", None, "redaction.hops_3.before_ms_per_run", ""),
    ("before-ref: store ingest, spans/s", "7,311", None, "store.before.ingest_spans_per_s", ""),
    ("before-ref: store bytes per span", "3,435", None, "store.before.bytes_per_span", ""),
    ("before-ref: get_trajectory p50, ms", "~8", None, "store.before.get_trajectory_p50_ms", ""),
    ("before-ref: fork fixed cost, ms", "~20", None, "forks.before.fork_fixed_cost_ms", ""),
    ("before-ref: frozen fork at hop 1 / fresh run", "1.10x", None, "forks.before.frozen_hop1_x_fresh", ""),
    (
        "before-ref: regenerate fork at hop 1 / fresh run",
        "1.52x",
        None,
        "forks.before.regenerate_hop1_x_fresh",
        "",
    ),
    ("before-ref: reading a fork again, ms", "-", None, "forks.before.read_fork_ms", ""),
)


def summary(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for figure, today, target, path, how in ROWS:
        if path.startswith("store_scale.") and "store_scale" not in result:
            continue  # measured only with --store-runs
        now = _get(result, path)
        met = None
        if target is not None and isinstance(now, int | float):
            met = now <= target if how == "<=" else now >= target
        rows.append({"figure": figure, "today": today, "target": target, "now": now, "met": met})
    scale_runs = _get(result, "store_scale.n_runs")
    if scale_runs:
        rows.append(
            {
                "figure": f"'store at --store-runs' figures are at {scale_runs:,} runs (copied in SQL from "
                f"{_get(result, 'store_scale.sample_runs'):,} runs written through write_batch)",
                "today": "-",
                "target": None,
                "now": scale_runs,
                "met": None,
            }
        )
    n_runs = _get(result, "store.n_runs")
    if n_runs:
        rows.append(
            {
                "figure": f"store figures above are at {n_runs:,} runs; the issue's targets are for 1M "
                "(listing and filters read indexes with the LIMIT in SQL: O(log N) per page)",
                "today": "-",
                "target": None,
                "now": n_runs,
                "met": None,
            }
        )
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    width = max(len(r["figure"]) for r in rows)
    print(f"{'figure':<{width}}  {'today':>11}  {'target':>8}  {'now':>10}  met")
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']:g}"
        now = (
            "-"
            if r["now"] is None
            else f"{r['now']:g}"
            if isinstance(r["now"], int | float)
            else str(r["now"])
        )
        met = "" if r["met"] is None else ("yes" if r["met"] else "NO")
        print(f"{r['figure']:<{width}}  {r['today']:>11}  {target:>8}  {now:>10}  {met}")


def _known_revision(ref: str) -> bool:
    """Whether ``ref`` names a commit here (True outside a git checkout: there is no 'before')."""
    root = Path(__file__).resolve().parents[2]
    try:
        inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True, check=False)
        if inside.returncode != 0:
            return True
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except OSError:
        return True
    return found.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[1])
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for perf.json")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and runs (about 2 minutes)")
    parser.add_argument("--n", type=int, default=None, help="runs in the synthesised store (default 10000)")
    parser.add_argument(
        "--store-runs",
        type=int,
        default=None,
        metavar="N",
        help="also measure a store of N runs synthesised in SQLite (1000000: ~26 GB, ~10 min; deleted after)",
    )
    parser.add_argument(
        "--store-dir", default=None, metavar="DIR", help="folder for the --store-runs file (default: temp)"
    )
    parser.add_argument("--no-before", action="store_true", help="skip git HEAD's store in the store part")
    parser.add_argument(
        "--only", choices=(*PARTS, "store_scale"), action="append", help="only this part (repeatable)"
    )
    parser.add_argument(
        "--before-ref",
        default="HEAD",
        metavar="REF",
        help="git revision whose store, redactor and fork path are the in-process 'before' (default HEAD)",
    )
    parser.add_argument(
        "--fp-before-ref",
        default=None,
        metavar="REF",
        help="git revision whose bench fp the fp_wall part times beside this checkout's "
        "(default 7e0c7d2, the revision issue 16 measured; 'none' to skip it)",
    )
    args = parser.parse_args(argv)
    n_runs = args.n if args.n is not None else (2_000 if args.quick else 10_000)
    if n_runs < 10:
        print(f"error: --n must be at least 10, got {n_runs}", file=sys.stderr)
        return 2
    if args.only and "store_scale" in args.only and args.store_runs is None:
        print("error: --only store_scale needs --store-runs N", file=sys.stderr)
        return 2
    if args.store_runs is not None and args.store_runs < 2_000:
        print(
            f"error: --store-runs must be at least 2000 (its sample), got {args.store_runs}", file=sys.stderr
        )
        return 2
    if not _known_revision(args.before_ref):
        print(
            f"error: --before-ref {args.before_ref!r} is not a git revision of this checkout", file=sys.stderr
        )
        return 2
    from .fp_wall import ISSUE_REVISION

    fp_before = args.fp_before_ref or ISSUE_REVISION
    if fp_before.lower() == "none":
        fp_before = ""
    elif args.fp_before_ref and not _known_revision(fp_before):
        print(f"error: --fp-before-ref {fp_before!r} is not a git revision of this checkout", file=sys.stderr)
        return 2
    elif not _known_revision(fp_before):
        fp_before = ""  # a shallow clone without the issue's revision: no 'before' run
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot create --out folder {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from . import forks, fp_wall, overhead, redaction, scale_store, store

    result: dict[str, Any] = {"cpus": os.cpu_count(), "quick": args.quick}
    for part in [p for p in args.only or PARTS if p in PARTS]:
        print(f"running {part} ...", file=sys.stderr)
        if part == "store":
            result["store"] = store.run(
                n_runs, before=not args.no_before, workdir=out, before_ref=args.before_ref
            )
        elif part == "overhead":
            result[part] = overhead.run(quick=args.quick, before_ref=args.before_ref)
        elif part == "fp_wall":
            result[part] = fp_wall.run(quick=args.quick, before_ref=fp_before or None)
        else:
            module = {"redaction": redaction, "forks": forks}[part]
            result[part] = module.run(quick=args.quick, before_ref=args.before_ref)
    if args.store_runs is not None:
        print(f"running store_scale ({args.store_runs:,} runs) ...", file=sys.stderr)
        result["store_scale"] = scale_store.run(
            args.store_runs,
            workdir=args.store_dir,
            progress=lambda message: print(f"  {message}", file=sys.stderr),
        )
    result["summary"] = summary(result)
    path = out / "perf.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    _print(result["summary"])
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
