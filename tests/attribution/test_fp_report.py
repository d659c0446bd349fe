"""Metrics and the report writer on synthetic units whose numbers are known by hand."""

from __future__ import annotations

import json

import pytest

from benchmarks.suites.fp_report import FPUnit, build_results, render_markdown, write_report
from causal_middleware.attribution.base import Diagnosis, DiagnosisCost
from causal_middleware.evaluation.stats import bootstrap_ci, mcnemar_exact, paired_comparison
from causal_middleware.faults.model import FaultLabel


def label(hop: int, *, requested: int | None = None, family: str = "empty_retrieval") -> FaultLabel:
    return FaultLabel(
        family=family,  # type: ignore[arg-type]
        stage="retrieval",
        requested_hop=requested or hop,
        injected_hop=hop,
        base_run_id="base",
    )


def diag(
    method: str, hop: int | None, *, stage: str = "retrieval", reexec: int = 0, calls: int = 0
) -> Diagnosis:
    return Diagnosis(
        method=method,
        hop=hop,
        stage=stage if hop is not None else "answer",  # type: ignore[arg-type]
        cost=DiagnosisCost(reexecutions=reexec, llm_calls=calls, tokens=calls * 100),
    )


def synthetic_units() -> list[FPUnit]:
    """Depth 1: 12 failed traces, 'good' right on 10, 'early' right on all 12; depth 2: 4 failed
    traces ('good' right on 3, 'early' always says hop 1); depth 2 also has 4 recovered units."""
    units: list[FPUnit] = []
    for i in range(12):
        units.append(
            FPUnit(
                label=label(1),
                recovered=False,
                n_hops=3,
                diagnoses={
                    "good": diag("good", 1 if i < 10 else 3, reexec=1),
                    "early": diag("early", 1, reexec=2),
                    "judge": Diagnosis.not_run("judge", "no judge model"),
                },
            )
        )
    for i in range(4):
        units.append(
            FPUnit(
                label=label(2),
                recovered=False,
                n_hops=3,
                diagnoses={
                    "good": diag("good", 2 if i < 3 else None, reexec=1),
                    "early": diag("early", 1, reexec=2),
                    "judge": Diagnosis.not_run("judge", "no judge model"),
                },
                content_outcome="derailed" if i < 3 else "resisted",
            )
        )
    for _ in range(4):
        units.append(FPUnit(label=label(2), recovered=True, content_outcome="absorbed"))
    units.append(FPUnit(label=label(3, requested=2), recovered=False))  # ineligible
    return units


@pytest.fixture(scope="module")
def results() -> dict:
    return build_results(
        synthetic_units(), ["good", "early", "judge"], {"dataset": "synthetic"}, B=1000, seed=0
    )


def test_recovery_and_failed_counts(results: dict) -> None:
    assert results["failed"] == {"1": 12, "2": 4}
    assert results["injected"] == {"1": 12, "2": 8}
    assert results["recovery"] == {"1": 0.0, "2": 0.5}
    assert results["excluded"] == {"ineligible": 1}
    assert results["config"]["dataset"] == "synthetic"
    assert results["config"]["bootstrap_B"] == 1000


def test_accuracy_by_depth_with_cis_and_descriptive_flags(results: dict) -> None:
    good = results["diagnosers"]["good"]
    d1, d2 = good["by_depth"]["1"], good["by_depth"]["2"]
    assert d1["acc"] == pytest.approx(10 / 12, abs=1e-4) and d1["n"] == 12 and d1["correct"] == 10
    assert d2["acc"] == 0.75 and d2["n"] == 4
    assert d1["descriptive"] is False and d2["descriptive"] is True
    for cell in (d1, d2):
        lo, hi = cell["ci"]
        assert 0.0 <= lo <= cell["acc"] <= hi <= 1.0
        assert lo < hi  # both cells mix right and wrong, so the interval has width
    early = results["diagnosers"]["early"]["by_depth"]
    assert early["1"]["acc"] == 1.0 and early["1"]["ci"] == [1.0, 1.0]
    assert early["2"]["acc"] == 0.0 and early["2"]["ci"] == [0.0, 0.0]
    assert results["diagnosers"]["good"]["overall"]["acc"] == pytest.approx(13 / 16, abs=1e-4)


