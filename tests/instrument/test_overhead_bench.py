"""The overhead benchmark measures all four variants on the same graph (figures live in make bench)."""

from __future__ import annotations

import json

import pytest

from benchmarks.suites.overhead_bench import build_bench_graph, run_overhead_bench


def test_bench_graph_takes_three_hops_to_the_answer() -> None:
    result = build_bench_graph().invoke(
        {
            "question": "In which country was the founder of Velra Institute born?",
            "query": "Velra Institute founder",
        }
    )
    assert result["answer"] == "Thessen"
    assert len(result["evidence"]) == 3


def test_report_has_every_variant_and_counts_spans() -> None:
    report = run_overhead_bench(runs=2, warmup=1)
    assert json.loads(json.dumps(report)) == report
    assert set(report["variants"]) == {"none", "ours", "ours_sqlite", "openinference"}
    assert report["variants"]["none"]["ratio_to_none"] == 1.0
    # both tracers really traced the runs: ours has a run, 3 hops, nodes, retrievals and LLM calls
    assert report["spans_per_run"]["ours"] >= 1 + 3 + 7 + 3 + 3
    assert report["spans_per_run"]["ours_sqlite"] == report["spans_per_run"]["ours"]
    assert report["spans_per_run"]["openinference"] > 0
    assert isinstance(report["target_met"], bool)


def test_runs_must_be_positive() -> None:
    with pytest.raises(ValueError, match="runs must be >= 1"):
        run_overhead_bench(runs=0)
