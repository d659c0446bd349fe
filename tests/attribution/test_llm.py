"""LLM diagnosers with scripted chat models, and robust reading of their JSON."""

from __future__ import annotations

import json
import re

import pytest
from attribution_sim import ScriptedChatModel, context_for, faulted_run

from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.llm import as_hop, as_stage, as_unit, parse_object


def test_parse_object_tolerates_what_models_write() -> None:
    assert parse_object('```json\n{"hop": 2, "stage": "retrieval"}\n```') == {"hop": 2, "stage": "retrieval"}
    assert parse_object('Sure! {"hop": 3,} is my answer') == {"hop": 3}
    assert parse_object("{'hop': 1, 'propagation': True, 'severity': None}") == {
        "hop": 1,
        "propagation": True,
        "severity": None,
    }
    assert parse_object('text {"outer": {"inner": "}"}} more') == {"outer": {"inner": "}"}}
    assert parse_object("Stage: retrieval\nHop: 2\nRoot cause: bad docs") == {
        "stage": "retrieval",
        "hop": "2",
        "root_cause": "bad docs",
    }
    with pytest.raises(ValueError, match="no JSON object"):
        parse_object("I cannot tell.")


def test_coercions() -> None:
    assert (
        as_hop("hop 2", 3) == 2 and as_hop(2.0, 3) == 2 and as_hop(5, 3) is None and as_hop(True, 3) is None
    )
    assert as_stage("Answer generation") == "answer" and as_stage("RETRIEVAL") == "retrieval"
    assert as_stage("the search step") == "retrieval" and as_stage("banana") is None
    assert as_unit("high") == 0.8 and as_unit(3) == 1.0 and as_unit("0.25") == 0.25 and as_unit("?") is None


def empty_hop_judge(messages) -> str:
    """A judge that actually reads the rendered trace: it blames the first hop that retrieved nothing."""
    text = messages[-1].content
    blocks = re.split(r"\n(?=Hop \d+ )", text)
    for block in blocks:
        m = re.match(r"Hop (\d+) ", block)
        if m and "(nothing retrieved)" in block:
            return f'```json\n{{"stage": "retrieval", "hop": {m.group(1)}, "propagation": false, "root_cause": "empty"}}\n```'
    return '{"stage": "answer", "hop": null, "root_cause": "no hop looks wrong"}'


def test_llm_judge_reads_the_hop_level_trace(world) -> None:
    model = ScriptedChatModel(responder=empty_hop_judge)
    run = faulted_run(world, "empty_retrieval", 2)
    d = get_diagnoser("llm_judge").diagnose(run, DiagnosisContext(chat_model=model))
    assert (d.hop, d.stage, d.uses_gold) == (2, "retrieval", False)
    assert d.cost.llm_calls == 1 and d.cost.tokens == 15 and d.root_cause == "empty"
    assert d.details["judge_model"] == "scripted-judge"
    prompt = model.prompts[0][-1].content
    assert "Hop 1 (retrieval)" in prompt and 'sub-query: "Who created Zorblat?"' in prompt  # fenced data
    assert "Lostra" not in prompt  # the judge is not shown the expected answer by default
    shown = get_diagnoser("llm_judge", show_reference=True).diagnose(run, DiagnosisContext(chat_model=model))
    assert shown.uses_gold is True and 'Expected answer: "Lostra"' in model.prompts[-1][-1].content


def test_llm_judge_constructor_model_and_unusable_replies(world) -> None:
    run = faulted_run(world, "empty_retrieval", 1)
    bad = ScriptedChatModel(responder=lambda m: "I think something went wrong somewhere.")
    d = get_diagnoser("llm_judge", model=bad).diagnose(run)
    assert d.ran and d.hop is None and d.stage is None and "parse_error" in d.details
    answer = ScriptedChatModel(responder=lambda m: '{"stage": "Answer generation", "hop": 3}')
    d = get_diagnoser("llm_judge", model=answer).diagnose(run)
    assert (d.stage, d.hop) == ("answer", None)
    out_of_range = ScriptedChatModel(responder=lambda m: '{"stage": "retrieval", "hop": 12}')
    d = get_diagnoser("llm_judge", model=out_of_range).diagnose(run)
    assert (d.stage, d.hop) == ("retrieval", None)
    capped = get_diagnoser("llm_judge", model=answer).diagnose(run, DiagnosisContext(max_llm_calls=0))
    assert capped.ran is False and "budget" in capped.reason


def test_holistic_llm_makes_two_calls_delta_then_reverse_pass(world) -> None:
    def responder(messages) -> str:
        system = messages[0].content
        if "State the delta" in system:
            return '{"delta": "the answer says unknown instead of Lostra"}'
        user = messages[-1].content
        assert user.split("\n")[1] == 'Delta: "the answer says unknown instead of Lostra"'  # fenced
        assert user.index("Hop 3") < user.index("Hop 1")  # reverse order
        return (
            '{"hop": "2", "stage": "retrieval", "propagation": true, "severity": "high", "root_cause": "x"}'
        )

    model = ScriptedChatModel(responder=responder)
    run = faulted_run(world, "empty_retrieval", 2)
    d = get_diagnoser("holistic_llm").diagnose(run, context_for(world, chat_model=model))
    assert (d.hop, d.propagation, d.severity, d.uses_gold) == (2, True, 0.8, True)
    assert d.cost.llm_calls == 2 and len(model.prompts) == 2
    assert 'Expected answer: "Lostra"' in model.prompts[0][-1].content


def test_iterative_llm_makes_n_plus_2_calls(world) -> None:
    run = faulted_run(world, "empty_retrieval", 2)

    def responder(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "State the delta" in system:
            return '{"delta": "unknown instead of Lostra"}'
        if "check one step" in system:
            step = re.search(r'node "(\w+)", hop (\w+)', user)
            node, hop = step.group(1), step.group(2)
            carries = node == "retrieve" and hop == "2" or (hop in ("3",) or node == "answer")
            inherits = not (node == "retrieve" and hop == "2")
            return json.dumps({"output_carries": carries, "input_carries": carries and inherits})
        return "no idea"  # the final call is unusable: fall back to the per-node verdicts

    model = ScriptedChatModel(responder=responder)
    d = get_diagnoser("iterative_llm").diagnose(run, context_for(world, chat_model=model))
    n_nodes = sum(1 for s in run.steps if s.kind == "node")
    assert d.cost.llm_calls == n_nodes + 2 == len(model.prompts)
    assert (d.hop, d.node) == (2, "retrieve") and "final_parse_error" in d.details
    capped = get_diagnoser("iterative_llm").diagnose(
        run, context_for(world, chat_model=model, max_llm_calls=3)
    )
    assert capped.ran is False and f"needs {n_nodes + 2} LLM calls" in capped.reason


def test_llm_forms_are_not_run_without_a_model(world) -> None:
    run = faulted_run(world, "empty_retrieval", 2)
    for name in ("llm_judge", "holistic_llm", "iterative_llm"):
        d = get_diagnoser(name).diagnose(run, context_for(world))
        assert d.ran is False and "chat model" in d.reason and d.cost.llm_calls == 0
