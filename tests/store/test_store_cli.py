"""``causal-mw runs``: list, show, export, import, through ``main([...])``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from span_factory import BASE_NS, HOPS, fabricate_run, openinference_run

from causal_middleware.cli.main import main
from causal_middleware.store.base import RunSummary
from causal_middleware.store.sqlite import SqliteSpanStore

HOUR = 3600 * 10**9


@pytest.fixture
def db(tmp_path: Path) -> tuple[str, dict[str, str]]:
    path = tmp_path / "runs.db"
    ids = {}
    with SqliteSpanStore(path) as store:
        ids["base"], records = fabricate_run(
            thread_id="t1", outcome="failure", reference="Quarn", labels={"fault": "empty"}
        )
        store.write_spans(records)
        ids["fork"], records = fabricate_run(
            thread_id="t1", base_ns=BASE_NS + HOUR, parent_run_id=ids["base"], fail_hop=2, answer="Tessaly"
        )
        store.write_spans(records)
        store.annotate(ids["fork"], outcome="success")
    return str(path), ids


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_prints_a_table_newest_first(db, capsys) -> None:
    path, ids = db
    code, out, err = _run(capsys, "runs", "list", "--store", path)
    assert code == 0 and err == ""
    assert out.index(ids["fork"]) < out.index(ids["base"])
    for text in (
        "reference_agent",
        "failure",
        "success",
        "error",
        "Tessaly",
        "fault=empty",
        "run id",
        "hops",
    ):
        assert text in out


def test_list_json_and_filters(db, capsys) -> None:
    path, ids = db
    code, out, _ = _run(capsys, "runs", "list", "--json", "--store", path)
    rows = json.loads(out)
    assert code == 0 and [r["run_id"] for r in rows] == [ids["fork"], ids["base"]]
    assert set(rows[0]) == set(RunSummary.model_fields) | {"hops", "fork_hop"}
    assert (
        rows[1]["labels"] == {"fault": "empty"}
        and rows[1]["n_hops"] == 3
        and rows[0]["parent_run_id"] == ids["base"]
    )

    def listed(*extra: str) -> list[str]:
        return [
            r["run_id"]
            for r in json.loads(_run(capsys, "runs", "list", "--json", "--store", path, *extra)[1])
        ]

    assert listed("--outcome", "failure") == [ids["base"]]
    assert listed("--label", "fault=empty") == [ids["base"]]
    assert listed("--thread", "t1", "--limit", "1") == [ids["fork"]]
    assert listed("--parent", ids["base"]) == [ids["fork"]]
    assert listed("--thread", "nobody") == []
    code, out, _ = _run(capsys, "runs", "list", "--thread", "nobody", "--store", path)
    assert code == 0 and "no runs" in out


def test_show_prints_header_hop_table_and_answer(db, capsys) -> None:
    path, ids = db
    code, out, err = _run(capsys, "runs", "show", ids["fork"][:8], "--store", path)
    assert code == 0 and err == ""
    for text in (
        ids["fork"],
        "thread  t1",
        "Where was the founder of Zorvex Labs born?",
        "outcome  success",
        "132 in / 30 out tokens",
        f"fork of {ids['base']} at hop 2, node retrieve (frozen), intervention fault:empty_retrieval",
        "decide > retrieve > read",
        HOPS[1][0],
        "p1 (12.5)",
        "p9 (1.5)",
        "Ilka Morrow",
        "index unavailable at hop 2",
        "answer: Tessaly",
    ):
        assert text in out, text
    code, out, _ = _run(capsys, "runs", "show", ids["base"], "--store", path)
    assert "reference  Quarn" in out and "labels  fault=empty" in out and "lineage" not in out


def test_show_json_is_the_trajectory(db, capsys) -> None:
    path, ids = db
    code, out, _ = _run(capsys, "runs", "show", "--json", ids["base"], "--store", path)
    with SqliteSpanStore(path, create=False) as store:
        expected = store.get_trajectory(ids["base"]).model_dump(mode="json")
    assert code == 0 and json.loads(out) == expected


def test_unknown_or_ambiguous_runs_exit_2_with_one_line(db, capsys, tmp_path: Path) -> None:
    path, ids = db
    code, out, err = _run(capsys, "runs", "show", "feedfacefeed", "--store", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown run 'feedfacefeed'" in err
    with SqliteSpanStore(path) as store:
        store.write_spans(openinference_run("abcdef01" + "0" * 24) + openinference_run("abcdef02" + "0" * 24))
    code, _, err = _run(capsys, "runs", "show", "abcdef", "--store", path)
    assert code == 2 and "ambiguous" in err and err.count("\n") == 1


def test_a_missing_store_is_an_error_and_is_not_created(capsys, tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    for argv in (
        ["runs", "list"],
        ["runs", "show", "abcdef12"],
        ["runs", "export", "--out", str(tmp_path / "x.json")],
    ):
        code, out, err = _run(capsys, *argv, "--store", str(missing))
        assert code == 2 and out == "" and f"span store not found: {missing}" in err
    assert not missing.exists()


def test_export_then_import_into_another_store(db, capsys, tmp_path: Path) -> None:
    path, ids = db
    out_file = tmp_path / "export.json"
    code, out, _ = _run(capsys, "runs", "export", "--out", str(out_file), ids["base"][:10], "--store", path)
    assert code == 0 and out.strip() == f"exported 1 run to {out_file}"
    other = str(tmp_path / "other.db")
    code, out, _ = _run(capsys, "runs", "import", str(out_file), "--json", "--store", other)
    assert code == 0 and json.loads(out) == {"path": str(out_file), "run_ids": [ids["base"]]}
    with SqliteSpanStore(path, create=False) as a, SqliteSpanStore(other, create=False) as b:
        # spans as the file holds them (JSON lists as arrays, annotations on the root): same run
        assert len(b.get_spans(ids["base"])) == len(a.get_spans(ids["base"]))
        assert b.get_trajectory(ids["base"]) == a.get_trajectory(ids["base"])
    code, out, _ = _run(capsys, "runs", "export", "--json", "--out", str(out_file), "--store", path)
    assert json.loads(out)["run_ids"] == [ids["fork"], ids["base"]]


def test_importing_a_bad_file_exits_2_and_changes_nothing(db, capsys, tmp_path: Path) -> None:
    path, ids = db
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"')
    code, out, err = _run(capsys, "runs", "import", str(bad), "--store", path)
    assert code == 2 and "bad.json is not valid OTLP/JSON" in err
    with SqliteSpanStore(path, create=False) as store:
        assert {r.run_id for r in store.list_runs()} == set(ids.values())


def test_import_detects_trail_traces(capsys, tmp_path: Path, trail_dir: Path) -> None:
    trace = trail_dir / "0035f455b3ff2295167a844f04d85d34.json"
    store = str(tmp_path / "trail.db")
    code, out, _ = _run(capsys, "runs", "import", str(trace), "--store", store)
    assert code == 0 and "imported 1 run" in out and "0035f455b3ff2295167a844f04d85d34" in out
    code, out, _ = _run(capsys, "runs", "show", "0035f455", "--store", store)
    assert code == 0 and 'input  {"task": "You have one question to answer.' in out
    assert "answer: 33149" in out  # the outermost agent span's output