def test_secondary_metrics(results: dict) -> None:
    good = results["diagnosers"]["good"]
    # errors |pred - true|: depth 1: ten 0s and two 2s (pred 3); depth 2: three 0s and one 2
    # (answer stage sits at H + 1 = 4)
    assert good["mae"] == pytest.approx((2 * 2 + 2) / 16, abs=1e-4)
    assert good["hop_tolerance"] == pytest.approx(13 / 16, abs=1e-4)
    assert good["stage_acc"] == pytest.approx(15 / 16, abs=1e-4)  # the answer-stage prediction misses
    assert good["ancestor_hit"] == pytest.approx(13 / 16, abs=1e-4)
    assert good["reexec_per_correct"] == pytest.approx(16 / 13, abs=1e-4)
    assert good["calls_per_correct"] == 0.0
    early = results["diagnosers"]["early"]
    assert early["ancestor_hit"] == 1.0  # hop 1 <= true hop, stage right, everywhere
    assert early["hop_tolerance"] == 1.0 and early["mae"] == pytest.approx(4 / 16)
    assert early["reexec_per_correct"] == pytest.approx(32 / 12, abs=1e-4)


def test_not_run_diagnoser_is_reported_not_scored(results: dict) -> None:
    judge = results["diagnosers"]["judge"]
    assert judge["run"] is False and judge["n_ran"] == 0
    assert judge["not_run_reasons"] == ["no judge model"]
    assert judge["by_depth"]["1"]["acc"] is None and judge["mae"] is None
    assert all("judge" not in (m["a"], m["b"]) for m in results["mcnemar"])


def test_content_outcomes(results: dict) -> None:
    assert results["outcomes"] == {"2": {"absorbed": 0.5, "resisted": 0.125, "derailed": 0.375, "n": 8}}


def test_mcnemar_entries(results: dict) -> None:
    overall = next(m for m in results["mcnemar"] if m["depth"] == "all")
    assert (overall["a"], overall["b"]) == ("good", "early")
    # good right / early wrong: the 3 depth-2 hits; early right / good wrong: the 2 depth-1 misses
    assert (overall["a_only"], overall["b_only"], overall["both"], overall["neither"]) == (3, 2, 10, 1)
    assert overall["p_value"] == pytest.approx(1.0)


def test_mcnemar_exact_on_known_tables() -> None:
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(5, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_exact(-1, 2)
    cmp = paired_comparison("a", "b", [True, True, False, False], [True, False, True, False])
    assert (cmp.both, cmp.a_only, cmp.b_only, cmp.neither) == (1, 1, 1, 1)
    with pytest.raises(ValueError, match="same items"):
        paired_comparison("a", "b", [True], [True, False])


def test_bootstrap_ci_is_seeded_and_brackets_the_mean() -> None:
    values = [1.0] * 30 + [0.0] * 10
    a = bootstrap_ci(values, B=1000, seed=7)
    assert a == bootstrap_ci(values, B=1000, seed=7)
    assert a is not None and a[0] < 0.75 < a[1]
    assert bootstrap_ci([], B=10) is None


def test_write_report_files(tmp_path, results: dict) -> None:
    paths = write_report(results, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["failed"] == results["failed"]
    png = paths["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
    md = paths["markdown"].read_text()
    assert "Table 2" in md and "Table 3" in md and "Table 4" in md
    assert "| good | 0.83 [" in md  # depth-1 cell of the accuracy table
    assert "†" in md  # the depth-2 cells are descriptive
    assert md == render_markdown(results)


def test_bad_units_are_rejected() -> None:
    with pytest.raises(TypeError, match="not an FPUnit"):
        build_results([{"label": 1}], ["x"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="B must be"):
        build_results([], ["x"], B=0)
    empty = build_results([], ["x"])
    assert empty["failed"] == {} and empty["diagnosers"]["x"]["run"] is False
