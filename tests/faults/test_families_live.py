"""Each fault family on the live reference agent: the stored fork changes exactly what the family
claims, at exactly the requested hop, and the suffix after it was re-executed (not edited)."""

from __future__ import annotations

from faults_helpers import assert_live_suffix, correct_question, sweep_one

from benchmarks.world.templates import parse_sub_query
from causal_middleware.faults.grammar import CONFIDENCE_MARKERS
from causal_middleware.faults.model import FaultLabel
from causal_middleware.store.stitch import INHERITED, INTERVENED
from causal_middleware.tasks.scoring import contains_answer, is_correct, token_set
from causal_middleware.text import tokenize


def _label(fork) -> FaultLabel:  # type: ignore[no-untyped-def]
    return FaultLabel.model_validate(fork.labels["fault"])


def test_empty_retrieval_empties_the_hop_and_the_agent_requeries(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "empty_retrieval", 2)
    assert record.status == "done" and record.stage == "retrieval"
    assert_live_suffix(env, base, fork, 2, "retrieve")
    assert base.hop(2).documents and fork.hop(2).documents == []
    assert fork.hop(2).sub_query == base.hop(2).sub_query
    # the agent noticed the empty evidence and searched the same fact again, with another query
    asked, again = parse_sub_query(fork.hop(2).sub_query), parse_sub_query(fork.hop(3).sub_query)
    assert asked is not None and again is not None and again[0] == asked[0]
    assert fork.hop(3).sub_query != fork.hop(2).sub_query
    assert fork.hop(3).sub_query != base.hop(3).sub_query
    label = _label(fork)
    assert (label.family, label.requested_hop, label.injected_hop, label.node) == (
        "empty_retrieval",
        2,
        2,
        "retrieve",
    )
    assert fork.labels["question_id"] == question.id and fork.labels["depth"] == 2
    assert fork.reference == question.answer
    assert fork.outcome is not None and fork.outcome.value == (
        "success" if is_correct(fork.answer, question) else "failure"
    )


def test_irrelevant_documents_are_corpus_passages_sharing_no_token_with_the_hop(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "irrelevant_documents", 1)
    assert_live_suffix(env, base, fork, 1, "retrieve")
    label = _label(fork)
    planted = [p.passage_id for p in label.planted]
    got = fork.hop(1).documents
    assert [d.id for d in got] == planted and len(got) == len(base.hop(1).documents)
    assert not {d.id for d in got} & {d.id for d in base.hop(1).documents}
    corpus = env.fault_corpus()
    gold = question.hops[0]
    banned = token_set(gold.answer) | token_set(question.metadata["entities"][0])
    for d in got:
        assert d.text == corpus.by_id[d.id].text
        assert not token_set(f"{corpus.by_id[d.id].title} {d.text}") & banned


def test_query_drift_substitutes_the_sub_query_and_retrieval_runs_live_on_it(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "query_drift", 2)
    assert_live_suffix(env, base, fork, 2, "decide")
    drift = _label(fork).drift
    assert drift is not None and drift.original == base.hop(2).sub_query
    assert fork.hop(2).sub_query == drift.drifted != drift.original
    if drift.strategy == "namesake":
        assert drift.replaced in drift.original and drift.replacement in drift.drifted
    retrievals = [s for s in fork.hop(2).steps if s.kind == "retrieval"]
    assert len(retrievals) == 1 and not retrievals[0].attributes.get(INHERITED)
    assert not retrievals[0].attributes.get(INTERVENED)  # the fork's own, live retrieval
    assert retrievals[0].query == drift.drifted
    index = env.scoped_index.base
    assert [d.id for d in retrievals[0].documents] == [h.passage.id for h in index.search(drift.drifted, 5)]


def test_false_premise_adds_one_confident_wrong_claim_at_rank_one(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "false_premise", 3)
    assert_live_suffix(env, base, fork, 3, "retrieve")
    (planted,) = _label(fork).planted
    docs = fork.hop(3).documents
    assert docs[0].id == planted.passage_id and docs[0].text == planted.text
    assert [(d.id, d.text) for d in docs[1:]] == [(d.id, d.text) for d in base.hop(3).documents]
    assert any(planted.text.startswith(m) for m in CONFIDENCE_MARKERS)
    assert contains_answer(planted.text, planted.value) and planted.gold_value == question.hops[2].answer
    assert not token_set(planted.value) & token_set(planted.gold_value)
    assert planted.passage_id not in env.fault_corpus().by_id


def test_stale_evidence_adds_one_dated_outdated_statement(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "stale_evidence", 1)
    assert_live_suffix(env, base, fork, 1, "retrieve")
    (planted,) = _label(fork).planted
    docs = fork.hop(1).documents
    assert docs[0].id == planted.passage_id and docs[0].text == planted.text and planted.date is not None
    evidence = fork.lineage.intervention.values["evidence"]  # what the agent's state received
    assert evidence[0]["id"] == planted.passage_id and evidence[0]["date"] == planted.date
    assert [d.id for d in docs[1:]] == [d.id for d in base.hop(1).documents]
    assert planted.date[:4] in planted.text
    corpus = env.fault_corpus()
    if planted.fabricated:
        assert planted.passage_id not in corpus.by_id and planted.value != planted.gold_value
    else:
        assert corpus.by_id[planted.passage_id].metadata.get("stale") is True


def test_content_corruption_changes_one_span_of_one_passage(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "content_corruption", 3)
    assert_live_suffix(env, base, fork, 3, "retrieve")
    corruption = _label(fork).corruption
    assert corruption is not None and corruption.kind == "answer_fact"
    before, after = base.hop(3).documents, fork.hop(3).documents
    assert [d.id for d in after] == [d.id for d in before]
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b.text != a.text]
    assert len(changed) == 1 and changed[0][0].id == corruption.passage_id
    old, new = changed[0]
    assert new.text == old.text.replace(corruption.original, corruption.corrupted)
    assert contains_answer(old.text, corruption.original) and not contains_answer(
        new.text, corruption.original
    )
    assert not set(tokenize(corruption.original)) & set(tokenize(corruption.corrupted))
    assert record.content_outcome in ("absorbed", "resisted", "derailed")
    assert record.outcome == ("recovered" if is_correct(fork.answer, question) else "failed")


def test_early_termination_answers_at_the_hop_without_searching(env) -> None:  # type: ignore[no-untyped-def]
    question, base = correct_question(env)
    record, fork = sweep_one(env, question, "early_termination", 2)
    assert record.stage == "answer"
    assert_live_suffix(env, base, fork, 2, "decide")
    assert any(s.kind == "retrieval" for s in base.hop(2).steps)
    assert not [s for s in fork.steps if s.kind == "retrieval" and (s.hop or 0) >= 2]
    intervened = [s for s in fork.hop(2).steps if s.kind == "node" and s.attributes.get(INTERVENED)]
    assert intervened and intervened[0].output["decision"] == "answer"
    assert [s.node for s in fork.steps if s.kind == "node" and not s.attributes.get(INHERITED)][
        -1
    ] == "answer"
    assert not is_correct(fork.answer, question) and record.outcome == "failed"
