"""Repair does not bloat the agent's checkpointer: on the reference agent with a SqliteSaver, every
fork ``repair_run`` made except the repair's own is discarded (fail-open), unless asked to keep."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer.replayer import DISCARDED_LABEL
from repair_agent import first_failing_fault

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.faults.sweep import SweepEnvironment
from causal_middleware.protocols import DiscardingForkBackend
from causal_middleware.repair import (
    ForkCache,
    OfflineProposer,
    ReferenceVerifier,
    RepairConfig,
    RepairResult,
    repair_run,
)
from causal_middleware.repair.service import DISCARD_SITE
from causal_middleware.spans.health import health
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct

# one re-run per validation keeps each repair to a handful of forks
CONFIG = RepairConfig(validation_runs=2, validation_min_flips=2)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SweepEnvironment]:
    checkpoints = tmp_path_factory.mktemp("discard") / "checkpoints.db"
    environment = reference_sweep_environment(
        generate_world(12, seed=0), store=InMemorySpanStore(), seed=0, checkpoints=checkpoints
    )
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def faulted(env: SweepEnvironment) -> tuple[Trajectory, Question]:
    """The first run whose hop-1 content corruption (fault injection's own family) makes it fail."""
    return first_failing_fault(env, "content_corruption")


def saver(env: SweepEnvironment) -> Any:
    return env.backend.graph.graph.checkpointer  # type: ignore[attr-defined]


def threads(env: SweepEnvironment) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in saver(env).list(None)}


def repair(
    env: SweepEnvironment, faulted: tuple[Trajectory, Question], backend: Any = None, **kwargs: Any
) -> RepairResult:
    run, question = faulted
    return repair_run(
        run,
        backend=backend or env.backend,
        proposer=OfflineProposer(env.adapter, env.scoped_index),
        verifier=ReferenceVerifier(question.answer, question.aliases),
        store=env.store,
        **{"config": CONFIG, **kwargs},
    )


def made_forks(env: SweepEnvironment, faulted: tuple[Trajectory, Question]) -> set[str]:
    """Every fork of the faulted run in the store (probes and validation re-runs alike)."""
    return {r.run_id for r in env.store.list_runs(parent_run_id=faulted[0].run_id, limit=None)}


def thread_of(env: SweepEnvironment, run_id: str) -> str:
    return env.store.get_trajectory(run_id).thread_id or ""


class PlainBackend:
    """A fork backend without the discard capability."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        return self.inner.fork(run_id, **kwargs)


class FlakyDiscard(PlainBackend):
    """Discards through the replayer, except the first discard, which raises."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.asked: list[str] = []

    def discard_fork(self, run_id: str) -> bool:
        self.asked.append(run_id)
        if len(self.asked) == 1:
            raise RuntimeError("checkpointer unavailable")
        return bool(self.inner.discard_fork(run_id))


def test_repair_keeps_only_the_repairs_fork(
    env: SweepEnvironment, faulted: tuple[Trajectory, Question]
) -> None:
    before, forks_before = threads(env), made_forks(env, faulted)
    cache = ForkCache()
    result = repair(env, faulted, cache=cache)
    assert result.status == "repaired", result.explanation
    assert result.repair is not None and result.repair.fork_run_id is not None
    kept = result.repair.fork_run_id
    made = made_forks(env, faulted) - forks_before
    assert kept in made and len(made) == result.cost.reexecutions >= 3
    # the checkpointer holds what it held before plus the repair's fork thread, nothing else
    assert threads(env) == before | {thread_of(env, kept)}
    assert result.cost.forks_discarded == len(made) - 1 and not result.discard_errors
    for run_id in made - {kept}:  # spans stay in the store, marked discarded
        assert env.store.get_trajectory(run_id).labels.get(DISCARDED_LABEL) is True
    assert DISCARDED_LABEL not in env.store.get_trajectory(kept).labels
    [record] = [
        r for r in env.store.get_records("repair", faulted[0].run_id) if r["repair"]["fork_run_id"] == kept
    ]
    assert record["cost"]["forks_discarded"] == len(made) - 1
    # the discarded probes left the cache, the repair's probe stayed
    assert len(cache) == 1

    # the repair's fork still forks (a plain re-run from its repaired step's successor)
    nested = env.backend.fork(kept, hop=(result.repair.hop or 1) + 1)
    assert nested.lineage is not None and nested.lineage.parent_run_id == kept
    assert is_correct(nested.answer, faulted[1])
    env.backend.discard_fork(nested.run_id)  # type: ignore[attr-defined]

    # repaired again with the same cache: the repair's probe is reused, not discarded; the probes
    # dropped from the cache are re-run (and discarded again)
    again = repair(env, faulted, cache=cache)
    assert again.repair is not None and again.repair.fork_run_id == kept
    assert again.cost.forks_reused == 1
    assert again.cost.forks_discarded == again.cost.reexecutions
    assert threads(env) == before | {thread_of(env, kept)}


