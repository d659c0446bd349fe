"""``python -m benchmarks.perf`` (issue 16): every figure of the issue beside today's, from parts
that really ran (small sizes here; the figures themselves are the bench's job)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.perf import __main__ as cli
from benchmarks.perf import forks, overhead, redaction


def test_the_overhead_part_measures_every_variant_and_the_growth() -> None:
    result = overhead.run(rounds=3)
    for graph in ("graph_a", "graph_b"):
        variants = result[graph]["variants"]
        assert set(variants) == set(overhead.VARIANTS)
        assert variants["none"]["overhead_ms"] == 0
        assert all(v["median_ms"] > 0 for v in variants.values())
        assert {"x_floor", "x_openinference"} <= set(variants["ours_sqlite"])
        assert result[graph]["caller_store_write_ms"]["n"] == 3
    assert result["graph_b_30_hops"]["spans_per_run"] > 5 * result["graph_b"]["spans_per_run"]
    growth = result["growth"]
    assert growth["bytes_per_run_30_hops"] > growth["bytes_per_run_3_hops"] > 0


def test_redaction_and_forks_compare_with_git_head() -> None:
    figures = redaction.run(quick=True)
    assert figures["hops_3"]["spans"] > 10 and figures["hops_3"]["after_ms_per_run"] > 0
    if "before_ms_per_run" in figures["hops_3"]:  # a git checkout: HEAD's policy, same spans
        assert figures["hops_3"]["same_output"] and figures["hops_30"]["same_output"]
    costs = forks.run(quick=True)["after"]
    assert costs["fresh_run_ms"] > 0 and costs["fork_fixed_cost_ms"] > 0
    assert costs["frozen_hop1_x_fresh"] > 0 and costs["read_fork_ms"] > 0


def test_the_cli_prints_the_issue_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--out", str(tmp_path), "--quick", "--only", "redaction"]) == 0
    printed = capsys.readouterr().out
    data = json.loads((tmp_path / "perf.json").read_text())
    # every row but the --store-runs ones (not asked for)
    assert [r["figure"] for r in data["summary"]] == [
        row[0] for row in cli.ROWS if not row[3].startswith("store_scale.")
    ]
    assert "redaction speedup at 3 hops" in printed and "today" in printed
    row = next(r for r in data["summary"] if r["figure"].startswith("redaction per run, 3 hops"))
    assert row["now"] == data["redaction"]["hops_3"]["after_ms_per_run"]


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--out", str(tmp_path), "--n", "3"]) == 2
    assert capsys.readouterr().err.strip() == "error: --n must be at least 10, got 3"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli.main(["--out", str(blocker / "sub")]) == 2
    assert "cannot create --out folder" in capsys.readouterr().err
    assert cli.main(["--out", str(tmp_path), "--before-ref", "no-such-revision"]) == 2
    assert "--before-ref 'no-such-revision' is not a git revision" in capsys.readouterr().err
    assert cli.main(["--out", str(tmp_path), "--fp-before-ref", "no-such-revision"]) == 2
    assert "--fp-before-ref 'no-such-revision' is not a git revision" in capsys.readouterr().err
    assert cli.main(["--out", str(tmp_path), "--store-runs", "5"]) == 2
    assert capsys.readouterr().err.strip() == "error: --store-runs must be at least 2000 (its sample), got 5"
    assert cli.main(["--out", str(tmp_path), "--only", "store_scale"]) == 2
    assert capsys.readouterr().err.strip() == "error: --only store_scale needs --store-runs N"


def test_the_fp_wall_part_times_bench_fp_three_ways_with_equal_results() -> None:
    from benchmarks.perf import fp_wall

    before = fp_wall.ISSUE_REVISION if cli._known_revision(fp_wall.ISSUE_REVISION) else None
    result = fp_wall.run(n=2, before_ref=before)
    assert result["n"] == 2 and set(result["runs"]) >= {"local", "auto"}
    assert all(r["wall_s"] > r["bench_total_s"] > 0 for r in result["runs"].values())
    # two questions: auto stays on threads (spawning workers would cost more than it saves)
    assert result["runs"]["auto"]["executor"] == result["runs"]["local"]["executor"] == "local"
    assert result["same_results_local_auto"] is True
    if before is not None:
        assert result["before_ref"] == before and result["auto_over_before"] > 0
        assert "path_aware" in result["diagnosers_same_as_before"] + result["diagnosers_changed_since_before"]
        # the old revision really ran: it lacks diagnosers added since
        assert "decisive_step" in result["diagnosers_new_since_before"]
