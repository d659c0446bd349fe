"""``bench fp``: the attribution benchmark end to end on a tiny world, and its pieces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.suites.fp import (
    DIAGNOSIS_RECORD,
    check_targets,
    default_diagnosers,
    make_diagnoser,
    parse_spec,
    run_fp_bench,
    write_fp_report,
)
from benchmarks.suites.fp_report import FPUnit, build_results
from causal_middleware.attribution.base import Diagnosis, DiagnosisCost
from causal_middleware.cli.main import main
from causal_middleware.faults.model import FaultLabel
from causal_middleware.store.sqlite import SqliteSpanStore

REQUIRED_KEYS = {"config", "recovery", "failed", "injected", "diagnosers", "outcomes", "mcnemar", "targets"}
# seed 3: both questions answered right, 3 failed traces at each depth
TINY = ["--n", "2", "--seed", "3", "--depths", "1", "2", "--bootstrap", "50", "--no-progress"]


@pytest.fixture(scope="module")
def fp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, dict]:
    """One real ``bench fp`` run: the reference agent, a SQLite store, three diagnosers."""
    out = tmp_path_factory.mktemp("fp")
    argv = ["bench", "fp", *TINY, "--diagnosers", "coverage", "path_aware", "llm_judge"]
    argv += ["--store", str(out / "runs.db"), "--out", str(out / "results.json")]
    code = main(argv)
    return code, out, json.loads((out / "results.json").read_text())


def test_bench_fp_writes_results_report_and_plot(fp_run: tuple[int, Path, dict]) -> None:
    code, out, results = fp_run
    assert code == 0
    assert REQUIRED_KEYS <= set(results)
    assert set(results["failed"]) == {"1", "2"} and sum(results["failed"].values()) > 0
    assert results["config"]["diagnosers"] == ["coverage", "path_aware", "llm_judge"]
    assert results["config"]["dataset"].startswith("world") and results["config"]["n_questions"] == 2
    for depth, failed in results["failed"].items():
        injected = results["injected"][depth]
        assert results["recovery"][depth] == pytest.approx(1 - failed / injected, abs=1e-4)
    pa = results["diagnosers"]["path_aware"]
    assert pa["run"] and pa["n"] == sum(results["failed"].values()) and set(pa["by_depth"]) == {"1", "2"}
    assert {"acc", "ci", "n", "descriptive"} <= set(pa["by_depth"]["1"])
    # the judge-less LLM diagnoser is reported, not faked
    judge = results["diagnosers"]["llm_judge"]
    assert judge["run"] is False and judge["n_ran"] == 0
    assert any("chat model" in r for r in judge["not_run_reasons"])
    assert len(results["traces"]) == pa["n"]
    assert all(t["predicted"]["llm_judge"] == "not run" for t in results["traces"])
    report = (out / "report.md").read_text()
    assert "Table 2" in report and "path_aware" in report and "## Targets" in report
    assert (out / "accuracy_by_depth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_fp_resumes_from_the_store(
    fp_run: tuple[int, Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same command on the same store re-runs neither the injection nor the diagnoses."""
    _, out, first = fp_run
    capsys.readouterr()
    argv = ["bench", "fp", *TINY, "--diagnosers", "coverage", "path_aware", "llm_judge"]
    code = main([*argv, "--store", str(out / "runs.db"), "--json"])
    assert code == 0
    again = json.loads(capsys.readouterr().out)
    assert again["sweep"]["resumed"] == again["sweep"]["units"] > 0
    assert again["timing"]["diagnoses_reused"] == 3 * sum(first["failed"].values())
    assert again["failed"] == first["failed"]
    assert again["diagnosers"]["path_aware"]["by_depth"] == first["diagnosers"]["path_aware"]["by_depth"]
    with SqliteSpanStore(out / "runs.db", create=False) as store:
        kept = [r for r in store.get_records(DIAGNOSIS_RECORD) if r["judge"] is None]
    assert len(kept) == 3 * sum(first["failed"].values())  # nothing diagnosed twice
    assert {r["spec"] for r in kept} == {"coverage", "path_aware", "llm_judge"}


