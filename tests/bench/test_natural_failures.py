"""Natural failures (base runs wrong with no fault) certified by single-step intervention, and
by a chain of clean steps when no single one flips the run."""

from __future__ import annotations

import pytest

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.suites.fp import _diagnose
from benchmarks.suites.natural import (
    CERTIFY_RULE,
    NATURAL_RECORD,
    _candidates,
    _clean_query,
    _fact_of,
    natural_failures,
    score_natural,
)
from benchmarks.world.generator import generate_world
from causal_middleware.faults.families import hop_target
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.model import HopGold, Question
from causal_middleware.tasks.scoring import contains_answer, is_correct


@pytest.fixture(scope="module", params=[1, 2])
def certified(request):  # type: ignore[no-untyped-def]
    # the offline model's BM25 searches miss a gold passage in several of 16 questions; on seed 2
    # it also misreads, and two of its failures need two clean steps (one on each seed)
    world = generate_world(16, seed=request.param)
    env = reference_sweep_environment(world, store=InMemorySpanStore(), seed=request.param)
    failures = natural_failures(env, world.questions, seed=request.param)
    yield env, world, failures, request.param
    env.close()


def test_the_certified_step_is_the_first_whose_clean_version_alone_flips_the_run(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures, _ = certified
    assert len(failures) >= 2
    labelled = [(b, q, lab) for b, q, lab in failures if lab.kind == "single"]
    assert labelled
    for base, question, label in labelled:
        assert label.rule == CERTIFY_RULE and label.chain == [(label.hop, label.node)]
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
    env, world, failures, seed = certified
    runs = len(env.store.list_runs(limit=None))
    again = natural_failures(env, world.questions, seed=seed)
    assert [lab for _, _, lab in again] == [lab for _, _, lab in failures]
    assert len(env.store.list_runs(limit=None)) == runs  # no base run and no fork made again
    assert len(env.store.get_records(NATURAL_RECORD)) == len(failures)


def test_every_diagnoser_is_scored_on_the_certified_failures_only(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures, _ = certified
    results = score_natural(env, failures, ["rule", "llm_judge"], _diagnose, B=50)
    assert results["failures"] == len(failures)
    assert results["certified"] + results["chained"] + results["uncertified"] == len(failures)
    assert results["chained"] == sum(lab.kind == "chain" for _, _, lab in failures) >= 1
    assert sum(results["by_cause"].values()) == results["certified"]
    rule = results["diagnosers"]["rule"]
    assert rule["n"] == results["certified"] and 0 <= rule["correct"] <= rule["n"]
    assert rule["chained"]["n"] == results["chained"]
    labels = {lab.run_id: lab.hop for _, _, lab in failures if lab.hop is not None}
    assert set(rule["named"]) == set(labels)  # one named hop per labelled run, scored against it
    single = {lab.run_id for _, _, lab in failures if lab.kind in ("single", "answer")}
    assert sum(rule["named"][rid] == labels[rid] for rid in single) == rule["correct"]
    assert (
        sum(rule["named"][rid] == hop for rid, hop in labels.items())
        == rule["correct"] + rule["chained"]["correct"]
    )
    assert results["diagnosers"]["llm_judge"]["n"] == 0  # no chat model: not run, not scored
    judge = results["diagnosers"]["llm_judge"]["named"]
    assert set(judge) == set(labels) and set(judge.values()) == {None}


def test_a_chained_label_is_the_first_wrong_step_and_its_chain_flips_only_when_whole(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures, _ = certified
    chained = [(b, q, lab) for b, q, lab in failures if lab.kind == "chain"]
    assert chained  # one on each seed
    for base, question, label in chained:
        candidates = _candidates(env, base, question)
        assert [c[:2] for c in candidates][0] == (label.hop, label.node) == label.chain[0]
        assert len(label.chain) >= 2 and label.tried == len(candidates) + len(label.chain) - 1
        for _, _, intervention in candidates:  # no single clean step flips it
            fork = env.backend.fork(
                base.run_id, hop=intervention.hop, node=intervention.node, values=intervention.values
            )
            assert not is_correct(fork.answer, question)
        run = base
        for position, (hop, node) in enumerate(label.chain):  # replayed step by step, the whole chain flips
            after = label.chain[position - 1][0] if position else 0
            step = next(c for c in _candidates(env, run, question, after=after) if c[:2] == (hop, node))
            run = env.backend.fork(run.run_id, hop=step[2].hop, node=step[2].node, values=step[2].values)
            assert is_correct(run.answer, question) == (position == len(label.chain) - 1)


def test_a_clean_step_never_hands_a_step_what_its_inputs_lacked(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures, _ = certified
    corpus = env.fault_corpus()
    unserved_wrong_reads = 0
    for base, question, _ in failures:
        by_hop = {(h, n) for h, n, _ in _candidates(env, base, question)}
        for hop in base.hops:
            gold = hop_target(question, base, hop.index, corpus).gold if hop.sub_query else None
            if gold is None:
                continue
            served = any(contains_answer(d.text, gold.answer, gold.aliases) for d in hop.documents)
            fact = _fact_of(base, hop.index) or ""
            if not served and not contains_answer(fact, gold.answer, gold.aliases):
                unserved_wrong_reads += 1
                assert (hop.index, "read") not in by_hop  # the reader never had the answer
            if served:
                assert (hop.index, "retrieve") not in by_hop and (hop.index, "decide") not in by_hop
    assert unserved_wrong_reads  # the exclusion was exercised


def test_a_retrieval_after_a_misread_bridge_is_not_blamed(certified) -> None:  # type: ignore[no-untyped-def]
    env, _, failures, _ = certified
    corpus = env.fault_corpus()
    for base, question, _ in failures:
        right: set[int] = set()
        by_hop = {(h, n) for h, n, _ in _candidates(env, base, question)}
        for hop in base.hops:
            gold = hop_target(question, base, hop.index, corpus).gold if hop.sub_query else None
            if gold is None:
                continue
            if (hop.index, "retrieve") in by_hop:
                assert gold.index == 1 or gold.index - 1 in right, (question.id, hop.index)
            if contains_answer(_fact_of(base, hop.index) or "", gold.answer, gold.aliases):
                right.add(gold.index)


def test_a_label_made_under_another_rule_is_never_reused(certified) -> None:  # type: ignore[no-untyped-def]
    env, world, failures, seed = certified
    base, _, label = next((b, q, lab) for b, q, lab in failures if lab.kind == "single")
    stale = label.model_copy(update={"hop": 99, "rule": CERTIFY_RULE - 1}).model_dump(mode="json")
    env.store.put_record(NATURAL_RECORD, base.run_id, stale)  # newer than the label, but stale
    again = {lab.run_id: lab for _, _, lab in natural_failures(env, world.questions, seed=seed)}
    assert again[base.run_id] == label


def test_hotpotqa_has_no_gold_sub_question_to_try() -> None:
    hops = [
        HopGold(index=1, question="Alpha Band >> bridge entity", answer="Beta"),
        HopGold(index=2, question="#1 >> Where was the founder born?", answer="Gamma"),
    ]
    question = Question(
        id="h1", text="Where was the founder born?", answer="Gamma", hops=hops, dataset="hotpotqa"
    )
    assert _clean_query(question, 1, {}) is None
    musique = question.model_copy(update={"dataset": "musique"})
    assert _clean_query(musique, 2, {1: "Delta"}) == "What is the Where was the founder born? of Delta?"
