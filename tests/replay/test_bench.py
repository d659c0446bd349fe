"""The replay benchmark: fork + suffix vs full re-run, per fork hop."""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import Replayer

from benchmarks.cli.replay_bench import register_bench
from benchmarks.suites.replay import format_replay_table, run_replay_bench


def test_fork_vs_rerun_per_hop(make_shape: Any) -> None:
    shape = make_shape("custom")
    replayer = Replayer(shape.graph)

    def run_agent(i: int) -> str:
        return shape.run(f"bench-{i}-{uuid.uuid4().hex[:6]}")

    report = run_replay_bench(
        run_agent,
        replayer,
        shape.graph.store.get_trajectory,
        n_runs=2,
        modes=("regenerate", "frozen", "replay"),
    )
    rows = {(r["mode"], r["hop"]): r for r in report["per_hop"]}
    assert set(rows) == {(m, h) for m in ("regenerate", "frozen", "replay") for h in (1, 2, 3)}
    assert all(r["n"] == 2 and r["same_answer_rate"] == 1.0 for r in rows.values())
    # the custom agent runs 9 nodes; a fork before hop h re-runs retrieve+decide per later hop + answer
    assert rows[("regenerate", 1)]["rerun_node_executions"] == 9
    assert [rows[("regenerate", h)]["fork_node_executions"] for h in (1, 2, 3)] == [6, 4, 2]
    assert [rows[("frozen", h)]["fork_node_executions"] for h in (1, 2, 3)] == [1, 1, 1]
    assert all(rows[("replay", h)]["node_ratio"] == 0 for h in (1, 2, 3))
    assert rows[("regenerate", 3)]["node_ratio"] == pytest.approx(2 / 9, abs=1e-3)
    assert all(r["fork_wall_s"] > 0 and r["wall_ratio"] > 0 for r in rows.values())
    assert len(report["runs"]) == 18 and {o["mode"] for o in report["overall"]} == {
        "regenerate",
        "frozen",
        "replay",
    }
    table = format_replay_table(report)
    assert table.count("\n") == 2 + 9 - 1 and "| regenerate | 2 | 2 | 4.0 |" in table


def test_bad_bench_arguments(make_shape: Any) -> None:
    shape = make_shape("custom")
    replayer = Replayer(shape.graph)
    with pytest.raises(ValueError, match="n_runs"):
        run_replay_bench(shape.run, replayer, shape.graph.store.get_trajectory, n_runs=0)
    with pytest.raises(ValueError, match="modes"):
        run_replay_bench(shape.run, replayer, shape.graph.store.get_trajectory, modes=("sideways",))  # type: ignore[arg-type]


def test_bench_replay_command_on_the_reference_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="causal-mw")
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser("bench").add_subparsers(dest="bench_command")
    register_bench(bench)
    args = parser.parse_args(
        ["bench", "replay", "--questions", "1", "--modes", "replay", "--out", str(tmp_path)]
    )
    assert args.func(args) == 0
    assert "| replay | 1 |" in capsys.readouterr().out
    report = json.loads((tmp_path / "replay.json").read_text())
    assert report["setup"]["agent"].startswith("reference_agent") and report["n_runs"] == 1
    assert report["per_hop"] and all(r["fork_node_executions"] == 0 for r in report["per_hop"])
    assert "fork + suffix vs full re-run" in (tmp_path / "replay.md").read_text()
