"""``python -m benchmarks.agents --out DIR [--seed N] [--methods ...] [--quick]``

Generates tasks for every agent of the zoo (each failure cause it hosts, at each hop), runs each
task's control (same world, no plant; the task is dropped when the agent already fails it) and
planted run instrumented, keeps the runs that fail, diagnoses each with every method (no adapter)
and repairs it (offline ``TraceProposer``). Writes ``DIR/agents.json`` (keys:
:mod:`benchmarks.agents.report`), prints the table; one progress line per task on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from .report import PROBING, aggregate, table
from .runner import run_task
from .world import bridge_task, compare_task
from .zoo import fanout_compare, rag_bm25_loop, rag_vector_dicts, tool_agent

ZOO = [rag_bm25_loop, rag_vector_dicts, fanout_compare, tool_agent]
DEFAULT_MIN_FAILED = 60  # two tasks per (agent, cause, hop): the issue asks for >= 40
QUICK_MIN_FAILED = 12
MAX_ROUNDS = 6


def combos(quick: bool) -> list[tuple[Any, str, int]]:
    """(agent, cause, hop) to generate tasks for; ``quick``: one hop per (agent, cause), alternating."""
    pairs = [(module, cause) for module in ZOO for cause in module.CAUSES]
    if quick:
        return [(m, c, 1 + i % 2) for i, (m, c) in enumerate(pairs)]
    return [(m, c, hop) for m, c in pairs for hop in (1, 2)]


def make_task(module: Any, cause: str, hop: int, seed: int, i: int, *, control: bool = False) -> Any:
    task_id = f"{module.SHAPE}-{cause}-h{hop}-{i}"
    rng = random.Random(f"{seed}:{task_id}")
    gen = compare_task if module.FAMILY == "compare" else bridge_task
    return gen(rng, task_id, module.SHAPE, cause, hop, control=control)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agents", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for agents.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=list(PROBING))
    parser.add_argument("--quick", action="store_true", help=f"about {QUICK_MIN_FAILED} failed runs")
    parser.add_argument("--min-failed", type=int, default=None, help="failed runs to collect")
    parser.add_argument("--no-repair", action="store_true")
    parser.add_argument(
        "--with-llm-proposer",
        default="none",
        choices=["none"],
        help="an LLM proposer for repair (only 'none' is implemented: offline runs only)",
    )
    args = parser.parse_args(argv)
    target = args.min_failed or (QUICK_MIN_FAILED if args.quick else DEFAULT_MIN_FAILED)
    todo = combos(args.quick)
    runs: list[dict[str, Any]] = []
    kept = 0
    t0 = time.perf_counter()
    for rnd in range(MAX_ROUNDS):
        for module, cause, hop in todo:
            if kept >= target and rnd > 0:
                break
            task = make_task(module, cause, hop, args.seed, rnd)
            control = make_task(module, cause, hop, args.seed, rnd, control=True)
            rec = run_task(module, task, args.methods, control=control, repair=not args.no_repair)
            runs.append(rec)
            kept += bool(rec.get("kept"))
            diag = " ".join(
                f"{m}={'ok' if d.get('correct') else 'miss'}" for m, d in rec.get("diagnoses", {}).items()
            )
            rep = rec.get("repair", {}).get("status", "")
            state = (
                "kept" if rec.get("kept") else ("skip:control" if rec.get("skipped") else "skip:succeeded")
            )
            print(
                f"[{len(runs):3d}] {task.id:<40} {state:<15} {diag} repair={rep} "
                f"({rec.get('seconds', 0):.1f}s, total {time.perf_counter() - t0:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
        if kept >= target:
            break
    report: dict[str, Any] = {
        "setup": {
            "seed": args.seed,
            "methods": args.methods,
            "quick": args.quick,
            "command": "python -m benchmarks.agents " + " ".join(argv if argv is not None else sys.argv[1:]),
            "agents": [m.SHAPE for m in ZOO],
            "adapter": None,
            "llm_proposer": args.with_llm_proposer,
            "counts": {
                "generated": len(runs),
                "kept": kept,
                "control_failed": sum(1 for r in runs if r.get("skipped")),
                "not_failed": sum(1 for r in runs if not r.get("kept") and not r.get("skipped")),
            },
            "seconds": round(time.perf_counter() - t0, 1),
            "cpus": os.cpu_count(),
        }
    }
    report.update(aggregate(runs, args.methods, args.seed))
    report["runs"] = runs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "agents.json").write_text(json.dumps(report, indent=1, default=str))
    print(table(report))
    print(f"\nwrote {out / 'agents.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
