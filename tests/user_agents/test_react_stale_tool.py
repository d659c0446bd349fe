"""A ``create_agent`` ReAct agent with a stale tool row and a side-effecting tool, no adapter.

The agent looks up who is on call for billing (``lookup_oncall``: the roster's billing row is
stale, "Dana Reyes" instead of "Priya Natarajan"), pages that engineer (``send_page``, marked
``@side_effecting``, counting every real call) and answers with the name. The root cause is the
``tools`` step that ran the lookup (hop 1, stage "tool").

* Repaired with a scripted chat model as the ``LLMProposer``: the model proposes the lookup's
  tool message with the current row. Every probing method, given that proposer, blames the
  lookup's ``tools`` step; the repair is validated by re-execution and the fork answers with the
  right engineer.
* Repaired offline after the roster row was corrected: ``tool_runner(ig)`` re-runs the lookup
  live (never ``send_page``), the generic intervention space proposes its fresh output, and the
  evidence names the tool and the state key it changed.
* In every repaired fork the agent pages the *right* engineer: a call the parent never made, so the
  replayer refuses it (withheld: the agent is told the page was not sent) instead of serving the
  recorded page of the wrong engineer; the pager's real call count stays exactly what the original
  run did (one).
* With the LLM proposer the blamed step's evidence must still name the stale tool and the state
  key changed (``lookup_oncall``, the ``messages`` entry), as the live re-run's does.
"""

from __future__ import annotations

from typing import Any

import pytest
from causal_middleware.integrations.langgraph.tool_runner import tool_runner
from user_agent_graphs import (
    LOOKUP_CALL_ID,
    ONCALL_GOLD,
    ONCALL_STALE,
    AgentWorld,
    RosterFixProposerModel,
    agent_input,
    react_agent,
)
from user_agent_harness import Recorded, Recorder

from causal_middleware.counterfactual.proposers import LLMProposer
from causal_middleware.spans.model import NodeStep, ToolStep

METHODS = ["crs", "suffix_regen", "path_aware", "frozen_hop"]
ANSWER_BEFORE = f"{ONCALL_STALE} is on call for billing and has been paged."
ANSWER_AFTER = f"{ONCALL_GOLD} is on call for billing and has been paged."
ORIGINAL_PAGES = [{"engineer": ONCALL_STALE, "message": "billing: invoices failed"}]


def record_agent(record: Recorder) -> tuple[Recorded, AgentWorld]:
    world = AgentWorld()
    run = record(
        lambda saver: react_agent(world, checkpointer=saver), agent_input(), ONCALL_GOLD, sqlite_store=False
    )
    assert run.output["messages"][-1].content == ANSWER_BEFORE
    assert world.pages == ORIGINAL_PAGES
    return run, world


def lookup_tools_step(run: Recorded) -> NodeStep:
    """The ``tools`` node step whose tool call is the stale lookup."""
    trajectory = run.trajectory
    [call] = [s for s in trajectory.steps if isinstance(s, ToolStep) and s.tool_name == "lookup_oncall"]
    assert call.output == ONCALL_STALE
    [step] = [
        s
        for s in trajectory.steps
        if isinstance(s, NodeStep) and s.node == "tools" and s.langgraph_step == call.langgraph_step
    ]
    return step


def llm_proposer() -> LLMProposer:
    return LLMProposer(RosterFixProposerModel(), temperature=0.0)


def side_effects_of(run: Recorded, fork_run_id: str) -> dict[str, Any]:
    fork = run.store.get_trajectory(fork_run_id)
    return fork.labels["replay.side_effects"]


def test_the_run_shape(record: Recorder) -> None:
    run, _ = record_agent(record)
    trajectory = run.trajectory
    step = lookup_tools_step(run)
    assert step.hop == 1 and trajectory.hop(1).sub_query == "billing"
    assert trajectory.reference == ONCALL_GOLD and trajectory.answer == ANSWER_BEFORE
    page = next(s for s in trajectory.steps if isinstance(s, ToolStep) and s.tool_name == "send_page")
    assert page.side_effecting and page.hop == 2


@pytest.mark.parametrize("method", METHODS)
def test_with_the_llm_proposer_every_method_blames_the_stale_lookup(record: Recorder, method: str) -> None:
    run, world = record_agent(record)
    step = lookup_tools_step(run)
    diagnosis = run.diagnose(method, proposer=llm_proposer())
    assert diagnosis.ran, diagnosis.reason
    assert (diagnosis.node, diagnosis.hop, diagnosis.stage) == ("tools", 1, "tool"), diagnosis.root_cause
    assert diagnosis.step_id == step.step_id
    assert diagnosis.cost.reexecutions >= 1 and diagnosis.cost.llm_calls >= 1
    assert world.pages == ORIGINAL_PAGES  # no fork re-fired the pager


