"""The agent accuracy benchmark: scoring by hop count and retriever, and ``bench agent`` itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.suites.agent import AgentAnswer, format_agent_table, run_agent_accuracy_bench
from benchmarks.world.generator import generate_world
from causal_middleware.cli.main import main
from causal_middleware.tasks.model import Dataset, Question


def test_accuracy_by_hop_count_and_skipped_retrievers() -> None:
    dataset = generate_world(12, seed=1)
    wrong = {q.id for q in dataset.questions if q.n_hops >= 3}

    def make_agent(data: Dataset, retriever: str):  # type: ignore[no-untyped-def]
        if retriever == "dense":
            raise ImportError("the [dense] extra is not installed")

        def answer(question: Question) -> AgentAnswer:
            return AgentAnswer("nobody" if question.id in wrong else question.answer, question.n_hops)

        return answer

    result = run_agent_accuracy_bench(make_agent, dataset, retrievers=["bm25", "dense"], B=50)
    bm25 = result["retrievers"]["bm25"]
    assert bm25["n"] == 12 and bm25["correct"] == 12 - len(wrong)
    for hops, cell in bm25["by_hops"].items():
        assert cell["accuracy"] == (0.0 if int(hops) >= 3 else 1.0)
        assert cell["n"] == result["dataset"]["hop_counts"][hops]
    assert bm25["mean_searches"] == pytest.approx(sum(q.n_hops for q in dataset.questions) / 12, abs=1e-3)
    assert bm25["ci"][0] <= bm25["accuracy"] <= bm25["ci"][1]
    assert result["retrievers"]["dense"] == {
        "status": "skipped",
        "reason": "the [dense] extra is not installed",
    }
    table = format_agent_table(result)
    assert "| dense |" in table and "skipped" in table and f"({bm25['correct']}/12)" in table


def test_bad_input() -> None:
    empty = Dataset(name="empty", passages=[], questions=[])
    with pytest.raises(ValueError, match="no questions"):
        run_agent_accuracy_bench(lambda d, r: lambda q: AgentAnswer(None), empty)
    with pytest.raises(ValueError, match="retrievers is empty"):
        run_agent_accuracy_bench(lambda d, r: lambda q: AgentAnswer(None), generate_world(2), retrievers=[])


def test_bench_agent_on_the_reference_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "agent.json"
    assert main(["bench", "agent", "--n", "6", "--retrievers", "bm25", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    bm25 = result["retrievers"]["bm25"]
    assert bm25["status"] == "ok" and bm25["n"] == 6 and 0 < bm25["mean_searches"] <= 4
    assert result["agent"]["name"] == "reference_agent"
    assert "| bm25 |" in printed and str(out) in printed
