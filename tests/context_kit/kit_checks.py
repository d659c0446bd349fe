"""Checks the shipped example kits pass: the set a kit generates is labelled, verified and
deterministic, and every change its faults make is a component of the kit's own layout; a held-out
kit's freeze record is well formed and covers the pipeline and the generator."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.context.kit import generate_kit_benchmark
from benchmarks.context.simulation.generator import dumps
from benchmarks.context.simulation.verification import verify_benchmark
from causal_middleware.context.root_cause import FaultCategory


def check_generated_set(kit: Path) -> None:
    bench = generate_kit_benchmark(kit, seed=4, n_dissatisfied=18, n_control=4)
    assert len(bench.dissatisfied) == 18 and len(bench.controls) == 4
    assert verify_benchmark(bench).ok
    assert {t.ground_truth.fault.category for t in bench.dissatisfied if t.ground_truth.fault} == set(
        FaultCategory
    )
    for t in bench.dissatisfied:
        ws = bench.workspace(t)
        for path in t.workspace_changes:
            assert ws.component_type(path) != "other", path
    assert dumps(generate_kit_benchmark(kit, seed=4, n_dissatisfied=18, n_control=4)) == dumps(bench)


def check_freeze_record(kit: Path, n_files: int) -> None:
    """``frozen_pipeline.sha256`` beside ``kit``: ``n_files`` sha256sum lines, all under the
    pipeline (``causal_middleware/context/``) or the generator (``benchmarks/context/``)."""
    lines = (kit.parent / "frozen_pipeline.sha256").read_text(encoding="utf-8").splitlines()
    recorded = {line.split("  ", 1)[1] for line in lines if re.fullmatch(r"[0-9a-f]{64}  \S+", line)}
    assert len(recorded) == len(lines) == n_files
    assert {"causal_middleware/context/detector.py", "benchmarks/context/kit.py"} <= recorded
    assert all(p.startswith(("causal_middleware/context/", "benchmarks/context/")) for p in recorded)
