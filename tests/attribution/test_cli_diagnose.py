"""``causal-mw diagnose`` on runs kept in a real SQLite span store."""

from __future__ import annotations

import json

import pytest
from attribution_sim import inject, make_world

from causal_middleware.cli.main import main
from causal_middleware.store.sqlite import SqliteSpanStore


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[str, str]:
    """A store holding a base run and its fork with hop 2's evidence emptied; (db path, faulted run id)."""
    path = str(tmp_path_factory.mktemp("diagnose") / "runs.db")
    store = SqliteSpanStore(path)
    world = make_world(store=store)
    base = world.backend.run(world.questions["q0-3"])
    faulted = inject(world, base, "empty_retrieval", 2)
    store.close()
    return path, faulted.run_id


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_passive_methods_run_on_the_stored_run(stored, capsys) -> None:
    path, run_id = stored
    code, out, _ = run_cli(capsys, "diagnose", run_id[:10], "--method", "rule", "--json", "--store", path)
    data = json.loads(out)
    assert code == 0 and data["run_id"] == run_id
    assert (data["method"], data["hop"], data["stage"], data["ran"]) == ("rule", 2, "retrieval", True)
    code, out, _ = run_cli(capsys, "diagnose", run_id, "--method", "coverage", "--json", "--store", path)
    assert json.loads(out)["hop"] == 1  # gold from the run's stored reference
    code, out, _ = run_cli(
        capsys,
        "diagnose",
        run_id,
        "--method",
        "coverage",
        "--reference",
        "Zorblat",
        "--json",
        "--store",
        path,
    )
    assert json.loads(out)["hop"] == 2  # hop 1's evidence names Zorblat, hop 2 retrieved nothing


def test_path_aware_runs_passively_and_audits_with_an_index(stored, capsys, tmp_path) -> None:
    path, run_id = stored
    code, out, _ = run_cli(capsys, "diagnose", run_id, "--method", "path_aware", "--json", "--store", path)
    data = json.loads(out)
    assert (
        code == 0
        and data["hop"] == 2
        and data["details"]["probed"] is False
        and data["details"]["audit"] is None
    )
    spec = tmp_path / "sim_index.py"
    spec.write_text(
        "from attribution_sim import build_passages\n"
        "from causal_middleware.retrieval.bm25 import BM25Index\n"
        "index = BM25Index(build_passages())\n"
    )
    code, out, _ = run_cli(
        capsys,
        "diagnose",
        run_id,
        "--method",
        "path_aware",
        "--index",
        f"{spec}:index",
        "--json",
        "--store",
        path,
    )
    data = json.loads(out)
    assert data["hop"] == 2 and data["details"]["audit"]["hops"]["2"]["consistent"] is False
    assert data["cost"]["retrievals"] == 3


def test_human_output_and_saving(stored, capsys) -> None:
    path, run_id = stored
    code, out, _ = run_cli(capsys, "diagnose", run_id, "--method", "rule", "--save", "--store", path)
    assert code == 0 and "stage retrieval, hop 2" in out and "re-executions" in out
    with SqliteSpanStore(path, create=False) as store:
        records = store.get_records("diagnosis", run_id)
    assert records and records[-1]["method"] == "rule" and records[-1]["hop"] == 2


def test_probe_methods_need_a_graph_and_not_run_methods_exit_1(stored, capsys) -> None:
    path, run_id = stored
    code, _, err = run_cli(capsys, "diagnose", run_id, "--method", "frozen_hop", "--store", path)
    assert code == 2 and "needs a live agent: pass --graph" in err
    code, out, _ = run_cli(capsys, "diagnose", run_id, "--method", "llm_judge", "--json", "--store", path)
    assert code == 1 and json.loads(out)["ran"] is False
    code, _, err = run_cli(capsys, "diagnose", run_id, "--method", "rule", "--store", path + ".missing")
    assert code == 2 and "span store not found" in err
    code, _, err = run_cli(
        capsys, "diagnose", run_id, "--method", "rule", "--index", "nocolon", "--store", path
    )
    assert code == 2 and "index spec 'nocolon' must look like" in err
