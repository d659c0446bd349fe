"""``causal-mw bench replay``: fork + suffix vs a full re-run on the reference agent, per fork hop."""

from __future__ import annotations

import argparse
import json
from typing import Any

from causal_middleware.cli._common import add_json_arg, print_json
from causal_middleware.cli.replay import MODES


def register_bench(bench_subparsers: Any) -> None:
    """Add ``replay`` to the ``causal-mw bench`` group (fork + suffix vs a full re-run, per fork hop)."""
    p = bench_subparsers.add_parser(
        "replay",
        help="fork + suffix vs full re-run on the reference agent: node executions and wall time, per fork hop",
    )
    p.add_argument("--questions", type=int, default=5, help="generated questions (runs) to fork (default 5)")
    p.add_argument("--hops", type=int, default=3, help="hops per generated question (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="suffix modes to measure")
    p.add_argument(
        "--model-latency",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="sleep added to every model call, standing in for a hosted model (default 0)",
    )
    p.add_argument("--out", metavar="DIR", help="write replay.json and replay.md here")
    add_json_arg(p)
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from benchmarks.suites.replay import format_replay_table
    from benchmarks.suites.replay_bench import reference_replay_bench
    from causal_middleware.output_paths import check_output_dir

    if args.questions < 1 or args.hops < 1:
        raise ValueError(f"--questions and --hops must be positive, got {args.questions} and {args.hops}")
    if args.out:
        check_output_dir(args.out, "the --out folder")  # before minutes of benchmarking
    report = reference_replay_bench(
        n_questions=args.questions,
        hops=args.hops,
        seed=args.seed,
        modes=tuple(args.modes),
        model_latency_s=args.model_latency,
    )
    table = format_replay_table(report)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "replay.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        setup = ", ".join(f"{k}={v}" for k, v in report["setup"].items())
        (out / "replay.md").write_text(f"# Replay: fork + suffix vs full re-run\n\n{setup}\n\n{table}\n")
    if args.json:
        print_json({k: v for k, v in report.items() if k != "runs"})
    else:
        print(table)
    return 0
