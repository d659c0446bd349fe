"""``bench all``: the suite runner, and the CLI's dispatch to every benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.cli import bench as bench_cli
from benchmarks.suites.suite import SIZES, SUITE_ORDER, SuiteEntry, run_suite
from causal_middleware.cli.main import build_parser, main


def _entries(calls: list[tuple[str, dict[str, Any]]]) -> list[SuiteEntry]:
    def runner(name: str) -> Any:
        def run(params: dict[str, Any]) -> dict[str, Any]:
            calls.append((name, params))
            if name == "broken":
                raise RuntimeError("the agent fell over")
            return {"benchmark": name, "value": len(calls)}

        return run

    def extra(result: dict[str, Any], path: Path) -> list[Path]:
        side = path.with_name(f"{path.stem}_extra.md")
        side.write_text(f"extra for {result['benchmark']}")
        return [side]

    return [
        SuiteEntry("first", runner("first"), lambda r: f"first gave {r['value']}", extra),
        SuiteEntry("broken", runner("broken"), lambda r: "never shown"),
        SuiteEntry("last", runner("last"), lambda r: f"last gave {r['value']}"),
    ]


def test_suite_writes_each_json_and_a_summary_and_survives_a_failure(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    said: list[str] = []
    record = run_suite(_entries(calls), tmp_path / "out", overrides={"last": {"n": 7}}, progress=said.append)
    assert [name for name, _ in calls] == ["first", "broken", "last"]
    assert calls[2][1] == {"n": 7}  # overrides reach the benchmark
    rows = record["benchmarks"]
    assert rows["first"]["status"] == rows["last"]["status"] == "ok"
    assert (
        rows["broken"]["status"] == "error" and "RuntimeError: the agent fell over" in rows["broken"]["error"]
    )
    assert json.loads((tmp_path / "out" / "first.json").read_text()) == {"benchmark": "first", "value": 1}
    assert json.loads((tmp_path / "out" / "last.json").read_text())["value"] == 3
    assert not (tmp_path / "out" / "broken.json").exists()
    assert rows["first"]["files"] == [str(tmp_path / "out" / "first_extra.md")]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| broken | **error**: RuntimeError: the agent fell over |" in summary
    assert "## first\n\nfirst gave 1" in summary and "## last\n\nlast gave 3" in summary
    assert "never shown" not in summary
    assert any("broken failed" in line for line in said)


def test_suite_selection_and_bad_input(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    record = run_suite(_entries(calls), tmp_path, only=["first", "last"], skip=["last"], size="quick")
    assert [name for name, _ in calls] == ["first"] and list(record["benchmarks"]) == ["first"]
    assert record["size"] == "quick"
    with pytest.raises(ValueError, match="unknown benchmarks"):
        run_suite(_entries(calls), tmp_path, only=["nope"])
    with pytest.raises(ValueError, match="size"):
        run_suite(_entries(calls), tmp_path, size="huge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no benchmark left"):
        run_suite(_entries(calls), tmp_path, only=["first"], skip=["first"])


def test_sizes_cover_every_benchmark_of_the_cli() -> None:
    entries = bench_cli.suite_entries()
    assert tuple(e.name for e in entries) == SUITE_ORDER
    assert set(SIZES) == set(SUITE_ORDER)
    assert all(set(sizes) == {"default", "quick"} for sizes in SIZES.values())


def test_every_benchmark_has_a_subcommand() -> None:
    parser = build_parser()
    for name in (*SUITE_ORDER, "all"):
        args = parser.parse_args(["bench", name, *_minimal(name)])
        assert args.bench_command == name and callable(args.func)


def _minimal(name: str) -> list[str]:
    return {"all": ["--out", "x"], "repair": ["--out", "x"]}.get(name, [])


def test_bench_all_quick_dispatches_to_the_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench all --quick`` runs every benchmark at its quick size: here the real suite entries are
    wired but their runners recorded, so the dispatch is checked without running the agents."""
    seen: dict[str, dict[str, Any]] = {}
    real = bench_cli.suite_entries()

    def recording() -> list[SuiteEntry]:
        def make(entry: SuiteEntry) -> SuiteEntry:
            def run(params: dict[str, Any]) -> dict[str, Any]:
                seen[entry.name] = params
                return {"name": entry.name}

            return SuiteEntry(entry.name, run, lambda r: f"ran {r['name']}")

        return [make(e) for e in real]

    monkeypatch.setattr(bench_cli, "suite_entries", recording)
    assert main(["bench", "all", "--quick", "--skip", "context", "--out", str(tmp_path)]) == 0
    assert list(seen) == [n for n in SUITE_ORDER if n != "context"]
    assert all(seen[n] == SIZES[n]["quick"] for n in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{n}.json" for n in seen] + ["summary.md"])


def test_bench_all_quick_runs_a_real_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent benchmark at its quick size (BM25 only here: loading the dense model takes longer
    than the rest of this test), end to end through ``bench all``."""
    monkeypatch.setitem(SIZES["agent"], "quick", {**SIZES["agent"]["quick"], "retrievers": ["bm25"]})
    assert main(["bench", "all", "--quick", "--only", "agent", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "# Benchmark suite (quick)" in printed and "| agent | ok |" in printed
    assert "| bm25 |" in printed  # the agent benchmark's own summary table
    agent = json.loads((tmp_path / "agent.json").read_text())
    bm25 = agent["retrievers"]["bm25"]
    assert bm25["status"] == "ok" and bm25["n"] == SIZES["agent"]["quick"]["n"]
    assert sum(c["n"] for c in bm25["by_hops"].values()) == bm25["n"]
    assert list(agent["retrievers"]) == SIZES["agent"]["quick"]["retrievers"]