def test_keep_probe_forks_keeps_them_all(env: SweepEnvironment, faulted: tuple[Trajectory, Question]) -> None:
    before, forks_before = threads(env), made_forks(env, faulted)
    result = repair(env, faulted, config=CONFIG.model_copy(update={"keep_probe_forks": True}))
    assert result.status == "repaired"
    made = made_forks(env, faulted) - forks_before
    assert len(made) == result.cost.reexecutions and result.cost.forks_discarded == 0
    assert threads(env) == before | {thread_of(env, r) for r in made}


def test_a_backend_that_cannot_discard_works_unchanged(
    env: SweepEnvironment, faulted: tuple[Trajectory, Question]
) -> None:
    backend = PlainBackend(env.backend)
    assert not isinstance(backend, DiscardingForkBackend)
    before, forks_before = threads(env), made_forks(env, faulted)
    result = repair(env, faulted, backend=backend)
    assert result.status == "repaired" and result.cost.forks_discarded == 0
    made = made_forks(env, faulted) - forks_before
    assert threads(env) == before | {thread_of(env, r) for r in made}


def test_a_discard_that_raises_does_not_fail_the_repair(
    env: SweepEnvironment, faulted: tuple[Trajectory, Question]
) -> None:
    backend = FlakyDiscard(env.backend)
    before, forks_before = threads(env), made_forks(env, faulted)
    result = repair(env, faulted, backend=backend)
    assert result.status == "repaired", result.explanation
    made = made_forks(env, faulted) - forks_before
    failed = backend.asked[0]
    assert result.discard_errors == [f"{failed}: RuntimeError: checkpointer unavailable"]
    assert health.errors[DISCARD_SITE] == 1
    assert result.cost.forks_discarded == len(made) - 2  # all but the repair's and the failed one
    assert result.repair is not None and failed != result.repair.fork_run_id
    assert threads(env) == before | {thread_of(env, failed), thread_of(env, result.repair.fork_run_id or "")}


class FailingVerifier(ReferenceVerifier):
    """Judges the baseline and the first probe, then raises (a verifier outage mid-search)."""

    calls = 0

    def verify(self, trajectory: Trajectory) -> Any:
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError("verifier down")
        return super().verify(trajectory)


def test_forks_of_a_repair_that_raises_are_discarded(
    env: SweepEnvironment, faulted: tuple[Trajectory, Question]
) -> None:
    run, question = faulted
    before, forks_before = threads(env), made_forks(env, faulted)
    with pytest.raises(RuntimeError, match="verifier down"):
        repair_run(
            run,
            backend=env.backend,
            proposer=OfflineProposer(env.adapter, env.scoped_index),
            verifier=FailingVerifier(question.answer, question.aliases),
            store=env.store,
            config=CONFIG,
        )
    made = made_forks(env, faulted) - forks_before
    assert len(made) == 2  # the first probe and the second fork, whose verdict raised
    assert threads(env) == before