def test_llm_repair_is_validated_and_never_refires_the_side_effecting_tool(record: Recorder) -> None:
    run, world = record_agent(record)
    step = lookup_tools_step(run)
    model = RosterFixProposerModel()
    result = run.repair(LLMProposer(model, temperature=0.0))
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None
    assert (repair.node, repair.hop, repair.step_id) == ("tools", 1, step.step_id)
    assert repair.source == "llm"
    [message] = repair.repaired["messages"]
    assert message["content"] == ONCALL_GOLD and message["tool_call_id"] == LOOKUP_CALL_ID
    validation = repair.validation
    assert validation.passed and validation.only_change and validation.flips >= validation.min_flips
    assert repair.answer_before == ANSWER_BEFORE and repair.answer_after == ANSWER_AFTER
    assert repair.fork_run_id is not None
    fork = run.store.get_trajectory(repair.fork_run_id)
    assert fork.is_counterfactual and fork.answer == ANSWER_AFTER
    # the fork paged the right engineer: a call the parent never made, withheld, never executed,
    # and never answered with the recorded page of the wrong engineer
    effects = side_effects_of(run, repair.fork_run_id)
    assert effects["allowed"] is False and effects["executed"] == [] and effects["served"] == []
    assert effects["blocked"] == ["send_page"] and effects["refused"][0]["reason"] == "changed_args"
    assert world.pages == ORIGINAL_PAGES
    # the model was asked about the first model step, then the lookup's tools step, then stopped
    assert model.asked[:2] == ["model", "tools"]
    assert f"{ONCALL_STALE!r} -> {ONCALL_GOLD!r}" in result.explanation


@pytest.mark.parametrize("method", METHODS)
def test_after_the_row_is_fixed_the_live_rerun_names_the_stale_tool(record: Recorder, method: str) -> None:
    run, world = record_agent(record)
    step = lookup_tools_step(run)
    world.roster["billing"] = ONCALL_GOLD  # the stale row corrected at the source
    diagnosis = run.diagnose(method)
    assert diagnosis.ran, diagnosis.reason
    assert (diagnosis.node, diagnosis.hop, diagnosis.stage) == ("tools", 1, "tool"), diagnosis.root_cause
    assert diagnosis.step_id == step.step_id
    evidence = diagnosis.details["evidence"]
    assert evidence["ids"] == ["lookup_oncall"] and evidence["source"] == "trace:tool"
    assert evidence["state_key"] == "messages[0].content"
    assert ONCALL_GOLD in evidence["change"] and ONCALL_STALE in evidence["change"]
    assert world.pages == ORIGINAL_PAGES


def test_after_the_row_is_fixed_the_offline_repair_reruns_the_lookup_not_the_pager(record: Recorder) -> None:
    run, world = record_agent(record)
    step = lookup_tools_step(run)
    world.roster["billing"] = ONCALL_GOLD
    runner = tool_runner(run.ig)
    assert runner is not None
    assert runner("send_page", {"engineer": "x", "message": "y"}) is None  # side-effecting: never re-run
    assert runner("lookup_oncall", {"service": "billing"}) == ONCALL_GOLD
    result = run.repair()
    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None
    assert (repair.node, repair.hop, repair.step_id) == ("tools", 1, step.step_id)
    assert repair.target == "messages[0].content" and repair.evidence == ["lookup_oncall"]
    assert repair.source == "trace:tool"
    assert repair.repaired["messages"][0]["content"] == ONCALL_GOLD
    assert repair.validation.passed and repair.validation.only_change
    assert repair.fork_run_id is not None
    assert run.store.get_trajectory(repair.fork_run_id).answer == ANSWER_AFTER
    effects = side_effects_of(run, repair.fork_run_id)
    assert effects["executed"] == [] and effects["served"] == [] and effects["blocked"] == ["send_page"]
    assert world.pages == ORIGINAL_PAGES
    assert "lookup_oncall" in result.explanation


def test_with_the_llm_proposer_the_evidence_names_the_stale_tool(record: Recorder) -> None:
    """The LLM proposer's corrected tool output must be located like the live re-run's: the
    diagnosis evidence and the repair name the tool (``lookup_oncall``) and the state key."""
    run, world = record_agent(record)
    found: dict[str, Any] = {}
    for method in METHODS:
        diagnosis = run.diagnose(method, proposer=llm_proposer())
        assert (diagnosis.node, diagnosis.hop) == ("tools", 1)
        evidence = diagnosis.details.get("evidence") or {}
        found[method] = (evidence.get("state_key"), evidence.get("ids"))
    result = run.repair(llm_proposer())
    assert result.repair is not None and result.status == "repaired"
    found["repair"] = (result.repair.target, result.repair.evidence)
    assert world.pages == ORIGINAL_PAGES
    expected = {name: ("messages[0].content", ["lookup_oncall"]) for name in [*METHODS, "repair"]}
    assert found == expected
