"""The repair benchmark: metrics on hand-made rows, and a tiny end-to-end run on the reference agent."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.suites.repair import (
    METRIC_KEYS,
    FailedRun,
    format_repair_table,
    run_repair_bench,
    summarize,
)
from benchmarks.world.generator import generate_world
from causal_middleware.store.memory import InMemorySpanStore


def _row(
    status: str,
    minimality: float | None,
    reexec: int,
    naive: int,
    flagged: int,
    validated: int,
    node: str | None = None,
) -> FailedRun:
    return FailedRun(
        repaired_node=node,
        run_id="r",
        kind="natural",
        question_id="q",
        status=status,
        minimality=minimality,
        flagged=flagged,
        flagged_validated=validated,
        reexecutions=reexec,
        naive_reexecutions=naive,
    )


def test_summary_metrics_on_hand_made_rows() -> None:
    rows = [
        _row("repaired", 0.9, 4, 18, 1, 1, "decide"),
        _row("repaired", 0.5, 6, 18, 1, 1, "retrieve"),
        _row("repaired", 0.0, 2, 18, 1, 1, "decide"),
        _row("unvalidated", None, 8, 18, 1, 0),
        _row("no_flip", None, 12, 18, 0, 0),
    ]
    out = summarize(rows, population=10, succeeded=6)
    assert out["n_failed"] == 5 and out["n_repaired"] == 3
    assert out["repair_rate"] == 0.6
    assert out["accuracy_before"] == 0.6 and out["post_repair_accuracy"] == 0.9
    assert out["minimality_mean"] == pytest.approx(1.4 / 3, abs=1e-4)
    assert out["minimality_by_node"] == {"decide": 0.45, "retrieve": 0.5}
    assert out["zero_minimality_repairs"] == 1
    assert out["crs_precision"] == pytest.approx(3 / 4, abs=1e-4)
    assert out["reexec_per_repaired"] == pytest.approx(32 / 3, abs=1e-4)  # 32 forks on 5 failures, 3 repaired
    assert out["naive_reexec_per_repaired"] == 30.0
    assert out["reexec_ratio"] == pytest.approx(32 / 90, abs=1e-4)
    empty = summarize([])
    assert empty["n_failed"] == 0 and empty["repair_rate"] is None


def test_validation_summary_counts_the_flips_that_held_and_the_re_runs_that_flipped() -> None:
    def row(status: str, **kw: Any) -> FailedRun:
        return FailedRun(run_id="r", kind="natural", question_id="q", status=status, **kw)

    rows = [
        row("repaired", minimality=0.9, validation_flips=2, validation_runs=3, rejected=1),
        row("repaired", minimality=0.5, validation_flips=3, validation_runs=3),
        row("unvalidated", rejected=2),
        row("no_flip"),
    ]
    assert summarize(rows)["validation"] == {
        "revalidated": 5,
        "rejected": 3,
        "held_rate": 0.4,
        "rerun_flip_rate": round(5 / 6, 4),
        "holdout": None,  # no held-out re-runs were made
        "control": None,  # nor any control
    }
    assert summarize([])["validation"]["held_rate"] is None


def test_holdout_summary_counts_the_kept_repairs_that_still_flip() -> None:
    def row(**kw: Any) -> FailedRun:
        return FailedRun(run_id="r", kind="natural", question_id="q", status="repaired", minimality=0.5, **kw)

    rows = [
        row(validation_flips=3, validation_runs=3, holdout_runs=5, holdout_flips=5, holdout_held=True),
        row(validation_flips=2, validation_runs=3, holdout_runs=5, holdout_flips=1, holdout_held=False),
        row(validation_flips=2, validation_runs=3),  # kept before held-out re-runs were asked for
    ]
    assert summarize(rows)["validation"]["holdout"] == {
        "repairs": 2,
        "runs": 10,
        "flips": 6,
        "flip_rate": 0.6,
        "held": 1,
    }


def test_control_summary_counts_the_repairs_that_beat_their_unrepaired_suffix() -> None:
    def row(**kw: Any) -> FailedRun:
        return FailedRun(run_id="r", kind="natural", question_id="q", status="repaired", minimality=0.5, **kw)

    rows = [
        # held out 4 / 5 against a control of 1 / 5: beaten
        row(
            validation_flips=3,
            validation_runs=3,
            holdout_runs=5,
            holdout_flips=4,
            control_runs=5,
            control_flips=1,
        ),
        # held out 2 / 5 against 2 / 5: not beaten (the held-out rate, not the validation's, is compared)
        row(
            validation_flips=3,
            validation_runs=3,
            holdout_runs=5,
            holdout_flips=2,
            control_runs=5,
            control_flips=2,
        ),
        # no held-out re-runs: the validation's 2 / 3 against 0 / 4
        row(validation_flips=2, validation_runs=3, control_runs=4, control_flips=0),
        row(validation_flips=2, validation_runs=3),  # no control asked for
    ]
    assert summarize(rows)["validation"]["control"] == {
        "repairs": 3,
        "runs": 14,
        "flips": 3,
        "flip_rate": round(3 / 14, 4),
        "beaten": 2,
    }


def test_holdout_re_runs_each_kept_repair_and_judges_it_against_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.suites import repair as suite
    from causal_middleware.repair.service import RepairConfig

    made: list[Any] = []
    real = suite.repair_run

    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(suite, "repair_run", spy)
    world = generate_world(4, seed=0, hop_mix={2: 1.0})
    env = reference_sweep_environment(world, store=InMemorySpanStore(), seed=0)
    try:
        results = run_repair_bench(
            env,
            inject_questions=2,
            families=("false_premise",),
            depths=(1,),
            holdout_runs=2,
            control_runs=2,
        )
        kept = [r for r in results["runs"] if r["status"] == "repaired"]
        assert kept, "false_premise at hop 1 of a 2-hop world leaves a repairable failure"
        # the offline agent is deterministic: each held-out re-run repeats the repair's fork
        assert all(r["holdout_runs"] == 2 and r["holdout_flips"] == 2 and r["holdout_held"] for r in kept)
        assert all(r["holdout_runs"] is None for r in results["runs"] if r["status"] != "repaired")
        holdout = results["validation"]["holdout"]
        assert holdout == {
            "repairs": len(kept),
            "runs": 2 * len(kept),
            "flips": 2 * len(kept),
            "flip_rate": 1.0,
            "held": len(kept),
        }
        assert results["config"]["holdout_runs"] == 2 and results["config"]["control_runs"] == 2
        # without the repair the same suffix fails again on the deterministic agent, every time
        assert all(r["control_runs"] == 2 and r["control_flips"] == 0 for r in kept)
        assert results["validation"]["control"] == {
            "repairs": len(kept),
            "runs": 2 * len(kept),
            "flips": 0,
            "flip_rate": 0.0,
            "beaten": len(kept),
        }
        # the same re-runs judged against a reference the agent never gives: none flips, none holds
        result = next(r for r in made if r.repair is not None)
        row = next(r for r in results["runs"] if r["run_id"] == result.run_id)
        question = next(q for q in world.questions if q.id == row["question_id"])
        wrong = question.model_copy(update={"answer": "Nobody Atall Ever", "aliases": []})
        again = suite._with_holdout(FailedRun(**row), env, result, wrong, RepairConfig(), 3)
        assert (again.holdout_runs, again.holdout_flips, again.holdout_held) == (3, 0, False)
    finally:
        env.close()


@pytest.mark.parametrize("flag", ["--holdout-runs", "--control-runs"])
def test_bench_repair_cli_rejects_negative_re_runs(tmp_path, capsys, flag) -> None:  # type: ignore[no-untyped-def]
    from causal_middleware.cli.main import main

    out = tmp_path / "r.json"
    assert main(["bench", "repair", "--out", str(out), flag, "-1"]) == 2
    assert f"{flag} must be at least 0, got -1" in capsys.readouterr().err
    assert not out.exists()


def test_tiny_benchmark_on_the_reference_agent() -> None:
    env = reference_sweep_environment(generate_world(6, seed=0), store=InMemorySpanStore(), seed=0)
    try:
        results = run_repair_bench(env, inject_questions=3, families=("content_corruption",), depths=(1,))
    finally:
        env.close()
    for key in METRIC_KEYS:
        assert key in results and key in results["natural"] and key in results["injected"]
    assert results["config"]["questions"] == 6 and results["config"]["inject_questions"] == 3
    injected = results["injected"]
    assert (
        injected["units_done"]
        >= injected["n_failed"]
        == len([r for r in results["runs"] if r["kind"] == "injected"])
    )
    assert results["n_failed"] == results["natural"]["n_failed"] + injected["n_failed"]
    if injected["n_failed"]:
        assert injected["repair_rate"] is not None
    assert "| repair_rate |" in format_repair_table(results)


def test_bench_repair_cli_rejects_a_temperature_out_of_range(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from causal_middleware.cli.main import main

    out = tmp_path / "r.json"
    assert main(["bench", "repair", "--out", str(out), "--temperature", "1.5"]) == 2
    assert "--temperature must be in [0, 1], got 1.5" in capsys.readouterr().err
    assert not out.exists()


def test_bench_repair_cli_rejects_a_hop_count_out_of_range(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from causal_middleware.cli.main import main

    out = tmp_path / "r.json"
    assert main(["bench", "repair", "--out", str(out), "--hops", "9"]) == 2
    assert "--hops must be between 1 and 5, got 9" in capsys.readouterr().err
    assert not out.exists()


def test_tiny_benchmark_on_two_hop_questions_repairs_two_hop_runs() -> None:
    from benchmarks.cli.bench import run_repair

    results = run_repair(
        {"n": 4, "hops": 2, "inject_questions": 2, "families": ["false_premise"], "depths": [1]}
    )
    assert results["config"]["hops"] == 2
    assert results["runs"], "false_premise at hop 1 fails some 2-hop run"
    assert {r["n_hops"] for r in results["runs"]} == {2}


def test_tiny_benchmark_with_a_sampling_agent_records_its_temperature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.cli.bench import run_repair
    from benchmarks.reference_agent import adapter

    models: list[Any] = []
    real = adapter.reference_sweep_environment

    def spy(*args: Any, **kwargs: Any) -> Any:
        models.append(kwargs.get("model"))
        return real(*args, **kwargs)

    monkeypatch.setattr(adapter, "reference_sweep_environment", spy)
    results = run_repair(
        {"n": 4, "inject_questions": 2, "families": ["false_premise"], "depths": [1], "temperature": 0.5}
    )
    assert results["config"]["temperature"] == 0.5
    [model] = models
    assert model is not None and model.temperature == 0.5  # the agent itself samples
    assert results["n_failed"] == results["natural"]["n_failed"] + results["injected"]["n_failed"]
    runs, validation = results["runs"], results["validation"]
    for r in runs:
        kept = r["status"] == "repaired"
        assert (
            (r["validation_runs"] == 3 and 2 <= r["validation_flips"] <= 3)
            if kept
            else r["validation_runs"] is None
        )
        assert r["status"] != "unvalidated" or r["rejected"] > 0
    assert validation["rejected"] == sum(r["rejected"] for r in runs)
    assert validation["revalidated"] == results["n_repaired"] + validation["rejected"]


def _scripted_models(monkeypatch: pytest.MonkeyPatch, replies: dict[str, list[str]]) -> dict[str, Any]:
    """``load_chat_model`` answering each role (``--proposer`` / ``--validator``) with a scripted model."""
    from repair_fakes import ScriptedChatModel

    import causal_middleware.cli.live_agent as live_agent

    made: dict[str, Any] = {}

    def load(spec: str, what: str) -> Any:
        made[what] = ScriptedChatModel(replies=replies[spec])
        return made[what]

    monkeypatch.setattr(live_agent, "load_chat_model", load)
    return made


TINY_REPAIR = {"n": 6, "inject_questions": 3, "families": ["content_corruption"], "depths": [1]}


def test_bench_repair_with_an_llm_validator_keeps_only_what_it_retains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.cli.bench import run_repair

    plain = run_repair(dict(TINY_REPAIR))
    assert plain["n_repaired"] > 0 and plain["llm_validation"]["judged"] == 0
    _scripted_models(
        monkeypatch,
        {
            "yes": ['{"agree": true, "confidence": 0.8, "reason": "the step explains it"}'],
            "no": ['{"agree": false, "confidence": 0.9, "reason": "another step did it"}'],
        },
    )
    kept = run_repair({**TINY_REPAIR, "validator": "yes"})
    assert kept["config"]["validator"] == "yes" and kept["config"]["llm_validator"] == "LLMValidator"
    assert kept["n_repaired"] == plain["n_repaired"]
    assert kept["llm_validation"] == {"judged": plain["n_repaired"], "not_retained": 0, "retained_rate": 1.0}
    assert all(r["llm_confidence"] == 0.8 for r in kept["runs"] if r["status"] == "repaired")
    assert kept["llm_calls_per_repaired"] == 3.0  # proposer, critic, meta-critic
    dropped = run_repair({**TINY_REPAIR, "validator": "no"})
    assert dropped["n_repaired"] == 0 and dropped["llm_validation"]["judged"] >= plain["n_repaired"]
    assert dropped["llm_validation"]["not_retained"] == dropped["llm_validation"]["judged"]
    assert dropped["llm_validation"]["retained_rate"] == 0.0


def test_bench_repair_with_an_llm_proposer_repairs_with_its_proposals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.cli.bench import run_repair

    made = _scripted_models(monkeypatch, {"chatter": ["I cannot help with that."]})
    results = run_repair({**TINY_REPAIR, "proposer": "chatter"})
    assert results["config"]["proposer"] == "LLMProposer" and results["config"]["proposer_model"] == "chatter"
    assert made["proposer"].calls, "the proposer model was asked"
    # a reply with no JSON proposes nothing: nothing can be repaired, every failure is still counted
    assert results["n_failed"] > 0 and results["n_repaired"] == 0
    assert sum(r["llm_calls"] for r in results["runs"]) == len(made["proposer"].calls)


def test_bench_repair_cli_refuses_llm_roles_on_a_remote_executor() -> None:
    from benchmarks.cli.bench import run_repair

    with pytest.raises(ValueError, match="offline proposer and no --validator"):
        run_repair({**TINY_REPAIR, "validator": "local", "executor": "ray"})
