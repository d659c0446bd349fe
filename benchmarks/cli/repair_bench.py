"""``causal-mw bench repair``: CausalFlow repair of the default world's natural and injected failures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.cli.executor import add_executor_args, check_executor_args
from causal_middleware.cli._common import add_json_arg, print_json


def register_bench(bench_subparsers: Any) -> None:
    """Add ``bench repair`` to the ``causal-mw bench`` group."""
    p = bench_subparsers.add_parser(
        "repair",
        help="CausalFlow repair of the default world's natural and injected failures",
        description="Writes results.json with n_failed, repair_rate, post_repair_accuracy, minimality_mean, "
        "crs_precision, reexec_per_repaired, naive_reexec_per_repaired (also under natural and injected).",
    )
    p.add_argument(
        "--out", required=True, metavar="PATH", help="results.json to write (a directory: PATH/repair.json)"
    )
    p.add_argument("--n", type=int, default=100, help="questions of the default world (default 100)")
    p.add_argument("--seed", type=int, default=0, help="world, model and fault seed (default 0)")
    p.add_argument(
        "--hops",
        type=int,
        metavar="H",
        help="hops per question, as bench fp's --hops (default: the world's mix of 2 to 4 hops)",
    )
    p.add_argument(
        "--inject-questions", type=int, default=20, help="questions faults are injected into (default 20)"
    )
    p.add_argument(
        "--max-injected", type=int, default=40, help="injected failures repaired at most (default 40)"
    )
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2], help="fault depths (default 1 2)")
    p.add_argument("--families", nargs="+", help="fault families (default: all seven)")
    p.add_argument("--k", type=int, default=3, help="proposals per candidate step (default 3)")
    p.add_argument(
        "--max-steps",
        type=int,
        choices=(1, 2),
        default=1,
        help="steps a repair may change: 1 (default, CausalFlow) or 2 (a second step searched on the "
        "first step's forks when no single step's change holds)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature in [0, 1] of the model driving the agent (the offline model, or a "
        "--model: each call then draws a fresh seed, so the validation's re-runs are fresh samples; "
        "default 0: deterministic re-runs)",
    )
    p.add_argument(
        "--holdout-runs",
        type=int,
        default=0,
        metavar="N",
        help="re-run each kept repair N more times after it is kept (fresh draws with --temperature) "
        "and report how often it still flips (validation.holdout; default 0: none)",
    )
    p.add_argument(
        "--control-runs",
        type=int,
        default=0,
        metavar="N",
        help="re-run the run each kept repair changed N times from the same step without the repair "
        "and report how often it answers right anyway (validation.control; default 0: none)",
    )
    p.add_argument(
        "--model",
        metavar="SPEC",
        default="offline",
        help="the chat model driving the agent (as bench fp: offline, local[:NAME], gguf:PATH, "
        "anthropic[:MODEL], package.module:attr; replies capped at 64 tokens)",
    )
    p.add_argument(
        "--plan",
        choices=("model", "gold"),
        default="model",
        help="who plans the searches: the model (default) or the gold decomposition (plan-and-execute)",
    )
    p.add_argument(
        "--proposer",
        metavar="SPEC",
        default="offline",
        help="who proposes the repairs: offline (default: the deterministic proposer) or a chat model "
        "(as --model) driving the LLM proposer, sampled at temperature 0.7",
    )
    p.add_argument(
        "--validator",
        metavar="SPEC",
        help="a chat model (as --model) for CausalFlow's proposer / critic / meta-critic validation of "
        "each re-validated repair (default: none, re-execution only)",
    )
    p.add_argument(
        "--store",
        metavar="PATH",
        help="a new SQLite span store to keep every run the benchmark makes (base runs, probes, "
        "re-runs, repairs) for reading afterwards (`causal-mw runs list --store PATH`); local executor "
        "only, no resume (default: in memory)",
    )
    add_executor_args(p, default="auto")
    add_json_arg(p)
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    import sys
    import time

    from benchmarks.cli.bench import run_repair
    from benchmarks.suites.repair import DEFAULT_FAMILIES, format_repair_table
    from benchmarks.world.generator import MAX_HOPS

    if args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    if args.hops is not None and not 1 <= args.hops <= MAX_HOPS:
        raise ValueError(f"--hops must be between 1 and {MAX_HOPS}, got {args.hops}")
    if args.holdout_runs < 0:
        raise ValueError(f"--holdout-runs must be at least 0, got {args.holdout_runs}")
    if args.control_runs < 0:
        raise ValueError(f"--control-runs must be at least 0, got {args.control_runs}")
    if not 0.0 <= args.temperature <= 1.0:
        raise ValueError(f"--temperature must be in [0, 1], got {args.temperature}")
    if args.store and Path(args.store).exists():
        raise ValueError(
            f"--store {args.store} already exists: bench repair does not resume; name a new file"
        )
    check_executor_args(args)
    started = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr)

    results = run_repair(
        {
            "n": args.n,
            "seed": args.seed,
            "hops": args.hops,
            "inject_questions": args.inject_questions,
            "families": list(args.families or DEFAULT_FAMILIES),
            "depths": list(args.depths),
            "max_injected": args.max_injected,
            "k": args.k,
            "max_steps": args.max_steps,
            "temperature": args.temperature,
            "holdout_runs": args.holdout_runs,
            "control_runs": args.control_runs,
            "model": args.model,
            "plan": args.plan,
            "proposer": args.proposer,
            "validator": args.validator,
            "executor": args.executor,
            "address": args.address,
            "store": args.store,
            "progress": None if args.json else say,
        }
    )
    out = Path(args.out)
    if out.is_dir() or args.out.endswith("/"):
        out.mkdir(parents=True, exist_ok=True)
        out = out / "repair.json"
    out.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    if args.json:
        print_json({k: v for k, v in results.items() if k != "runs"})
    else:
        print(format_repair_table(results))
        print(f"wrote {out}")
    return 0
