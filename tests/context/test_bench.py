"""``bench context``: metrics with intervals, ablations, refusal on unverified benchmarks, CLI."""

from __future__ import annotations

import json

import pytest

from benchmarks.context import bench as bench_module
from benchmarks.context.bench import markdown_table, run_context_bench
from benchmarks.context.simulation import generate_benchmark
from benchmarks.context.simulation.verification import BenchmarkVerificationError
from causal_middleware.cli.main import main

REQUIRED = ("acc_at_1", "acc_at_3", "component_acc", "op_acc", "path_acc", "path_partial_acc", "e2e_acc")


def test_results_have_every_metric_with_an_interval() -> None:
    r = run_context_bench(["finance"], seed=0, n_dissatisfied=12, n_control=4)
    assert r["domain"] == "finance" and r["n"] == 16 and r["n_dissatisfied"] == 12
    for key in REQUIRED:
        assert 0.0 <= r[key] <= 1.0, key
        lo, hi = r[f"{key}_ci"]
        assert 0.0 <= lo <= r[key] <= hi <= 1.0, key
    assert "recovery_rate" in r and "recovery_rate_ci" in r and r["calls_per_trace"] > 0
    for key in ("precision", "recall", "f1"):
        assert 0.0 <= r["detector"][key] <= 1.0 and len(r["detector"][f"{key}_ci"]) == 2
    abl = r["ablations"]
    assert set(abl["root_cause"]) == {"holistic", "iterative"} and set(abl["recommender"]) == {
        "exploration",
        "passive",
    }
    assert (
        abl["root_cause"]["iterative"]["calls_per_trace"]
        > abl["root_cause"]["holistic"]["calls_per_trace"]
        == 1.0
    )
    assert abl["recommender"]["passive"]["calls_per_trace"] == 0.0
    assert set(r["domains"]) == {"finance"} and r["bootstrap"]["B"] == 1000
    assert r["pooled"]["acc_at_1"] == r["acc_at_1"]  # one domain: pooled is that domain
    assert all(c["failed"] == 0 for c in r["verification"]["finance"].values())
    table = markdown_table(r)
    assert table.startswith("| metric | finance |") and "| root cause Acc@1 |" in table


def test_refuses_a_benchmark_that_fails_verification(monkeypatch) -> None:
    def broken(domain, **kw):
        b = generate_benchmark(domain, **kw)
        b.traces[0].ground_truth.attributions = {b.traces[0].ground_truth.root_node_id: 5.0}  # type: ignore[dict-item]
        return b

    monkeypatch.setattr(bench_module, "generate_benchmark", broken)
    with pytest.raises(BenchmarkVerificationError, match="attributions_sum_to_one"):
        run_context_bench(["finance"], n_dissatisfied=6, n_control=0)


def test_cli_lists_domains_and_writes_results(tmp_path, capsys) -> None:
    assert main(["bench", "context", "--list-domains"]) == 0
    assert capsys.readouterr().out.split() == ["finance", "healthcare_admin", "it_helpdesk", "ecommerce"]
    out = tmp_path / "results.json"
    small = ["--n-dissatisfied", "6", "--n-control", "2", "--out", str(out)]
    assert main(["bench", "context", "--domain", "healthcare_admin", *small]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| metric | finance | healthcare_admin | it_helpdesk | ecommerce | pooled |")
    assert str(out) in printed
    data = json.loads(out.read_text())
    assert data["domain"] == "healthcare_admin" and data["n"] == 8 and "acc_at_1_ci" in data
    assert data["acc_at_1"] == data["domains"]["healthcare_admin"]["acc_at_1"] and data["pooled"]["n"] == 32
    assert main(["bench", "context", "--domain", "all", "--json", *small]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 32
    assert main(["bench", "context", "--domain", "finance", "--only", *small]) == 0
    assert set(json.loads(out.read_text())["domains"]) == {"finance"}
    assert main(["bench", "context", "--domain", "nowhere"]) == 2


@pytest.mark.slow
def test_targets_on_the_default_and_second_domain() -> None:
    r = run_context_bench(["finance", "healthcare_admin"], seed=0)
    assert r["domain"] == "finance" and r["acc_at_1"] == r["domains"]["finance"]["acc_at_1"]
    for name in ("finance", "healthcare_admin"):
        d = r["domains"][name]
        assert d["n_dissatisfied"] == 60 and d["n_control"] == 15
        assert d["acc_at_1"] >= 0.9 and d["e2e_acc"] >= 0.9, (name, d["acc_at_1"], d["e2e_acc"])
