"""``python -m benchmarks.agents.reference --out DIR [--n N] [--seed S]``: the reference agent's own
failures diagnosed and repaired twice, with its hand-written ``AgentAdapter`` and without it (the
interventions derived from the trace), to show that removing the adapter costs nothing.

The reference agent runs on the generated world with the offline model; its natural failures
(no fault injected) have no ground-truth step, so the comparison is of outcomes: how often each
path repairs the run (validated by re-execution), how many re-executions it spends, and how often
the two blame the same step. Writes ``DIR/reference.json``:

* ``setup``: n, seed, failed (natural failures);
* ``paths``: per path (``adapter``, ``generic``) and method (``crs``, ``suffix_regen``,
  ``path_aware``, ``repair``): ``rate`` (diagnosers: a probe restored the answer; repair: a
  validated repair) and ``reexecutions_mean``;
* ``agreement``: per method, the share of runs where both paths blame the same node and hop.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.attribution.base import DiagnosisContext
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.counterfactual.proposers import OfflineProposer
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.service import repair_run
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.scoring import is_correct

METHODS = ("crs", "suffix_regen", "path_aware")


def run(n: int, seed: int) -> dict[str, Any]:
    world = generate_world(n, seed=seed)
    store = InMemorySpanStore()
    env = reference_sweep_environment(world, store=store, seed=seed)
    index = env.scoped_index
    failed = []
    for question in world.questions:
        trajectory = store.get_trajectory(env.run_base(question))
        if not is_correct(trajectory.answer, question):
            failed.append((trajectory.model_copy(update={"reference": question.answer}), question))
    paths: dict[str, dict[str, list[Any]]] = {"adapter": {}, "generic": {}}
    blamed: dict[str, dict[str, list[Any]]] = {"adapter": {}, "generic": {}}
    for i, (trajectory, question) in enumerate(failed, 1):
        print(f"[{i}/{len(failed)}] {question.id}", file=sys.stderr)
        for path, adapter in (("adapter", env.adapter), ("generic", None)):
            for method in METHODS:
                d = get_diagnoser(method).diagnose(
                    trajectory,
                    DiagnosisContext(
                        backend=env.backend, adapter=adapter, index=index, reference=question.answer
                    ),
                )
                # a probe restored the answer (hop-level probes with the adapter, step probes without)
                flipped = any(p.restored for p in d.probes) or any(
                    p.get("restored") for p in (d.details or {}).get("probes", [])
                )
                paths[path].setdefault(method, []).append((flipped, d.cost.reexecutions))
                blamed[path].setdefault(method, []).append((d.node, d.hop))
            proposer = OfflineProposer(env.adapter, index) if adapter is not None else TraceProposer(index)
            result = repair_run(
                trajectory,
                backend=env.backend,
                proposer=proposer,
                verifier=ReferenceVerifier(question.answer, question.aliases),
                store=store,
            )
            paths[path].setdefault("repair", []).append(
                (result.status == "repaired", result.cost.reexecutions)
            )
            repair = result.repair
            blamed[path].setdefault("repair", []).append(
                (repair.node, repair.hop) if repair else (None, None)
            )
    env.close()
    out: dict[str, Any] = {
        "setup": {"n": n, "seed": seed, "failed": len(failed)},
        "paths": {},
        "agreement": {},
    }
    for path, by_method in paths.items():
        out["paths"][path] = {
            m: {
                "rate": round(sum(ok for ok, _ in rows) / len(rows), 4) if rows else None,
                "reexecutions_mean": round(sum(r for _, r in rows) / len(rows), 2) if rows else None,
            }
            for m, rows in by_method.items()
        }
    for m in [*METHODS, "repair"]:
        pairs = list(zip(blamed["adapter"].get(m, []), blamed["generic"].get(m, []), strict=True))
        out["agreement"][m] = round(sum(a == b for a, b in pairs) / len(pairs), 4) if pairs else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agents.reference")
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = run(args.n, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reference.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"reference agent: {results['setup']['failed']} natural failures of {args.n}")
    for path, by_method in results["paths"].items():
        cells = "  ".join(f"{m} {v['rate']} ({v['reexecutions_mean']} re-ex)" for m, v in by_method.items())
        print(f"  {path:8s} {cells}")
    print(f"  agreement (same node and hop): {results['agreement']}")
    print(f"wrote {out / 'reference.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
