"""``causal-mw demo`` and the instrumented reference agent read back from the span store."""

from __future__ import annotations

import json

import pytest

from benchmarks.cli import demo as demo_module
from benchmarks.models.offline import OfflineChatModel
from benchmarks.reference_agent import (
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_reference_agent,
    run_question,
)
from causal_middleware.cli.main import main
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore


def test_demo_records_annotated_runs_and_reports_accuracy(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo_module, "_dense_unavailable", lambda: "not installed in this test")
    store_path = tmp_path / "runs.db"
    code = main(
        [
            "demo",
            "--n",
            "4",
            "--seed",
            "1",
            "--repairs",
            "0",
            "--store",
            str(store_path),
            "--retriever",
            "both",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["world"]["n_questions"] == 4 and report["instrumented"] is True
    assert report["retrievers"]["dense"] == {"status": "skipped", "reason": "not installed in this test"}
    bm25 = report["retrievers"]["bm25"]
    assert bm25["status"] == "ok" and bm25["n"] == 4 and len(bm25["runs"]) == 4
    assert sum(v["n"] for v in bm25["by_hops"].values()) == 4
    assert bm25["correct"] == sum(r["correct"] for r in bm25["runs"])
    assert (tmp_path / "runs.checkpoints.db").exists()

    store = SqliteSpanStore(store_path, create=False)
    runs = {r.run_id: r for r in store.list_runs(limit=None)}
    assert set(runs) == {r["run_id"] for r in bm25["runs"]}
    for r in bm25["runs"]:
        assert runs[r["run_id"]].outcome.value == ("success" if r["correct"] else "failure")
        trajectory = store.get_trajectory(r["run_id"])
        assert trajectory.reference == r["reference"]
        assert trajectory.labels["question_id"] == r["question_id"]
        assert trajectory.labels["retriever"] == "bm25"
    store.close()


def test_demo_diagnoses_and_repairs_the_failed_runs(tmp_path, capsys):
    store_path = tmp_path / "runs.db"
    code = main(["demo", "--n", "20", "--seed", "0", "--repairs", "2", "--store", str(store_path), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    failed = [r for r in report["retrievers"]["bm25"]["runs"] if not r["correct"]]
    assert failed, "the 20-question world must hold a failure for the demo to show"
    repairs = report["repairs"]
    assert 1 <= len(repairs) <= 2 and {r["run_id"] for r in repairs} <= {r["run_id"] for r in failed}
    for r in repairs:
        assert r["status"] in ("repaired", "no_flip", "unvalidated")
        if r["status"] == "repaired":
            assert r["validated"] and r["node"] and r["change"] and r["answer_after"] is not None
    store = SqliteSpanStore(store_path, create=False)
    assert len(store.get_records("repair")) == len(repairs)
    store.close()
    repaired = sum(r["status"] == "repaired" for r in repairs)
    assert report["pairs"]["count"] == repaired
    if repaired:
        assert (tmp_path / "runs.pairs.jsonl").exists() and report["plot"].endswith(".png")


def test_demo_rejects_bad_options(tmp_path, capsys):
    assert main(["demo", "--n", "0", "--store", str(tmp_path / "x.db")]) == 2
    assert "--n" in capsys.readouterr().err


def test_instrumented_agent_hops_line_up_with_its_state(toy_world, toy_retriever):
    from causal_middleware import instrument

    store = InMemorySpanStore()
    graph = build_reference_agent(toy_retriever, OfflineChatModel(seed=0))
    agent = instrument(graph, store=store, hop_nodes=REFERENCE_HOP_NODES, answer_nodes=REFERENCE_ANSWER_NODES)
    q = toy_world.questions[4]
    run = run_question(agent, q)
    trajectory = store.get_trajectory(run.run_id)
    assert trajectory.answer == run.answer
    assert trajectory.reference == q.answer and trajectory.labels["question_id"] == q.id
    # hop h = decide -> retrieve -> read for each search, then the stop decision
    assert len(trajectory.hops) == len(run.queries) + 1
    for hop, record in zip(trajectory.hops, run.hops, strict=False):
        assert hop.sub_query == record["sub_query"]
        assert [d.id for d in hop.documents] == [d["id"] for d in record["documents"]]
        assert [s.node for s in hop.steps if s.kind == "node"] == ["decide", "retrieve", "read"]
    assert [s.node for s in trajectory.hops[-1].steps if s.kind == "node"] == ["decide"]
    assert trajectory.cost.retrievals == len(run.queries)
    assert trajectory.cost.input_tokens > 0 and trajectory.cost.output_tokens > 0
    llm = trajectory.steps_of("llm")[0]
    assert llm.model == "offline-0" and llm.usage.input_tokens > 0
    agent.shutdown()


@pytest.mark.parametrize("kind", ["bm25"])
def test_build_world_agent_picks_the_offline_model(toy_world, kind):
    from benchmarks.reference_agent import build_world_agent

    agent = build_world_agent(toy_world, retriever=kind)
    run = run_question(agent, toy_world.questions[0])
    assert run.answer
    with pytest.raises(ValueError, match="unknown retriever"):
        build_world_agent(toy_world, retriever="tfidf")
