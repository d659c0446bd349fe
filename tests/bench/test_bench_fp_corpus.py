"""``bench fp --site corpus`` and the agent-model options of ``bench fp`` / ``bench agent``."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

import benchmarks.suites.fp as fp
from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.attribution.base import Diagnosis, DiagnosisContext
from causal_middleware.cli.main import main
from causal_middleware.spans.model import Trajectory

TINY = ["--n", "2", "--seed", "3", "--depths", "1", "2", "--bootstrap", "50", "--no-progress"]


def test_bench_fp_on_corpus_faults_scores_every_failed_trace(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    argv = ["bench", "fp", *TINY, "--faults", "all", "--site", "corpus", "--natural"]
    assert main([*argv, "--diagnosers", "rule", "path_aware", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["config"]["site"] == "corpus" and results["config"]["mode"] == "offline"
    # of every family, only those that write a passage have a corpus form
    assert results["config"]["families"] == ["false_premise", "stale_evidence", "content_corruption"]
    assert results["sweep"]["site"] == "corpus"
    failed = sum(results["failed"].values())
    assert failed > 0
    assert results["diagnosers"]["path_aware"]["n"] == failed
    assert {t["family"] for t in results["traces"]} <= {
        "content_corruption",
        "false_premise",
        "stale_evidence",
    }
    profile = results["susceptibility"]
    assert sum(r["injected"] for r in profile.values()) == sum(results["injected"].values())
    assert sum(r["injected"] - r["recovered"] for r in profile.values()) == failed
    base = results["base"]
    assert base["questions"] == 2 and base["correct"] + base["natural_failures"] == 2
    assert results["natural"]["failures"] == base["natural_failures"]


class _Spy:
    """A diagnoser that checks, for every document of the run, that the context's index returns it
    with the very text the run saw (true only inside the run's own corpus)."""

    name = "spy"

    def __init__(self, seen: list[bool]) -> None:
        self.seen = seen

    def diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        for hop in trajectory.hops:
            for d in hop.documents:
                hits = context.index.search(d.text, 1)
                self.seen.append(bool(hits) and hits[0].passage.text == d.text)
        return Diagnosis(method="spy", hop=1, stage="retrieval")


def _spy_run(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []
    monkeypatch.setattr(fp, "make_diagnoser", lambda spec: _Spy(seen))
    world = generate_world(3, seed=3, hop_mix={3: 1.0})
    build = lambda dataset, store: reference_sweep_environment(dataset, store=store, seed=3)  # noqa: E731
    results = fp.run_fp_bench(
        build, world, depths=[1], faults="content", site="corpus", diagnosers=["spy"], bootstrap_B=20
    )
    assert sum(results["failed"].values()) > 0
    return seen


def test_failed_corpus_runs_are_diagnosed_inside_their_own_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy_run(monkeypatch)
    assert seen and all(seen)
    # without the private corpus the corrupted passages come back clean: the check can fail
    monkeypatch.setattr(fp, "_corpus_of", lambda env, upserts: contextlib.nullcontext())
    assert not all(_spy_run(monkeypatch))


def test_agent_model_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "fp", "--n", "1", "--site", "corpus", "--faults", "content", "--depths", "0"]) == 2
    assert "depths" in capsys.readouterr().err
    assert main(["bench", "fp", "--n", "1", "--executor", "ray", "--model", "local"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["bench", "agent", "--n", "1", "--model", "nonsense"]) == 2
    assert "nonsense" in capsys.readouterr().err
    assert main(["bench", "agent", "--n", "1", "--dataset", "hotpotqa", "--plan", "gold"]) == 2
    assert "not questions" in capsys.readouterr().err
    assert main(["bench", "repair", "--out", "x.json", "--model", "local", "--executor", "ray"]) == 2
    assert "offline model" in capsys.readouterr().err


def test_bench_repair_takes_the_agent_model_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, store = tmp_path / "repair.json", tmp_path / "runs.db"
    argv = ["bench", "repair", "--n", "6", "--inject-questions", "0", "--plan", "gold", "--out", str(out)]
    assert main([*argv, "--store", str(store)]) == 0
    results = json.loads(out.read_text())
    config = results["config"]
    assert (config["model"], config["plan"], config["mode"]) == ("offline", "gold", "offline_gold_plan")
    assert config["store"] == str(store) and config["executor"] == "local"
    # the store keeps every run: the base runs and each failed run's probes, re-runs and repair
    from causal_middleware.store.sqlite import SqliteSpanStore

    with SqliteSpanStore(store, create=False, read_only=True) as kept:
        runs = kept.list_runs(limit=None)
        base = [r for r in runs if r.parent_run_id is None]
        assert len(base) == 6
        failed = {r["run_id"] for r in results["runs"]}
        assert failed <= {r.run_id for r in base}
        if any(r["reexecutions"] for r in results["runs"]):
            assert {r.parent_run_id for r in runs if r.parent_run_id} & failed
    before = store.stat().st_size
    assert main([*argv, "--store", str(store)]) == 2  # no resume: a kept store is never written to
    assert "already exists" in capsys.readouterr().err and store.stat().st_size == before
    remote = ["bench", "repair", "--n", "6", "--out", str(out), "--executor", "process"]
    assert main([*remote, "--store", str(tmp_path / "other.db")]) == 2
    assert "--executor local only" in capsys.readouterr().err and not (tmp_path / "other.db").exists()


def test_a_sampled_agent_model_draws_a_fresh_seed_per_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--temperature`` with a ``--model``: the model samples, and a model that takes a seed per call
    (a local model's ``seed_per_call``) gets one, so a validation re-run is a fresh draw."""
    from benchmarks.cli.bench import agent_model

    spec = tmp_path / "models.py"
    spec.write_text(
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "class Sampling(FakeListChatModel):\n"
        "    temperature: float = 0.0\n"
        "    seed: int = 0\n"
        "    seed_per_call: bool = False\n"
        "def sampling():\n"
        "    return Sampling(responses=['x'])\n"
        "def unsampled():\n"
        "    return FakeListChatModel(responses=['x'])\n"
    )
    model = agent_model(f"{spec}:sampling", seed=4, temperature=0.5)
    assert (model.temperature, model.seed, model.seed_per_call) == (0.5, 4, True)  # type: ignore[union-attr]
    greedy = agent_model(f"{spec}:sampling", seed=4)
    assert (greedy.temperature, greedy.seed_per_call) == (0.0, False)  # type: ignore[union-attr]
    argv = ["bench", "repair", "--out", str(tmp_path / "r.json"), "--n", "2", "--temperature", "0.5"]
    assert main([*argv, "--model", f"{spec}:unsampled"]) == 2
    err = capsys.readouterr().err
    assert "has no temperature" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.json").exists()


def test_bench_agent_with_the_gold_plan_reports_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "agent.json"
    argv = ["bench", "agent", "--n", "6", "--retrievers", "bm25", "--plan", "gold", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["agent"]["plan"] == "gold" and result["agent"]["mode"] == "offline_gold_plan"
    bm25 = result["retrievers"]["bm25"]
    # the plan has one step per gold hop, and decide issues exactly those (decide making no model
    # call is asserted in tests/agent/test_plan_and_execute.py)
    searches = sum(int(hops) * count for hops, count in result["dataset"]["hop_counts"].items())
    assert bm25["n"] == 6 and bm25["mean_searches"] == pytest.approx(searches / 6)


def test_a_real_model_run_prints_its_expected_time_first() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from benchmarks.cli.bench import expected_time

    world = generate_world(3, seed=0, hop_mix={2: 1.0})
    line = expected_time(
        GenericFakeChatModel(messages=iter([AIMessage("SUBQUERY: x")] * 2)), world, [1, 2], "content"
    )
    # 3 two-hop questions: 3 x 6 base calls; forks: 3 x 6 at depth 1 + 3 x 4 at depth 2, per family
    # content is one family (content corruption)
    assert "about 48 calls" in line
    # at the corpus site only the three families that write a passage count: 18 + 3 x 30
    corpus = expected_time(
        GenericFakeChatModel(messages=iter([AIMessage("x")] * 2)), world, [1, 2], "all", "corpus"
    )
    assert "about 108 calls" in corpus
    # with the gold plan decide needs no model: one call a hop plus the answer
    plan = expected_time(
        GenericFakeChatModel(messages=iter([AIMessage("x")] * 2)), world, [1, 2], "content", gold_plan=True
    )
    assert "about 24 calls" in plan  # 3 x 3 base + 3 x 3 at depth 1 + 3 x 2 at depth 2
