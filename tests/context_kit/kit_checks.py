"""A check every shipped example kit passes: the set it generates is labelled, verified and
deterministic, and every change its faults make is a component of the kit's own layout."""

from __future__ import annotations

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
