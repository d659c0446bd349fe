"""Natural failures (base runs wrong with no fault) certified by single-step intervention."""

from __future__ import annotations

import pytest

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.suites.fp import _diagnose
from benchmarks.suites.natural import NATURAL_RECORD, _candidates, natural_failures, score_natural
from benchmarks.world.generator import generate_world
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.scoring import is_correct


@pytest.fixture(scope="module")
def certified():  # type: ignore[no-untyped-def]
    # seed 1: the offline model's BM25 searches miss a gold passage in several of 16 questions
    world = generate_world(16, seed=1)
    env = reference_sweep_environment(world, store=InMemorySpanStore(), seed=1)
    failures = natural_failures(env, world.questions, seed=1)
    yield env, world, failures
    env.close()


def test_the_certified_step_is_the_first_whose_clean_version_alone_flips_the_run(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures = certified
    assert len(failures) >= 2
    labelled = [(b, q, lab) for b, q, lab in failures if lab.hop is not None]
    assert labelled
    for base, question, label in labelled:
        assert not is_correct(base.answer, question)
        candidates = _candidates(env, base, question)
        assert label.tried == [(h, n) for h, n, _ in candidates].index((label.hop, label.node)) + 1
        for position, (hop, node, intervention) in enumerate(candidates[: label.tried]):
            fork = env.backend.fork(
                base.run_id, hop=intervention.hop, node=intervention.node, values=intervention.values
            )
            flipped = is_correct(fork.answer, question)
            assert flipped == (position == label.tried - 1), (hop, node)


def test_labels_are_kept_and_reused(certified) -> None:  # type: ignore[no-untyped-def]
    env, world, failures = certified
    runs = len(env.store.list_runs(limit=None))
    again = natural_failures(env, world.questions, seed=1)
    assert [lab for _, _, lab in again] == [lab for _, _, lab in failures]
    assert len(env.store.list_runs(limit=None)) == runs  # no base run and no fork made again
    assert len(env.store.get_records(NATURAL_RECORD)) == len(failures)


def test_every_diagnoser_is_scored_on_the_certified_failures_only(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures = certified
    results = score_natural(env, failures, ["rule", "llm_judge"], _diagnose, B=50)
    assert results["failures"] == len(failures)
    assert results["certified"] + results["uncertified"] == len(failures)
    assert sum(results["by_cause"].values()) == results["certified"]
    rule = results["diagnosers"]["rule"]
    assert rule["n"] == results["certified"] and 0 <= rule["correct"] <= rule["n"]
    labels = {lab.run_id: lab.hop for _, _, lab in failures if lab.hop is not None}
    assert set(rule["named"]) == set(labels)  # one named hop per certified run, scored against it
    assert sum(rule["named"][rid] == hop for rid, hop in labels.items()) == rule["correct"]
    assert results["diagnosers"]["llm_judge"]["n"] == 0  # no chat model: not run, not scored
    judge = results["diagnosers"]["llm_judge"]["named"]
    assert set(judge) == set(labels) and set(judge.values()) == {None}
