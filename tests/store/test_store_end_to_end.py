"""End to end: the instrumented reference agent writes to the SQLite store; what the store gives back
matches what the agent did, and survives an OTLP/JSON round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "benchmarks.reference_agent",
    reason="the reference agent is not in this checkout",
)

from benchmarks.reference_agent import (  # noqa: E402
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    build_world_agent,
    run_question,
)
from benchmarks.world.generator import generate_world  # noqa: E402
from causal_middleware import instrument  # noqa: E402
from causal_middleware.cli.main import main  # noqa: E402
from causal_middleware.store.memory import InMemorySpanStore  # noqa: E402
from causal_middleware.store.sqlite import SqliteSpanStore  # noqa: E402


def test_instrumented_runs_read_back_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = generate_world(4, seed=0)
    path = tmp_path / "runs.db"
    store = SqliteSpanStore(path)
    agent = instrument(
        build_world_agent(dataset),
        store=store,
        hop_nodes=REFERENCE_HOP_NODES,
        answer_nodes=REFERENCE_ANSWER_NODES,
    )
    runs = [run_question(agent, q) for q in dataset.questions[:2]]
    agent.shutdown()

    with SqliteSpanStore(path, create=False) as reader:
        listed = reader.list_runs()
        assert [r.run_id for r in listed] == [run.run_id for run in reversed(runs)]
        for question, run in zip(dataset.questions, runs, strict=False):
            t = reader.get_trajectory(run.run_id)
            assert (t.thread_id, t.answer, t.reference) == (run.thread_id, run.answer, question.answer)
            assert t.labels["question_id"] == question.id
            searched = [h for h in t.hops if h.documents]
            assert [h.sub_query for h in searched] == run.queries
            assert [[d.id for d in h.documents] for h in searched] == [
                [d["id"] for d in record["documents"]] for record in run.hops
            ]
            assert [d.score for d in searched[0].documents] == [d["score"] for d in run.hops[0]["documents"]]
            assert t.cost.llm_calls > 0 and t.cost.retrievals == len(run.queries)

        export = tmp_path / "runs.json"
        reader.export_otlp_json(export)
        copy = InMemorySpanStore()
        copy.import_otlp_json(export)
        for run in runs:
            assert copy.get_trajectory(run.run_id) == reader.get_trajectory(run.run_id)

    assert main(["runs", "show", runs[0].run_id[:8], "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert runs[0].queries[0] in out and f"answer: {runs[0].answer}" in out
