"""``causal-mw inject`` end to end on a tiny world, into a SQLite store (and resumed from it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causal_middleware.cli.main import main
from causal_middleware.faults.sweep import iter_units
from causal_middleware.store.sqlite import SqliteSpanStore


def test_inject_json_then_resume_from_the_stored_runs_and_checkpoints(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "runs.db"
    argv = ["inject", "--n", "2", "--hops", "3", "--depths", "1", "--faults", "content", "--seed", "0"]
    argv += ["--store", str(store), "--json", "--no-progress"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"sweep", "store", "checkpoints", "report"}
    sweep = out["sweep"]
    assert sweep["units"] == 2 and sweep["resumed"] == 0 and sweep["base_runs"] == 2
    assert sweep["families"] == ["content_corruption"] and sweep["depths"] == [1]
    assert out["checkpoints"] == str(tmp_path / "runs.checkpoints.db") and Path(out["checkpoints"]).exists()
    report = out["report"]
    done = sweep["statuses"].get("done", 0)
    assert report["units"] == 2 and report["statuses"] == sweep["statuses"]
    if done:
        cell = report["content"]["1"]
        assert cell["absorbed"] + cell["resisted"] + cell["derailed"] == cell["n"] == done
        assert set(report["recovery"]) == {"content_corruption"}

    # a second process would find the same base runs and checkpoints: nothing left to do
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["sweep"]["resumed"] == 2 and again["sweep"]["base_runs"] == 0
    assert again["report"] == report
    with SqliteSpanStore(store, create=False) as reopened:
        assert len(list(iter_units(reopened))) == done


def test_inject_rejects_bad_arguments(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = str(tmp_path / "runs.db")
    assert main(["inject", "--n", "0", "--store", store]) == 2
    assert "--n must be at least 1" in capsys.readouterr().err
    assert main(["inject", "--dataset", "musique", "--hops", "3", "--store", store]) == 2
    assert "--hops applies to --dataset world only" in capsys.readouterr().err
    assert main(["inject", "--n", "1", "--depths", "0", "--store", store, "--no-progress"]) == 2
    assert "depths must be positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["inject", "--faults", "nonsense"])
