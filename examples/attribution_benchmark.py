"""A small AgenticRAG-FP attribution benchmark: inject faults, ask three diagnosers which hop, score.

The reference agent (offline model, BM25) answers two 3-hop questions of a generated world; the
fault sweep forks each correct run with an empty, off-topic, false-premise or stale retrieval at
hop 1 or 2 and lets the agent finish live; every run that then fails goes, blinded, to `coverage`,
`suffix_regen` and `path_aware`. The results (results.json, report.md, accuracy_by_depth.png) are
written to a temporary folder. `causal-mw bench fp` is the same with every diagnoser, 80 questions
and three depths.

Run: ``python examples/attribution_benchmark.py`` (offline, about ten seconds).
"""

from __future__ import annotations

import tempfile

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.suites.fp import fp_summary_markdown, run_fp_bench, write_fp_report
from benchmarks.world.generator import generate_world


def main() -> None:
    dataset = generate_world(2, seed=3, hop_mix={3: 1.0})
    results = run_fp_bench(
        lambda data, store: reference_sweep_environment(data, store=store, seed=3),
        dataset,
        depths=[1, 2],
        faults="structural",
        diagnosers=["coverage", "suffix_regen", "path_aware"],
        seed=3,
        bootstrap_B=200,
    )
    paths = write_fp_report(results, tempfile.mkdtemp(prefix="fp-bench-"))
    print(fp_summary_markdown(results))
    print(f"report: {paths['markdown']}\nplot:   {paths['png']}")


if __name__ == "__main__":
    main()
