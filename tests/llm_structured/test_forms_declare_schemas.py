"""Every LLM form declares its reply schema, built for the prompt it sends, and reads the reply."""

from __future__ import annotations

import json

import pytest
from attribution_sim import faulted_run, make_world
from structured_sessions import stale_session

from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.hops import hop_views
from causal_middleware.context.detector import detect
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.signals import SignalType


def test_detector_declares_the_sessions_node_ids_and_the_signal_types(recording) -> None:
    signal = {"type": "CORRECTION", "turn": 2, "node_id": "n4", "evidence": "outdated", "confidence": 0.9}
    model = recording(replies=[json.dumps({"signals": [signal]})])
    det = detect(stale_session(), mode="llm", model=model)
    assert model.titles == ["dissatisfaction_signals"]
    item = model.schemas[0]["properties"]["signals"]["items"]["properties"]
    assert item["node_id"]["enum"] == ["n1", "n2", "n3", "n4"]
    assert item["type"]["enum"] == [t.value for t in SignalType]
    assert [(s.type, s.node_id) for s in det.signals] == [(SignalType.CORRECTION, "n4")] and det.escalate


def test_holistic_root_cause_declares_the_root_enum_with_attributions_last(recording) -> None:
    answer = {
        "expected": "$35",
        "got": "$25",
        "root_node_id": "n2",
        "category": "KB_CONTENT_STALE",
        "component_path": "kb/fees/overdraft-fee.md",
        "attributions": {"n2": 0.8, "n3": 0.2},
    }
    model = recording(replies=[json.dumps(answer)])
    diag = diagnose(stale_session(), mode="llm", model=model)
    schema = model.schemas[0]
    assert model.titles == ["context_root_cause"]
    assert schema["properties"]["root_node_id"]["enum"] == ["n1", "n2", "n3", "n4"]
    assert list(schema["properties"])[-1] == "attributions"  # a cut reply has named the root already
    assert None in schema["properties"]["category"]["enum"]
    assert diag.root_node_id == "n2" and diag.attributions[0].node_id == "n2"


def test_iterative_root_cause_declares_one_schema_per_call(recording) -> None:
    conv = stale_session()
    replies = [json.dumps({"expected": "$35", "got": "$25"})]
    replies += [json.dumps({"score": 0.9 if n.id == "n2" else 0.1, "reason": "r"}) for n in conv.nodes]
    replies.append(json.dumps({"root_node_id": "n2", "category": None, "component_path": None}))
    model = recording(replies=replies)
    diag = diagnose(conv, method="iterative", mode="llm", model=model)
    assert model.titles == ["context_delta", *["context_node_score"] * 4, "context_root_pick"]
    assert model.schemas[-1]["properties"]["root_node_id"]["enum"] == ["n1", "n2", "n3", "n4"]
    assert diag.root_node_id == "n2" and diag.calls == 6


@pytest.fixture(scope="module")
def failed_run():
    return faulted_run(make_world(), "empty_retrieval", 2)


def test_llm_judge_declares_the_runs_hop_numbers(recording, failed_run) -> None:
    n = max(v.index for v in hop_views(failed_run))
    verdict = {"stage": "retrieval", "hop": 2, "propagation": True, "severity": 0.7, "root_cause": "empty"}
    model = recording(replies=[json.dumps(verdict)])
    d = get_diagnoser("llm_judge", model=model).diagnose(failed_run)
    schema = model.schemas[0]
    assert model.titles == ["root_cause_verdict"] and list(schema["properties"])[:2] == ["stage", "hop"]
    assert schema["properties"]["hop"]["enum"] == [*range(1, n + 1), None]
    assert (d.stage, d.hop, d.root_cause) == ("retrieval", 2, "empty") and d.cost.llm_calls == 1


def test_holistic_llm_declares_the_delta_then_the_verdict(recording, failed_run) -> None:
    replies = [
        json.dumps({"delta": "wrong person", "wrong": "X", "missing": "Lostra"}),
        json.dumps({"hop": 2, "stage": "retrieval", "propagation": True, "severity": 0.5, "root_cause": "r"}),
    ]
    model = recording(replies=replies)
    context = DiagnosisContext(chat_model=model, question=make_world().questions["q0-3"])
    d = get_diagnoser("holistic_llm").diagnose(failed_run, context)
    assert model.titles == ["answer_delta", "root_cause_verdict"]
    assert list(model.schemas[1]["properties"])[:2] == ["hop", "stage"]  # the order its prompt lists
    assert d.hop == 2 and d.details["delta"] == "wrong person"


def test_iterative_llm_declares_node_verdicts_and_a_final_step_enum(recording, failed_run) -> None:
    from causal_middleware.attribution.delta import node_units

    units = node_units(failed_run, hop_views(failed_run))
    replies = [json.dumps({"delta": "d", "wrong": "w", "missing": "m"})]
    replies += [json.dumps({"output_carries": False, "input_carries": False, "reason": "r"})] * len(units)
    replies.append(
        json.dumps({"step": units[0].step_id, "hop": None, "stage": "retrieval", "root_cause": "r"})
    )
    model = recording(replies=replies)
    context = DiagnosisContext(chat_model=model, question=make_world().questions["q0-3"])
    d = get_diagnoser("iterative_llm").diagnose(failed_run, context)
    assert model.titles == ["answer_delta", *["step_carries_delta"] * len(units), "root_cause_step"]
    assert model.schemas[-1]["properties"]["step"]["enum"] == [u.step_id for u in units]
    assert d.step_id == units[0].step_id and d.cost.llm_calls == len(units) + 2
