"""``causal-mw repair RUN_ID``: repairs a failed run of ``causal-mw demo`` from the stored trace and
checkpoints, explains it, keeps the result in the store, and cleans up its probe forks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks.cli import demo as demo_module
from causal_middleware.cli.main import main
from causal_middleware.store.sqlite import SqliteSpanStore

N, SEED = 12, 0  # this demo has one wrong answer with BM25


@pytest.fixture
def demo_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str]:
    monkeypatch.setattr(demo_module, "_dense_unavailable", lambda: "not needed in this test")
    store = tmp_path / "runs.db"
    argv = [
        "demo",
        "--n",
        str(N),
        "--seed",
        str(SEED),
        "--store",
        str(store),
        "--retriever",
        "bm25",
        "--repairs",
        "0",
        "--json",
    ]
    assert main(argv) == 0
    runs = json.loads(capsys.readouterr().out)["retrievers"]["bm25"]["runs"]
    failed = [r["run_id"] for r in runs if not r["correct"]]
    assert failed, "the demo world changed: pick N/SEED with a failed run"
    return store, failed[0]


def _threads(store: Path) -> set[str]:
    with sqlite3.connect(store.with_suffix(".checkpoints.db")) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}


def _repair(store: Path, run_id: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    argv = [
        "repair",
        run_id[:10],
        "--store",
        str(store),
        "--n",
        str(N),
        "--seed",
        str(SEED),
        "--json",
        *extra,
    ]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_repair_cli_fixes_explains_and_keeps_only_the_repairs_fork(
    demo_store: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run_id = demo_store
    before = _threads(store)
    result = _repair(store, run_id, capsys)
    assert result["status"] == "repaired" and result["run_id"] == run_id
    repair = result["repair"]
    assert repair["validation"]["passed"] and repair["answer_after"] != repair["answer_before"]
    assert f"Run {run_id} failed" in result["explanation"] and repair["node"] in result["explanation"]
    assert result["cost"]["forks_discarded"] == result["cost"]["reexecutions"] - 1 > 0
    with SqliteSpanStore(store, create=False) as spans:
        [record] = spans.get_records("repair", run_id)
        assert record["status"] == "repaired"
        fork = spans.get_trajectory(repair["fork_run_id"])
        assert fork.lineage is not None and fork.lineage.parent_run_id == run_id
    assert _threads(store) - before == {fork.thread_id}  # every probe fork's thread was deleted


def test_repair_cli_keep_probe_forks(
    demo_store: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run_id = demo_store
    before = _threads(store)
    result = _repair(store, run_id, capsys, "--keep-probe-forks")
    assert result["status"] == "repaired" and result["cost"]["forks_discarded"] == 0
    assert len(_threads(store) - before) == result["cost"]["reexecutions"]


def test_repair_cli_names_an_unknown_run(
    demo_store: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = demo_store
    assert main(["repair", "0123456789abcdef", "--store", str(store), "--n", str(N)]) == 2
    assert "0123456789abcdef" in capsys.readouterr().err
