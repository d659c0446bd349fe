"""README's first worked example: examples/my_rag_agent.py, a user's own graph, taken from a failed
run to a diagnosis naming the poisoned document and a validated repair in three CLI commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_rag_agent.py"


def cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "causal_middleware.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.returncode, done.stdout, done.stderr


def test_user_agent_from_failure_to_repair_in_three_commands(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert "answer: Seine" in done.stdout
    code, out, err = cli(
        "runs", "list", "--outcome", "failure", "--json", "--store", "my_runs.db", cwd=tmp_path
    )
    assert code == 0, err
    (run,) = json.loads(out)
    prefix = run["run_id"][:8]
    graph = f"{EXAMPLE}:graph"
    code, out, err = cli(
        "diagnose",
        prefix,
        "--method",
        "crs",
        "--graph",
        graph,
        "--json",
        "--store",
        "my_runs.db",
        cwd=tmp_path,
    )
    assert code == 0, err
    diagnosis = json.loads(out)
    assert (diagnosis["node"], diagnosis["hop"], diagnosis["stage"]) == ("retrieve", 1, "retrieval")
    assert diagnosis["details"]["evidence"]["state_key"] == "docs"
    assert diagnosis["details"]["evidence"]["ids"][0] == "seo/curie"
    code, out, err = cli("repair", prefix, "--graph", graph, "--json", "--store", "my_runs.db", cwd=tmp_path)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "repaired"
    repair = result["repair"]
    assert repair["node"] == "retrieve" and repair["target"] == "docs" and "seo/curie" in repair["evidence"]
    assert repair["answer_after"] == "Vistula" and repair["validation"]["passed"] is True
    # a graph file that fails to import is a one-line error, exit 2
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no such corpus')\n")
    code, out, err = cli(
        "repair", prefix, "--graph", f"{broken}:graph", "--store", "my_runs.db", cwd=tmp_path
    )
    assert code == 2 and "no such corpus" in err and len(err.strip().splitlines()) == 1