def test_diagnosers_see_a_blinded_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever reaches a diagnoser carries no fault label, lineage or reference."""
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.world.generator import generate_world
    from causal_middleware.attribution.coverage import CoverageDiagnoser

    seen = []
    original = CoverageDiagnoser.diagnose

    def spy(self, trajectory, context=None):  # type: ignore[no-untyped-def]
        seen.append(trajectory)
        return original(self, trajectory, context)

    monkeypatch.setattr(CoverageDiagnoser, "diagnose", spy)
    results = run_fp_bench(
        lambda dataset, store: reference_sweep_environment(dataset, store=store, seed=3),
        generate_world(2, seed=3, hop_mix={3: 1.0}),
        depths=[1],
        seed=3,
        diagnosers=["coverage"],
        bootstrap_B=20,
    )
    assert len(seen) == results["failed"]["1"] > 0
    assert all(t.labels == {} and t.lineage is None and t.reference is None for t in seen)


def test_parse_spec_and_make_diagnoser() -> None:
    assert parse_spec("path_aware") == ("path_aware", {})
    assert parse_spec("path_aware:audit=false, max_probes=2") == (
        "path_aware",
        {"audit": False, "max_probes": 2},
    )
    assert parse_spec("rule:grounding_threshold=0.25") == ("rule", {"grounding_threshold": 0.25})
    assert make_diagnoser("path_aware:audit=false").audit is False  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("path_aware:audit")
    with pytest.raises(KeyError, match="unknown diagnoser 'nope'"):
        make_diagnoser("nope")
    with pytest.raises(ValueError, match="bad options for diagnoser 'coverage'"):
        make_diagnoser("coverage:colour=red")
    specs = default_diagnosers()
    assert "path_aware" in specs and "llm_judge" in specs and specs[-1] == "path_aware:audit=false"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depths": []}, "depths"),
        ({"depths": [0, 1]}, "depths"),
        ({"diagnosers": ["coverage", "coverage"]}, "named twice"),
        ({"diagnosers": ["no_such"]}, "unknown diagnoser"),
        ({"faults": "sideways"}, "unknown fault set"),
        ({"workers": 0}, "workers"),
    ],
)
def test_bad_arguments_fail_before_any_agent_runs(kwargs: dict, message: str) -> None:
    from benchmarks.world.generator import generate_world

    def never(dataset, store):  # type: ignore[no-untyped-def]
        raise AssertionError("the agent must not be built for bad arguments")

    with pytest.raises((ValueError, KeyError), match=message):
        run_fp_bench(never, generate_world(2, seed=0), **kwargs)


def test_cli_reports_bad_input_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "fp", "--n", "0"]) == 2
    assert "--n must be at least 1" in capsys.readouterr().err
    assert main(["bench", "fp", "--rediagnose"]) == 2
    assert "--rediagnose needs --store" in capsys.readouterr().err
    assert main(["bench", "fp", "--n", "1", "--diagnosers", "bogus"]) == 2
    assert "unknown diagnoser 'bogus'" in capsys.readouterr().err


def _unit(depth: int, recovered: bool, hops: dict[str, int | None], reexec: dict[str, int]) -> FPUnit:
    label = FaultLabel(
        family="empty_retrieval",
        stage="retrieval",
        requested_hop=depth,
        injected_hop=depth,
        base_run_id="b" * 32,
    )
    diagnoses = {
        name: Diagnosis(
            method=name, hop=hop, stage="retrieval", cost=DiagnosisCost(reexecutions=reexec[name])
        )
        for name, hop in hops.items()
    }
    return FPUnit(label=label, recovered=recovered, diagnoses={} if recovered else diagnoses, n_hops=3)


def _synthetic(n_per_depth: int, pa_right: int) -> dict:
    units = []
    for depth in (1, 2):
        for i in range(n_per_depth):
            hops = {
                "path_aware": depth if i < pa_right else 3,
                "frozen_hop": 3,
                "suffix_regen": 1,
                "coverage": 1,
            }
            reexec = {"path_aware": 1, "frozen_hop": 3, "suffix_regen": 2, "coverage": 0}
            units.append(_unit(depth, False, hops, reexec))
        units.append(_unit(depth, True, {}, {}))
    names = ["path_aware", "frozen_hop", "suffix_regen", "coverage"]
    return build_results(units, names, {"dataset": "synthetic"}, B=50)


def test_targets_are_checked_against_the_numbers() -> None:
    good = check_targets(_synthetic(20, 17))
    assert good["failed_per_depth"]["met"] is True and good["failed_per_depth"]["value"] == {"1": 20, "2": 20}
    assert good["path_aware_acc"] == {
        "target": ">= 0.8 at every depth",
        "value": {"1": 0.85, "2": 0.85},
        "met": True,
    }
    # path_aware 34 correct for 40 re-executions; frozen_hop never right (unbounded), suffix_regen 20 for 80
    assert good["path_aware_cheaper"]["met"] is True
    assert good["path_aware_cheaper"]["value"]["frozen_hop"] is None
    assert good["coverage_pattern"]["value"] == {"1": 1.0, "2": 0.0}
    bad = check_targets(_synthetic(5, 3))
    assert bad["failed_per_depth"]["met"] is False and bad["path_aware_acc"]["met"] is False


def test_write_fp_report_names_files_beside_the_json(tmp_path: Path) -> None:
    results = _synthetic(3, 2)
    results["targets"] = check_targets(results)
    in_dir = write_fp_report(results, tmp_path / "d")
    assert [p.name for p in in_dir.values()] == ["results.json", "report.md", "accuracy_by_depth.png"]
    named = write_fp_report(results, tmp_path / "bench" / "fp.json")
    assert [p.name for p in named.values()] == ["fp.json", "fp_report.md", "fp_accuracy_by_depth.png"]
    plain = write_fp_report(results, tmp_path / "x" / "results.json")
    assert plain["markdown"].name == "report.md"
    assert json.loads(named["json"].read_text())["failed"] == {"1": 3, "2": 3}
    assert "path_aware_acc" in named["markdown"].read_text()


def test_memoized_encoder_encodes_each_query_once_with_the_same_vectors() -> None:
    import numpy as np

    from benchmarks.suites.fp import MemoizedEncoder
    from benchmarks.world.generator import generate_world
    from causal_middleware.retrieval.dense import DenseIndex, HashingEncoder

    class Counting(HashingEncoder):
        calls: list[int] = []

        def encode(self, texts):  # type: ignore[no-untyped-def]
            self.calls.append(len(texts))
            return super().encode(texts)

    inner = Counting(64)
    memo = MemoizedEncoder(inner)
    assert (memo.id, memo.dim) == (inner.id, 64)
    first = memo.encode(["Who founded Quanta Works?"])
    again = memo.encode(["Who founded Quanta Works?"])
    assert np.array_equal(first, again) and first.shape == (1, 64)
    assert np.array_equal(first, HashingEncoder(64).encode(["Who founded Quanta Works?"]))
    assert inner.calls == [1] and memo.hits == 1
    again[0, 0] = 99.0  # callers get copies
    assert memo.encode(["Who founded Quanta Works?"])[0, 0] != 99.0
    memo.encode(["a", "b"])  # batches pass through, unremembered
    assert inner.calls == [1, 2]

    passages = generate_world(3, seed=0).passages
    plain = DenseIndex(passages, encoder=HashingEncoder(64), use_cache=False)
    cached = DenseIndex(passages, encoder=MemoizedEncoder(HashingEncoder(64)), use_cache=False)
    query = passages[0].text
    assert [h.passage.id for h in cached.search(query, 3)] == [h.passage.id for h in plain.search(query, 3)]
    with pytest.raises(TypeError, match="encoder must have"):
        MemoizedEncoder(object())


def test_a_judge_model_runs_the_llm_diagnosers(
    fp_run: tuple[int, Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--judge module:attr`` hands a chat model to the LLM diagnosers (here a scripted one that
    always blames hop 1), which then run and are scored like the others. The injection is reused
    from the first run's store; the judge-less diagnoses kept there are not."""
    judge = tmp_path / "judge.py"
    judge.write_text(
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "def judge():\n"
        '    reply = \'{"stage": "retrieval", "hop": 1, "propagation": false, "severity": 0.5,\'\n'
        '    reply += \' "root_cause": "hop 1 retrieved the wrong evidence"}\'\n'
        "    return FakeListChatModel(responses=[reply])\n"
    )
    argv = ["bench", "fp", *TINY[:4], "--depths", "1", "--bootstrap", "20", "--no-progress"]
    store = ["--store", str(fp_run[1] / "runs.db")]
    capsys.readouterr()
    assert main([*argv, *store, "--diagnosers", "llm_judge", "--judge", f"{judge}:judge", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert (
        results["sweep"]["resumed"] == results["sweep"]["units"]
        and results["timing"]["diagnoses_reused"] == 0
    )
    entry = results["diagnosers"]["llm_judge"]
    assert entry["run"] is True and entry["n_ran"] == entry["n"] == results["failed"]["1"] > 0
    assert entry["by_depth"]["1"]["acc"] == 1.0 and entry["totals"]["llm_calls"] == entry["n"]
    assert results["config"]["judge"] == f"{judge}:judge"


def test_a_claude_judge_needs_an_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.cli.bench import load_judge

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="needs \\$ANTHROPIC_API_KEY"):
        load_judge("claude-haiku-4-5")
