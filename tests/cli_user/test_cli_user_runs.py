"""``causal-mw runs`` on a user's own agent: the outcome derived at record time from a reference,
``runs annotate``, ``runs list --parent PREFIX`` and forks' hop counts, tool calls in ``runs show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from causal_middleware import instrument
from causal_middleware.cli.main import main
from causal_middleware.spans.health import health
from causal_middleware.store.sqlite import SqliteSpanStore


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _listed(capsys: pytest.CaptureFixture[str], store: str, *extra: str) -> list[dict[str, Any]]:
    code, out, err = _run(capsys, "runs", "list", "--json", "--store", store, *extra)
    assert code == 0, err
    return json.loads(out)


# --- outcome at record time ------------------------------------------------------------------
def test_a_reference_gives_the_run_an_outcome_at_record_time(recorded, capsys) -> None:
    store = recorded["store"]
    failed = [r["run_id"] for r in _listed(capsys, store, "--outcome", "failure")]
    succeeded = [r["run_id"] for r in _listed(capsys, store, "--outcome", "success")]
    unknown = [r["run_id"] for r in _listed(capsys, store, "--outcome", "unknown")]
    assert failed == [recorded["wrong"]]
    assert succeeded == [recorded["right"]]
    assert unknown == [recorded["plain"]]  # no reference: no outcome
    with SqliteSpanStore(store, create=False) as s:
        wrong = s.get_trajectory(recorded["wrong"])
    assert wrong.answer == "Paris and Rome" and wrong.reference == "Paris and Madrid"
    assert wrong.outcome is not None and wrong.outcome.value == "failure"


def test_the_outcome_fails_open(user_agent: Path, tmp_path: Path, monkeypatch) -> None:
    """A correctness rule that raises never reaches the user's invoke: the run is recorded with
    no outcome and the error is counted in the health record."""
    from causal_middleware.integrations.langgraph.replayer import load_graph

    import causal_middleware.tasks.scoring as scoring

    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("scoring is broken")

    monkeypatch.setattr(scoring, "answer_matches", broken)
    graph = instrument(load_graph(f"{user_agent}:graph"), store=str(tmp_path / "r.db"))
    try:
        out = graph.invoke(
            {"question": "Capitals of France and Spain?"},
            {"configurable": {"thread_id": "x"}, "metadata": {"causal_reference": "Paris and Madrid"}},
        )
        trajectory = graph.store.get_trajectory(graph.last_run_id)
    finally:
        graph.shutdown()
    assert out["answer"] == "Paris and Madrid"
    assert trajectory.answer == "Paris and Madrid" and trajectory.outcome is None
    assert health.errors.get("handler.outcome") == 1
    assert "scoring is broken" in (health.last_error("handler.outcome") or "")


# --- runs annotate ---------------------------------------------------------------------------
def test_annotate_sets_the_outcome_by_prefix_and_list_filters_on_it(recorded, capsys) -> None:
    store, plain = recorded["store"], recorded["plain"]
    code, out, err = _run(
        capsys,
        "runs",
        "annotate",
        plain[:8],
        "--outcome",
        "failure",
        "--reference",
        "Madrid and Rome",
        "--label",
        "reviewer=ana",
        "--label",
        "ticket=42",
        "--json",
        "--store",
        store,
    )
    assert code == 0 and err == ""
    assert json.loads(out) == {
        "run_id": plain,
        "outcome": "failure",
        "reference": "Madrid and Rome",
        "labels": {"reviewer": "ana", "ticket": "42"},
    }
    failed = {r["run_id"] for r in _listed(capsys, store, "--outcome", "failure")}
    assert failed == {plain, recorded["wrong"]}
    assert [r["run_id"] for r in _listed(capsys, store, "--label", "reviewer=ana")] == [plain]
    code, out, _ = _run(capsys, "runs", "show", plain, "--store", store)
    assert "outcome  failure" in out and "reference  Madrid and Rome" in out


def test_annotate_overrides_the_derived_outcome(recorded, capsys) -> None:
    store, wrong = recorded["store"], recorded["wrong"]
    code, out, err = _run(capsys, "runs", "annotate", wrong, "--outcome", "success", "--store", store)
    assert code == 0 and err == "" and out.startswith(f"annotated {wrong}: outcome success")
    assert recorded["wrong"] in {r["run_id"] for r in _listed(capsys, store, "--outcome", "success")}
    assert _listed(capsys, store, "--outcome", "failure") == []
    code, _, _ = _run(capsys, "runs", "annotate", wrong, "--outcome", "unknown", "--store", store)
    assert code == 0
    assert wrong in {r["run_id"] for r in _listed(capsys, store, "--outcome", "unknown")}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--outcome", "broken"], "unknown outcome 'broken'"),
        (["--outcome", "failure", "--label", "no-equals"], "--label must look like KEY=VALUE"),
        ([], "nothing to annotate"),
    ],
)
def test_annotate_bad_input_is_one_line_exit_2_and_writes_nothing(recorded, capsys, extra, message) -> None:
    store, plain = recorded["store"], recorded["plain"]
    with SqliteSpanStore(store, create=False) as s:
        before = s.get_trajectory(plain).model_dump(mode="json")
    code, out, err = _run(capsys, "runs", "annotate", plain, *extra, "--store", store)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("causal-mw: error:")
    assert message in err
    with SqliteSpanStore(store, create=False) as s:
        assert s.get_trajectory(plain).model_dump(mode="json") == before


def test_annotate_unknown_run_or_missing_store(recorded, capsys, tmp_path: Path) -> None:
    code, out, err = _run(
        capsys, "runs", "annotate", "feedfacefeed", "--outcome", "failure", "--store", recorded["store"]
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "unknown run 'feedfacefeed'" in err
    missing = tmp_path / "nope.db"
    code, _, err = _run(
        capsys, "runs", "annotate", "abcdef12", "--outcome", "failure", "--store", str(missing)
    )
    assert code == 2 and "span store not found" in err and not missing.exists()


# --- forks in runs list ----------------------------------------------------------------------
def test_forks_show_their_hop_count_and_parent_takes_a_prefix(recorded, capsys) -> None:
    store, right = recorded["store"], recorded["right"]
    code, out, err = _run(
        capsys,
        "replay",
        right[:10],
        "--graph",
        f"{recorded['agent']}:graph",
        "--hop",
        "2",
        "--set",
        '{"capitals": ["Paris", "Lyon"]}',
        "--store",
        store,
        "--json",
    )
    assert code == 0, err
    fork = json.loads(out)["run_id"]
    rows = _listed(capsys, store, "--parent", right[:8])
    assert [r["run_id"] for r in rows] == [fork]
    row = rows[0]
    # the fork's own spans hold none of the hops (the intervened fetch did not run): the count is
    # the whole run's, stitched onto its parent
    assert row["n_hops"] == 0 and row["hops"] == 2 and row["fork_hop"] == 2
    assert row["parent_run_id"] == right and row["answer"] == "Paris and Lyon"
    assert row["outcome"] == "failure"  # the fork inherits the reference: judged at record time
    plain_rows = {r["run_id"]: r for r in _listed(capsys, store)}
    assert plain_rows[right]["hops"] == 2 and plain_rows[right]["fork_hop"] is None
    code, out, _ = _run(capsys, "runs", "list", "--parent", right[:8], "--store", store)
    assert code == 0 and "fork of" in out and f"{right[:12]} @ hop 2" in out
    line = next(line for line in out.splitlines() if fork in line)
    assert " 2 " in line  # the hops column
    code, _, err = _run(capsys, "runs", "list", "--parent", "zz", "--store", store)
    assert code == 2 and err.count("\n") == 1 and "unknown run 'zz'" in err


def test_list_help_documents_the_json_keys(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["runs", "list", "--help"])
    out = capsys.readouterr().out
    for key in ("run_id", "outcome", "n_hops", "hops", "fork_hop", "parent_run_id", "labels"):
        assert key in out


# --- tool calls in runs show -----------------------------------------------------------------
def test_show_lists_tool_calls_with_args_and_outputs(recorded, capsys) -> None:
    store, wrong = recorded["store"], recorded["wrong"]
    code, out, err = _run(capsys, "runs", "show", wrong[:8], "--store", store)
    assert code == 0 and err == ""
    tools = out[out.index("tool calls") :]
    rows = [line for line in tools.splitlines() if "lookup" in line]
    assert len(rows) == 2
    assert '{"country": "France"}' in rows[0] and "Paris" in rows[0] and "fetch" in rows[0]
    assert '{"country": "Italy"}' in rows[1] and "Rome" in rows[1]
    code, out, _ = _run(capsys, "runs", "show", wrong, "--json", "--store", store)
    steps = [s for s in json.loads(out)["steps"] if s["kind"] == "tool"]
    assert [(s["tool_name"], s["args"], s["output"], s["node"], s["hop"]) for s in steps] == [
        ("lookup", {"country": "France"}, "Paris", "fetch", 1),
        ("lookup", {"country": "Italy"}, "Rome", "fetch", 2),
    ]
