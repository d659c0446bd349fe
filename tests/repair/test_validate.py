"""Validation: m-of-n re-runs and only-change (offline), proposer/critic/meta-critic (LLM)."""

from __future__ import annotations

from typing import Any

import pytest
from repair_fakes import ScriptedChatModel
from repair_sim import World, node_step

from causal_middleware.counterfactual.models import Probe
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.protocols import Proposal
from causal_middleware.repair.validate import (
    LLMValidator,
    llm_validation_not_run,
    prefix_differences,
    validate_offline,
)
from causal_middleware.spans.model import NodeStep, Trajectory


def _fix(run: Trajectory) -> Proposal:
    step = node_step(run, "read", 1)
    return Proposal(
        step_id=step.step_id,
        node="read",
        hop=1,
        langgraph_step=step.langgraph_step,
        values={"fact": "Bob Smith"},
        source="test",
    )


class Flaky:
    """Every other fork's suffix still answers wrong (as a nondeterministic agent might)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.calls = 0

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        self.calls += 1
        fork = self.world.backend.fork(run_id, **kwargs)
        return fork.model_copy(update={"answer": "Lyon"}) if self.calls % 2 == 0 else fork


class Tampering:
    """Forks whose prefix differs from the parent's (a broken replayer)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        fork = self.world.backend.fork(run_id, **kwargs)
        steps = list(fork.steps)
        first = steps[0]
        assert isinstance(first, NodeStep)
        steps[0] = first.model_copy(update={"output": {"sub_query": "Who founded Zeta Inc?"}})
        return fork.model_copy(update={"steps": steps})


def test_a_deterministic_repair_passes(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    result = validate_offline(run, _fix(run), sloppy_world.backend, ReferenceVerifier(), n=3, m=2)
    assert result.passed and result.only_change
    assert result.flips == 3 and len(result.fork_run_ids) == 3
    assert len(set(result.fork_run_ids)) == 3  # each re-run is a fresh fork
    assert result.differences == []


def test_too_few_flips_fail(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    result = validate_offline(run, _fix(run), Flaky(sloppy_world), ReferenceVerifier(), n=3, m=3)
    assert not result.passed and result.flips == 2
    assert "flipped in 2 of 3 re-runs (need 3)" in result.reason
    assert validate_offline(run, _fix(run), Flaky(sloppy_world), ReferenceVerifier(), n=2, m=1).passed


def test_a_changed_prefix_fails_only_change(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    result = validate_offline(run, _fix(run), Tampering(sloppy_world), ReferenceVerifier(), n=1, m=1)
    assert result.flips == 1 and not result.only_change and not result.passed
    assert result.differences == ["prefix step decide@1 output changed"]


def test_prefix_differences_checks_lineage_and_the_repaired_step(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposal = _fix(run)
    fork = sloppy_world.backend.fork(
        run.run_id, node="read", hop=1, step=proposal.langgraph_step, values=proposal.values
    )
    assert prefix_differences(run, fork, proposal) == []
    other = proposal.model_copy(update={"values": {"fact": "Carl Jones"}})
    assert prefix_differences(run, fork, other) == ["fork's read@3 output is not the repair"]
    orphan = fork.model_copy(update={"lineage": None})
    assert any("lineage" in d for d in prefix_differences(run, orphan, proposal))


def test_a_backend_may_merge_the_repair_into_the_recorded_output(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposal = _fix(run)
    fork = sloppy_world.backend.fork(
        run.run_id, node="read", hop=1, step=proposal.langgraph_step, values=proposal.values
    )
    steps = list(fork.steps)
    at = next(i for i, s in enumerate(steps) if getattr(s, "attributes", {}).get("causal.intervened"))
    merged = steps[at].model_copy(update={"output": {"fact": "Bob Smith", "extra": None}})
    assert (
        prefix_differences(
            run, fork.model_copy(update={"steps": [*steps[:at], merged, *steps[at + 1 :]]}), proposal
        )
        == []
    )
    changed = steps[at].model_copy(update={"output": {"fact": "Bob Smith", "extra": 1}})
    diffs = prefix_differences(
        run, fork.model_copy(update={"steps": [*steps[:at], changed, *steps[at + 1 :]]}), proposal
    )
    assert diffs == ["fork's read@3 output is not the repair"]


def test_bad_m_of_n_is_rejected(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    with pytest.raises(ValueError, match="1 <= m <= n"):
        validate_offline(run, _fix(run), sloppy_world.backend, ReferenceVerifier(), n=2, m=3)


def _probe(run: Trajectory) -> Probe:
    return Probe(proposal=_fix(run), fork_run_id="f" * 32, success=True, answer="Paris", feedback="matches")


def test_llm_validation_retained_when_the_meta_critic_agrees(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    model = ScriptedChatModel(
        replies=[
            '{"agree": true, "confidence": 0.9, "reason": "the reader took the wrong founder"}',
            '{"agree": false, "confidence": 0.6, "reason": "maybe retrieval"}',
            '{"agree": true, "confidence": 0.7, "reason": "the fact is the first wrong output"}',
        ]
    )
    result = LLMValidator(model).validate(run, _probe(run))
    assert result.ran and result.retained and result.confidence == 0.7
    assert [j.role for j in result.judgements] == ["proposer", "critic", "meta_critic"]
    assert result.reason == "2 of 3 roles agree"
    assert result.cost.llm_calls == 3
    # the critic sees the proposer's judgement, the meta-critic both
    assert "proposer says" in str(model.calls[1][-1].content)
    assert "critic says" in str(model.calls[2][-1].content)


def test_llm_validation_rejects_a_confident_disagreement_and_bad_replies(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    disagree = ScriptedChatModel(replies=['{"agree": false, "confidence": 0.9, "reason": "no"}'])
    result = LLMValidator(disagree).validate(run, _probe(run))
    assert result.retained is False and result.confidence == pytest.approx(0.1)
    garbage = LLMValidator(ScriptedChatModel(replies=["sure"])).validate(run, _probe(run))
    assert garbage.retained is False and garbage.confidence == 0.0
    assert all(j.agree is None for j in garbage.judgements)
    with pytest.raises(ValueError, match="threshold"):
        LLMValidator(disagree, threshold=1.5)


def test_without_a_model_the_llm_form_reports_not_run() -> None:
    result = llm_validation_not_run()
    assert result.ran is False and result.retained is None and "not run" in result.reason
