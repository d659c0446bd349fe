"""``causal-mw context simulate``: generated sessions of a shipped domain or a user's domain kit, into the store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.context.sessions import save_session
from causal_middleware.store.open import open_store

#: with --recorded: each session's ground truth (and workspace folder), beside its runs
GROUND_TRUTH_KIND = "context.ground_truth"


def register(context_subparsers: Any) -> None:
    sub = context_subparsers
    p = sub.add_parser("simulate", help="generate simulated sessions into the store")
    p.add_argument("--domain", default=None, help="a shipped domain (default: finance)")
    p.add_argument(
        "--kit", metavar="FILE", help="a domain kit (YAML: your workspace and session templates) instead"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-dissatisfied", type=int, default=60)
    p.add_argument("--n-control", type=int, default=15)
    p.add_argument("--workspaces", help="also write each session's workspace to WORKSPACES/<session id>/")
    p.add_argument(
        "--recorded",
        action="store_true",
        help="store each session as the runs of a real create_agent agent that plays it, recorded with "
        "instrument() (thread id: the session id), instead of a session record",
    )
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from benchmarks.context.simulation import Benchmark, generate_benchmark
    from benchmarks.context.simulation.verification import verify_benchmark

    bench: Benchmark
    if args.kit:
        from benchmarks.context.kit import generate_kit_benchmark

        if args.domain is not None:
            raise ValueError("pass --domain or --kit, not both")
        bench = generate_kit_benchmark(
            args.kit, seed=args.seed, n_dissatisfied=args.n_dissatisfied, n_control=args.n_control
        )
    else:
        bench = generate_benchmark(
            args.domain or "finance",
            seed=args.seed,
            n_dissatisfied=args.n_dissatisfied,
            n_control=args.n_control,
        )
    report = verify_benchmark(bench)
    store = open_store(args.store, create=True)
    ids = []
    for trace in bench.traces:
        extra: dict[str, Any] = {
            "ground_truth": trace.ground_truth.model_dump(mode="json"),
            "domain": bench.domain,
            "seed": bench.seed,
        }
        if args.workspaces:
            target = Path(args.workspaces) / trace.ground_truth.trace_id
            write = getattr(bench, "write_workspace", None)  # a kit's: with its layout config
            if write is not None:
                write(trace, target)
            else:
                bench.workspace(trace).write_to(target)
            extra["workspace_dir"] = str(target)
        if args.recorded:
            from benchmarks.context.recorded import record_session

            ws = bench.workspace(trace)
            record_session(trace, ws.read(ws.system_prompt_path), store)
            store.put_record(GROUND_TRUTH_KIND, trace.ground_truth.trace_id, extra)
        else:
            save_session(store, trace.conversation, **extra)
        ids.append(trace.ground_truth.trace_id)
    # each failed check with its first failures ("trace id: why"), so a kit author can fix the kit
    failures = {name: check.failures[:3] for name, check in report.checks.items() if check.failed}
    if args.json:
        print_json(
            {
                "sessions": ids,
                "verification_ok": report.ok,
                "verification_failures": failures,
                "store": args.store,
            }
        )
        return 0
    print(
        f"{len(ids)} sessions of domain {bench.domain!r} (seed {bench.seed}) stored in {args.store}; verification {'passed' if report.ok else 'FAILED'}"
    )
    for name, items in failures.items():
        print(f"  {name} failed ({report.checks[name].failed}): {'; '.join(items)}")
    print(f"  e.g. causal-mw context detect {ids[0]} --store {args.store}")
    return 0
