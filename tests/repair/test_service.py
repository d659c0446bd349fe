"""``repair_run``: CRS search, minimal validated repair, explanation, records in the store."""

from __future__ import annotations

from typing import Any

import pytest
from repair_fakes import ScriptedChatModel, ScriptedProposer
from repair_sim import World

from causal_middleware.counterfactual.proposers import OfflineProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import RepairConfig, RepairService, repair_run
from causal_middleware.repair.validate import LLMValidator
from causal_middleware.spans.model import Trajectory


def test_repairs_a_natural_failure_and_writes_records(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    store = sloppy_world.backend.store
    proposer = OfflineProposer(sloppy_world.adapter, sloppy_world.index)
    result = repair_run(
        run.run_id, backend=sloppy_world.backend, proposer=proposer, verifier=ReferenceVerifier(), store=store
    )
    assert result.status == "repaired"
    repair = result.repair
    assert repair is not None
    assert (repair.node, repair.hop) == ("retrieve", 1)  # dropping the near-namesake passage fixes it
    assert repair.answer_before == "Lyon" and repair.answer_after == "Paris"
    assert repair.validation.passed and repair.validation.flips == 3
    assert repair.llm_validation.ran is False
    assert repair.crs == 1.0 and 0.0 < repair.minimality <= 1.0
    assert (
        "Step 'retrieve' (hop 1" in result.explanation and "'Paris' instead of 'Lyon'" in result.explanation
    )
    assert "not run" in result.explanation
    # search forks + n validation re-runs, all counted
    assert result.cost.reexecutions == result.crs.cost.reexecutions + 3
    fork = store.get_trajectory(repair.fork_run_id or "")
    assert fork.lineage is not None and fork.lineage.parent_run_id == run.run_id and fork.answer == "Paris"

    [diagnosis] = store.get_records("diagnosis", run.run_id)
    assert diagnosis["method"] == "crs" and (diagnosis["node"], diagnosis["hop"]) == ("retrieve", 1)
    [record] = store.get_records("repair", run.run_id)
    assert RepairResult.model_validate(record) == result
    assert result.pair is not None and result.pair.metadata["step_id"] == repair.step_id


def test_a_successful_run_needs_no_repair(clean_world: World) -> None:
    run = clean_world.backend.run()
    result = repair_run(
        run,
        backend=clean_world.backend,
        proposer=OfflineProposer(clean_world.adapter, clean_world.index),
        verifier=ReferenceVerifier(),
        store=clean_world.backend.store,
    )
    assert result.status == "not_failed" and result.repair is None
    assert clean_world.backend.fork_calls == []
    assert "did not fail" in result.explanation


def test_no_flipping_proposal_means_no_repair(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = ScriptedProposer({("decide", 1): [{"sub_query": "Who founded Zeta Inc?"}]})
    result = repair_run(
        run, backend=sloppy_world.backend, proposer=proposer, verifier=ReferenceVerifier(), write=False
    )
    assert result.status == "no_flip" and result.repair is None and result.pair is None
    assert "None of the 1 proposals tested on 6 candidate steps flipped" in result.explanation


class OnlyOnce:
    """The first fork of each proposal succeeds; re-runs do not (an unreliable repair)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.seen: set[str] = set()

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        fork = self.world.backend.fork(run_id, **kwargs)
        key = repr(kwargs.get("values"))
        if key in self.seen:
            return fork.model_copy(update={"answer": "Lyon"})
        self.seen.add(key)
        return fork


def test_a_repair_that_does_not_survive_re_runs_is_not_kept(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = ScriptedProposer({("read", 1): [{"fact": "Bob Smith"}]})
    result = repair_run(run, backend=OnlyOnce(sloppy_world), proposer=proposer, verifier=ReferenceVerifier())
    assert result.status == "unvalidated" and result.repair is None
    assert [p.proposal.values for p in result.rejected] == [{"fact": "Bob Smith"}]
    assert "failed re-validation" in result.explanation


def test_llm_validation_gates_the_repair_when_configured(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    proposer = ScriptedProposer({("read", 1): [{"fact": "Bob Smith"}]})
    reject = LLMValidator(ScriptedChatModel(replies=['{"agree": false, "confidence": 0.95, "reason": "no"}']))
    rejected = repair_run(
        run,
        backend=sloppy_world.backend,
        proposer=proposer,
        verifier=ReferenceVerifier(),
        llm_validator=reject,
    )
    assert rejected.status == "unvalidated"
    accept = LLMValidator(ScriptedChatModel(replies=['{"agree": true, "confidence": 0.8, "reason": "yes"}']))
    kept = repair_run(
        run,
        backend=sloppy_world.backend,
        proposer=proposer,
        verifier=ReferenceVerifier(),
        llm_validator=accept,
    )
    assert kept.status == "repaired" and kept.repair is not None
    assert kept.repair.llm_validation.retained and kept.repair.llm_validation.confidence == 0.8
    assert kept.cost.llm_calls == 3
    assert "Multi-agent validation: confidence 0.8" in kept.explanation


def test_service_binds_collaborators_and_shares_its_fork_cache(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    service = RepairService(
        backend=sloppy_world.backend,
        proposer=ScriptedProposer({("read", 1): [{"fact": "Bob Smith"}]}),
        verifier=lambda answer: answer == "Paris",
        store=sloppy_world.backend.store,
        config=RepairConfig(validation_runs=2, validation_min_flips=2),
    )
    first = service.repair(run.run_id)
    second = service.repair(run.run_id, write=False)
    assert first.status == second.status == "repaired"
    assert second.crs.cost.reexecutions == 0 and second.crs.cost.forks_reused == 1
    assert len(sloppy_world.backend.store.get_records("repair", run.run_id)) == 1


def test_bad_configuration_is_named(sloppy_world: World) -> None:
    run = sloppy_world.backend.run()
    with pytest.raises(ValueError, match="validation_min_flips"):
        repair_run(
            run,
            backend=sloppy_world.backend,
            proposer=ScriptedProposer({}),
            verifier=ReferenceVerifier(),
            config=RepairConfig(validation_runs=1, validation_min_flips=2),
        )
    with pytest.raises(ValueError, match="needs a store"):
        repair_run(
            run.run_id,
            backend=sloppy_world.backend,
            proposer=ScriptedProposer({}),
            verifier=ReferenceVerifier(),
        )
