"""``python -m benchmarks.agents --quick``: the adapter-free suite over agents of several shapes runs
end to end and writes its documented keys; every planted failure it keeps really failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_suite_writes_its_documented_keys(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.agents", "--quick", "--out", str(tmp_path), "--seed", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "agents.json").read_text())
    assert {"setup", "methods", "repair", "targets", "misses", "runs"} <= set(data)
    kept = [r for r in data["runs"] if r.get("kept")]
    assert len(kept) >= 12
    assert {r["agent"] for r in kept} == {"rag_bm25_loop", "rag_vector_dicts", "fanout_compare", "tool_agent"}
    for run in kept:
        assert run["answer"] != run["gold"] and run["truth"]["located"]
    for method in ("frozen_hop", "suffix_regen", "crs", "path_aware"):
        stats = data["methods"][method]
        assert stats["n"] == len(kept) and stats["errors"] == 0
        low, high = stats["accuracy_ci"]
        assert 0.0 <= low <= stats["accuracy"] <= high <= 1.0
    assert data["repair"]["n"] == len(kept)
