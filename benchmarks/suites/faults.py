"""Fault-injection benchmark (AgenticRAG-FP): recovery by depth and family, and content-fault
outcomes by depth, on three-hop questions of the default generated world.

:func:`run_fault_bench` generates the world (``generate_world(n, seed=seed, hop_mix={hops: 1})``:
the default world's configuration, every question ``hops`` hops), builds the live agent with the
``build_env`` it is given (the core never imports the LangGraph integration; pass
``benchmarks.reference_agent.adapter.reference_sweep_environment``)
and runs three sweeps into one store:

* ``structural``: empty retrieval, irrelevant documents, false premise, stale evidence (the
  paper's main sweep);
* ``content``: certified content corruption;
* ``content_persistent``: the same with the corrupted passage also written into a private copy
  of the index for each fork (re-retrieval cannot heal it).

The result (JSON-serialisable) holds each sweep's summary and report (``FaultReport.to_json``),
Markdown tables, the paper's published figures beside ours, wall and CPU times (on a shared
machine the CPU seconds are the comparable figure: the sweep is one Python process).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.world.generator import generate_world
from causal_middleware.faults.model import CONTENT_FAMILIES, STRUCTURAL_FAMILIES, FaultFamily
from causal_middleware.faults.report import PAPER_FIGURES, FaultReport, build_report, markdown_tables
from causal_middleware.faults.sweep import SweepEnvironment, SweepResult, latest_records, run_sweep
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.model import Dataset

EnvFactory = Callable[[Dataset, SpanStore], SweepEnvironment]
CONDITIONS: dict[str, tuple[tuple[FaultFamily, ...], bool]] = {
    "structural": (STRUCTURAL_FAMILIES, False),
    "content": (CONTENT_FAMILIES, False),
    "content_persistent": (CONTENT_FAMILIES, True),
}


def _rate_range(report: FaultReport) -> list[float] | None:
    rates = [
        cell.rate for cells in report.recovery.values() for cell in cells.values() if cell.rate is not None
    ]
    return [min(rates), max(rates)] if rates else None


def run_fault_bench(
    build_env: EnvFactory,
    *,
    n: int = 80,
    hops: int = 3,
    seed: int = 0,
    depths: Sequence[int] = (1, 2, 3),
    conditions: Sequence[str] = ("structural", "content", "content_persistent"),
    workers: int = 2,
    store: SpanStore | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the fault sweeps (see the module docstring) and return their tables as a dict.

    ``build_env(dataset, store)`` returns the :class:`SweepEnvironment` (its ``close`` is called at
    the end). ``store`` defaults to an in-memory store. Running it again on the same store resumes.
    """
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown conditions {unknown}; expected some of {list(CONDITIONS)}")
    if n < 1 or hops < 1:
        raise ValueError(f"n and hops must be positive, got n={n}, hops={hops}")
    started, cpu_started = time.perf_counter(), time.process_time()
    dataset = generate_world(n, seed=seed, hop_mix={hops: 1.0})
    store = store if store is not None else InMemorySpanStore()
    env = build_env(dataset, store)
    results: dict[str, Any] = {}
    try:
        for name in conditions:
            families, persistent = CONDITIONS[name]
            sweep: SweepResult = run_sweep(
                env,
                depths=depths,
                families=families,
                seed=seed,
                persistent=persistent,
                workers=workers,
                progress=progress,
            )
            latest = latest_records(store)
            report = build_report(latest[k] for k in sweep.keys if k in latest)
            results[name] = {
                "sweep": sweep.model_dump(mode="json", exclude={"records", "keys"}),
                "report": report.to_json(),
                "recovery_range": _rate_range(report),
                "markdown": markdown_tables(report),
            }
    finally:
        env.close()
    comparison: dict[str, Any] = {"paper": PAPER_FIGURES}
    if "structural" in results:
        comparison["structural_recovery_range"] = results["structural"]["recovery_range"]
    for name in ("content", "content_persistent"):
        if name in results:
            report_json = results[name]["report"]
            comparison[f"{name}_recovery_by_depth"] = {
                d: cell["rate"] for d, cell in report_json["recovery_by_depth"].items()
            }
            hop1 = report_json["content"].get("1")
            if hop1:
                comparison[f"{name}_hop1"] = {
                    k: hop1[f"{k}_rate"] for k in ("absorbed", "resisted", "derailed")
                }
            comparison[f"{name}_query_contamination"] = {
                "count": sum(c["contaminated"] for c in report_json["content"].values()),
                "of": sum(c["n"] for c in report_json["content"].values()),
            }
    return {
        "benchmark": "faults",
        "world": {
            "name": dataset.name,
            "seed": seed,
            "n_questions": len(dataset.questions),
            "hops": hops,
            "n_passages": len(dataset.passages),
        },
        "depths": list(depths),
        "workers": workers,
        "conditions": results,
        "comparison": comparison,
        "elapsed_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(time.process_time() - cpu_started, 2),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
    }
