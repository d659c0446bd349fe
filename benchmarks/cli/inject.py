"""``causal-mw inject``: the AgenticRAG-FP fault-injection sweep on the reference agent, offline.

Runs each question on the instrumented reference agent (base runs), then forks every eligible
base run at each requested depth with each fault family, regenerating the suffix live, and
prints recovery by depth and family (and, for content faults, absorbed/resisted/derailed by
depth with query contamination). Everything lands in the span store; re-running the same
command resumes (finished units are skipped; errored ones are retried).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.cli.executor import add_executor_args
from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.faults.model import FAULT_SETS

DATASETS = ("world", "musique", "hotpotqa")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "inject",
        help="fault-injection sweep: inject known faults at chosen hops and measure recovery",
        description=(
            "Run N questions on the reference agent, then fork each correct run at each depth with "
            "each fault family (suffix re-executed live) and report recovery. Resumable: the same "
            "command skips units already finished in the store."
        ),
    )
    p.add_argument("--dataset", choices=DATASETS, default="world", help="question source (default world)")
    p.add_argument("--n", type=int, default=20, help="questions to sweep (default 20)")
    p.add_argument(
        "--hops", type=int, help="world only: generate only questions with this many hops (e.g. 3)"
    )
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3], metavar="H", help="hops to inject at")
    p.add_argument(
        "--faults",
        choices=sorted(FAULT_SETS),
        default="structural",
        help="structural = empty, irrelevant, false premise, stale (the paper's main sweep); "
        "content = certified content corruption; all = the seven families",
    )
    p.add_argument(
        "--persistent",
        action="store_true",
        help="also write corrupted/planted passages into a private copy of the index for each fork",
    )
    p.add_argument("--retriever", choices=("bm25", "dense"), default="bm25", help="index (default bm25)")
    p.add_argument("--seed", type=int, default=0, help="world, model and fault seed (default 0)")
    p.add_argument("--k", type=int, default=5, help="passages per retrieval (default 5)")
    p.add_argument("--budget", type=int, default=4, help="searches per question (default 4)")
    p.add_argument("--workers", type=int, default=2, help="questions swept in parallel (default 2)")
    add_executor_args(p)
    p.add_argument(
        "--checkpoints",
        metavar="PATH",
        help="SQLite file for LangGraph checkpoints (default <store>.checkpoints.db next to the store)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=run)


def checkpoint_path(store: str, explicit: str | None) -> str:
    """Where the sweep keeps LangGraph checkpoints: ``explicit``, else ``<store stem>.checkpoints.db``."""
    if explicit:
        return explicit
    if store == ":memory:":
        return ":memory:"
    path = Path(store)
    return str(path.with_name(path.stem + ".checkpoints.db"))


def load_dataset(name: str, n: int, *, seed: int, hops: int | None = None) -> Any:
    """The sweep's questions: ``n`` generated-world questions, or the first ``n`` MuSiQue/HotpotQA items."""
    from benchmarks.world.generator import generate_world
    from benchmarks.world.loaders import load_hotpotqa, load_musique

    if n < 1:
        raise ValueError(f"--n must be at least 1, got {n}")
    if name == "world":
        return generate_world(n, seed=seed, hop_mix={hops: 1.0} if hops else None)
    if hops is not None:
        raise ValueError("--hops applies to --dataset world only")
    if name == "musique":
        return load_musique(limit=n)
    if name == "hotpotqa":
        return load_hotpotqa(limit=n)
    raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")


def run(args: argparse.Namespace) -> int:
    from benchmarks.cli.executor import ReferenceEnvSpec, check_executor_args, close_executor, make_executor
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from causal_middleware.faults.report import build_report, print_report
    from causal_middleware.faults.sweep import latest_records, run_sweep
    from causal_middleware.store.sqlite import SqliteSpanStore

    for flag, value in (("--k", args.k), ("--budget", args.budget), ("--workers", args.workers)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    check_executor_args(args)
    console = Console(stderr=True)
    dataset = load_dataset(args.dataset, args.n, seed=args.seed, hops=args.hops)
    store = SqliteSpanStore(args.store)
    checkpoints = checkpoint_path(args.store, args.checkpoints)
    env = reference_sweep_environment(
        dataset,
        store=store,
        retriever=args.retriever,
        k=args.k,
        budget=args.budget,
        seed=args.seed,
        checkpoints=None if checkpoints == ":memory:" else checkpoints,
        max_concurrency=args.workers,
    )
    # with Ray, every worker process rebuilds this same agent (in memory); its runs come back here
    spec = ReferenceEnvSpec(
        dataset=args.dataset,
        n=args.n,
        seed=args.seed,
        hops=args.hops,
        retriever=args.retriever,
        k=args.k,
        budget=args.budget,
        workers=args.workers,
    )
    try:
        executor = make_executor(args.executor, workers=args.workers, address=args.address)
    except BaseException:
        env.close()
        store.close()
        raise
    try:
        result = run_sweep(
            env,
            depths=args.depths,
            families=FAULT_SETS[args.faults],
            seed=args.seed,
            persistent=args.persistent,
            workers=args.workers,
            progress=not args.no_progress,
            executor=executor,
            env_spec=spec,
        )
        latest = latest_records(store)
        report = build_report(latest[k] for k in result.keys if k in latest)
    finally:
        close_executor(executor)
        env.close()
        store.close()
    summary = result.model_dump(mode="json", exclude={"records", "keys"})
    if args.json:
        print_json(
            {
                "sweep": summary,
                "store": args.store,
                "checkpoints": checkpoints,
                "report": report.to_json(),
            }
        )
        return 0
    out = Console()
    out.print(
        f"[bold]{result.dataset}[/] ({args.retriever}, seed {args.seed}{', persistent' if args.persistent else ''}): "
        f"{result.questions} questions, base correct {result.base_correct}; {result.units} units "
        f"({result.resumed} already done) in {result.elapsed_s:.1f}s"
    )
    print_report(report, out)
    errors = [r for r in result.records if r.status == "error"]
    if errors:
        console.print(f"[red]{len(errors)} unit(s) failed[/]; first: {errors[0].error}")
    return 0
