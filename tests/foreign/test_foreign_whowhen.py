"""Who&When logs: the importer (both subsets), the CLI format option and the scorer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from causal_middleware.attribution.base import Diagnosis
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.store.base import SpanStore, StoreError
from causal_middleware.store.whowhen import import_whowhen, message_agent, read_whowhen

ROOT = Path(__file__).resolve().parents[2]


def test_algorithm_generated_log_becomes_one_step_per_message(who_and_when: Path) -> None:
    file = who_and_when / "Algorithm-Generated" / "1.json"
    data = json.loads(file.read_text())
    t = build_trajectory(read_whowhen(file))
    assert len(t.steps) == len(data["history"])
    assert [s.node for s in t.steps] == [m["name"] for m in data["history"]]
    assert [s.kind for s in t.steps if s.node == "Computer_terminal"] == ["tool"] * sum(
        m["name"] == "Computer_terminal" for m in data["history"]
    )
    assert t.steps[0].output == data["history"][0]["content"]  # type: ignore[union-attr]
    assert t.outcome == "failure" and t.reference == data["ground_truth"] and t.input == data["question"]
    assert t.labels["whowhen.mistake_agent"] == data["mistake_agent"] == "Excel_Expert"
    assert t.labels["whowhen.mistake_step"] == 0 and t.labels["whowhen.subset"] == "Algorithm-Generated"
    assert len(t.hops) == 2  # each terminal output starts a hop


def test_hand_crafted_log_takes_the_agent_from_the_role(who_and_when: Path) -> None:
    file = who_and_when / "Hand-Crafted" / "1.json"
    data = json.loads(file.read_text())
    t = build_trajectory(read_whowhen(file))
    assert len(t.steps) == len(data["history"])
    step = int(data["mistake_step"])
    assert t.steps[step].node == data["mistake_agent"] == "WebSurfer"
    assert t.steps[0].kind == "node" and t.steps[0].node == "human"
    assert {s.node for s in t.steps} >= {"Orchestrator", "WebSurfer"}
    assert len(t.hops) > 0  # WebSurfer acts on the environment: its messages are tool steps
    assert message_agent({"role": "Orchestrator (-> WebSurfer)", "content": ""}) == "Orchestrator"


def test_import_a_subset_folder_into_a_store(store: SpanStore, who_and_when: Path) -> None:
    run_ids = import_whowhen(store, who_and_when / "Hand-Crafted")
    assert len(run_ids) == 58 == len(set(run_ids))
    assert len(store.list_runs(outcome="failure", limit=None)) == 58
    assert len(store.list_runs(label="whowhen.mistake_agent=WebSurfer", limit=None)) == 33
    assert import_whowhen(store, who_and_when / "Hand-Crafted" / "1.json") == run_ids[:1]  # same ids


def test_a_file_that_is_not_a_log_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"history": [], "question": "q"}))
    with pytest.raises(StoreError, match=r"x\.json is not a Who&When log: no mistake_agent, mistake_step"):
        read_whowhen(bad)
    bad.write_text(
        json.dumps(
            {
                "history": [{"role": "a", "content": "c"}],
                "question": "q",
                "mistake_agent": "a",
                "mistake_step": "3",
            }
        )
    )
    with pytest.raises(StoreError, match="mistake_step 3 is outside the history of 1 messages"):
        read_whowhen(bad)


def test_cli_imports_whowhen(tmp_path: Path, who_and_when: Path) -> None:
    db = tmp_path / "ww.db"
    cmd = [
        sys.executable,
        "-m",
        "causal_middleware.cli.main",
        "runs",
        "import",
        "--format",
        "whowhen",
        str(who_and_when / "Algorithm-Generated" / "1.json"),
        "--store",
        str(db),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
    assert len(json.loads(out.stdout)["run_ids"]) == 1


def test_scorer_maps_diagnoses_to_steps_and_agents(who_and_when: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.foreign.whowhen import expected_random, load_cases, predict, score

    cases = load_cases(who_and_when / "Hand-Crafted")[:5]
    case = cases[0]
    gold = case.trajectory.steps[case.gold_step]
    by_step = predict(case, Diagnosis(method="m", step_id=gold.step_id))
    assert (by_step.step, by_step.agent) == (case.gold_step, case.gold_agent)
    hop = next(s.hop for s in case.trajectory.steps if s.hop is not None)
    by_hop = predict(case, Diagnosis(method="m", hop=hop))
    assert case.trajectory.steps[by_hop.step].hop == hop  # type: ignore[index]
    assert predict(case, Diagnosis(method="m", stage="answer")).step == len(case.agents) - 1
    assert predict(case, Diagnosis.not_run("m", "no")).step is None
    perfect = [
        predict(c, Diagnosis(method="m", step_id=c.trajectory.steps[c.gold_step].step_id)) for c in cases
    ]
    result = score(cases, perfect)
    assert result["step"]["accuracy"] == 100.0 and result["step"]["ci95"] == [100.0, 100.0]
    assert 0 < expected_random(cases)["step"] < 100
