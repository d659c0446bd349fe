"""Domain kits: one YAML file (a workspace and session templates) -> a labelled, verified,
seeded evaluation set -> the offline pipeline scored with the bench's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.context.bench import run_context_bench
from benchmarks.context.kit import (
    Kit,
    KitError,
    generate_kit_benchmark,
    kit_categories,
    load_kit,
    resolve_kit,
    run_kit_bench,
)
from benchmarks.context.simulation.generator import dumps
from benchmarks.context.simulation.verification import verify_benchmark
from causal_middleware.cli.main import main
from causal_middleware.context.root_cause import FaultCategory

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "travel_kit" / "kit.yaml"


def test_the_example_kit_loads_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert not r.ws.layout.default and r.ws.system_prompt_path == "assistant/instructions.md"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert set(kit_categories(r)) == set(FaultCategory)
    # the claim is the file's own sentence, found by the value
    bag = next(f for f in r.facts if f.path.endswith("checked-bag-allowance.md"))
    assert bag.claim == "Each checked bag may weigh up to 23 kg on economy fares."


def test_the_set_is_labelled_verified_and_deterministic() -> None:
    bench = generate_kit_benchmark(KIT, seed=5, n_dissatisfied=18, n_control=4)
    assert len(bench.dissatisfied) == 18 and len(bench.controls) == 4
    assert verify_benchmark(bench).ok
    cats = {t.ground_truth.fault.category for t in bench.dissatisfied if t.ground_truth.fault}
    assert cats == set(FaultCategory)
    for t in bench.dissatisfied:
        gt = t.ground_truth
        assert gt.fault and gt.root_node_id and gt.fix and gt.component_type
        assert abs(sum(gt.attributions.values()) - 1) < 0.05
        # every planted change is a file the layout declares (the pipeline may read and write it)
        ws = bench.workspace(t)
        for path in t.workspace_changes:
            assert ws.component_type(path) != "other", path
    for t in bench.controls:
        assert t.ground_truth.fault is None and not t.workspace_changes
    again = generate_kit_benchmark(KIT, seed=5, n_dissatisfied=18, n_control=4)
    assert dumps(again) == dumps(bench)
    assert dumps(generate_kit_benchmark(KIT, seed=6, n_dissatisfied=18, n_control=4)) != dumps(bench)


def test_the_kit_is_scored_with_the_bench_report() -> None:
    out = run_kit_bench(KIT, seed=3, n_dissatisfied=12, n_control=3)
    builtin = run_context_bench(["finance"], seed=3, n_dissatisfied=6, n_control=1)
    assert set(out) == set(builtin) | {"kits"}
    assert out["domain"] == "travel_booking" and list(out["domains"]) == ["travel_booking"]
    assert set(out["domains"]["travel_booking"]) == set(builtin["domains"]["finance"])
    for key in ("acc_at_1", "acc_at_3", "op_acc", "path_acc", "e2e_acc", "fix_effectiveness"):
        assert 0.0 <= out[key] <= 1.0 and out[f"{key}_ci"] is not None
    assert {"precision", "recall", "f1", "missed"} <= set(out["detector"])
    assert out["n"] == 15 and out["n_dissatisfied"] == 12
    assert out["kits"]["travel_booking"]["categories"][0] == "KB_CONTENT_STALE"
    assert all(c["failed"] == 0 for c in out["verification"]["travel_booking"].values())


def test_cli_bench_and_simulate_with_a_kit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "context", "--kit", str(KIT), "--n-dissatisfied", "6", "--n-control", "2", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["domain"] == "travel_booking" and report["n"] == 8
    assert main(["bench", "context", "--kit", str(KIT), "--n-dissatisfied", "6", "--n-control", "2"]) == 0
    assert "| root cause Acc@1 |" in capsys.readouterr().out

    store, wsroot = str(tmp_path / "kit.db"), tmp_path / "ws"
    argv = ["context", "simulate", "--kit", str(KIT), "--n-dissatisfied", "6", "--n-control", "1"]
    assert main([*argv, "--store", store, "--workspaces", str(wsroot), "--json"]) == 0
    sims = json.loads(capsys.readouterr().out)
    assert sims["verification_ok"] and len(sims["sessions"]) == 7
    sid = "travel_booking-s0-000"  # a stale help-center page
    assert (wsroot / sid / "causal-context.yaml").is_file()  # the layout travels with the workspace
    assert main(["context", "recommend", sid, "--store", store, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["session_id"] == sid and "operation" in rec


def _inline(**over: object) -> dict[str, object]:
    kit: dict[str, object] = {
        "name": "tiny",
        "workspace": {
            "files": {
                "system_prompt.md": "# Prompt\n\nRules:\n- Always greet the member by name.\n",
                "kb/gym/opening-hours.md": "# Opening hours\n\nThe gym opens at 6 am on weekdays.\n",
                "kb/gym/guest-passes.md": "# Guest passes\n\nMembers may bring 2 guests per month.\n",
            }
        },
        "facts": [
            {
                "component": "kb/gym/opening-hours.md",
                "right": "6 am",
                "stale": ["7 am"],
                "questions": ["When does the gym open on weekdays?"],
                "faults": ["update"],
            },
            {
                "component": "kb/gym/guest-passes.md",
                "right": "2 guests",
                "stale": ["3 guests"],
                "questions": ["How many guests can I bring per month?"],
            },
        ],
        "rules": [
            {
                "rule": "Always greet the member by name.",
                "questions": ["Hi, can you check my membership?"],
                "bad_reply": "Membership active.",
                "good_reply": "Hi Sam, your membership is active.",
                "corrections": ["You should greet me by name."],
            }
        ],
    }
    kit.update(over)
    return kit


def test_an_inline_kit_in_the_default_layout() -> None:
    kit = Kit.model_validate(_inline())
    bench = generate_kit_benchmark(kit, seed=1, n_dissatisfied=8, n_control=2)
    assert verify_benchmark(bench).ok and bench.layout is None
    cats = {t.ground_truth.fault.category for t in bench.dissatisfied if t.ground_truth.fault}
    assert cats == {
        FaultCategory.KB_CONTENT_STALE,
        FaultCategory.KB_CONTENT_GAP,
        FaultCategory.SYSTEM_PROMPT_GAP,
    }


@pytest.mark.parametrize(
    ("fact", "message"),
    [
        ({"right": "5 am"}, "does not state the right value"),
        ({"component": "kb/gym/pool.md"}, "not a file of the workspace"),
        ({"corrections": ["No, that's wrong."]}, "must contain {right}"),
        ({"faults": ["rewrite"]}, "unknown fault"),
    ],
)
def test_a_kit_that_does_not_hold_is_refused_with_the_reason(fact: dict[str, object], message: str) -> None:
    data = _inline()
    facts = list(data["facts"])  # type: ignore[call-overload]
    facts[0] = {**facts[0], **fact}
    data["facts"] = facts
    with pytest.raises((KitError, ValueError), match=message):
        generate_kit_benchmark(Kit.model_validate(data), n_dissatisfied=2, n_control=0)


def test_load_kit_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "kit.yaml"
    bad.write_text("name: x\nworkspace: {path: nowhere}\nfacts: []\n", encoding="utf-8")
    with pytest.raises(KitError, match="kit.yaml"):
        load_kit(bad)
