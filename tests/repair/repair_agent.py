"""Failed runs of the reference agent for the repair tests, made by fault injection."""

from __future__ import annotations

import pytest

from causal_middleware.faults.families import FaultContext, plan_fault
from causal_middleware.faults.model import FaultFamily
from causal_middleware.faults.sweep import SweepEnvironment
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct


def first_failing_fault(
    env: SweepEnvironment, family: FaultFamily, hop: int = 1
) -> tuple[Trajectory, Question]:
    """The first question the agent answers right whose ``family`` fault at ``hop`` makes it fail:
    the faulted fork and its question."""
    corpus = env.fault_corpus()
    for question in env.dataset.questions:
        base = env.store.get_trajectory(env.run_base(question))
        if not is_correct(base.answer, question):
            continue
        ctx = FaultContext(trajectory=base, question=question, corpus=corpus, adapter=env.adapter, seed=0)
        plan = plan_fault(family, ctx, hop)
        if plan.status != "ready" or plan.intervention is None:
            continue
        iv = plan.intervention
        fork = env.backend.fork(
            base.run_id, hop=iv.hop, node=iv.node, values=iv.values, intervention_kind=iv.kind
        )
        if not is_correct(fork.answer, question):
            return fork, question
    pytest.fail(
        f"no hop-{hop} {family} made the reference agent fail on the {len(env.dataset.questions)}-question world"
    )
