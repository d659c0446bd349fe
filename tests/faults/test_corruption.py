"""Certified content corruption on hand-built hops: priority order, in-domain distractors with no
shared token, number perturbations, reproducibility from the seed, skip-and-count."""

from __future__ import annotations

import random

import pytest
from faults_helpers import corpus, doc, question, trajectory

from causal_middleware.faults.corruption import (
    NotCertifiable,
    certify_corruption,
    corruption_seed,
    perturb_number,
)
from causal_middleware.faults.families import FaultContext, plan_fault
from causal_middleware.faults.model import UnitRecord
from causal_middleware.faults.report import build_report
from causal_middleware.tasks.scoring import token_set

CORPUS = corpus(
    ("p1", "Velmora Industries", "org", "Velmora Industries was founded by Arla Venn."),
    ("p2", "Arla Venn", "person", "Arla Venn was born in Port Tessaly."),
    ("p3", "Port Tessaly", "city", "Port Tessaly has a population of 1,234,567."),
    ("p4", "Brask Holdings", "org", "Brask Holdings was founded by Oren Dulc."),
    ("p5", "Oren Dulc", "person", "Oren Dulc was born in Lake Mirow."),
    ("p6", "Lake Mirow", "city", "Lake Mirow has a population of 48,000."),
    ("p7", "Sela Quorn", "person", "Sela Quorn was born in Upper Fen."),
    ("p8", "Upper Fen", "city", "Upper Fen is a city."),
    ("p9", "Venn Tessaly", "person", "Venn Tessaly is a painter."),  # shares tokens with both
)
Q = question(
    "Port Tessaly",
    [
        ("Who founded Velmora Industries?", "Arla Venn", "founded_by"),
        ("Where was #1 born?", "Port Tessaly", "born_in"),
    ],
    "Where was the founder of Velmora Industries born?",
)


def _run(hop1_docs, hop2_docs, hop2_query="Where was Arla Venn born?"):  # type: ignore[no-untyped-def]
    return trajectory([("Who founded Velmora Industries?", hop1_docs), (hop2_query, hop2_docs)])


def test_answer_fact_comes_first_and_its_replacement_is_a_same_type_entity_sharing_no_token() -> None:
    run = _run(
        [doc("p1", CORPUS.by_id["p1"].text)],
        [doc("p7", "Sela Quorn is a painter."), doc("p2", CORPUS.by_id["p2"].text)],
    )
    plan = certify_corruption(Q, run, 2, CORPUS, seed=0)
    record = plan.record
    assert (record.kind, record.original, record.passage_id, record.rank) == (
        "answer_fact",
        "Port Tessaly",
        "p2",
        2,
    )
    assert record.corrupted in {"Lake Mirow", "Upper Fen"}  # the other cities
    assert not token_set(record.corrupted) & token_set("Port Tessaly")
    assert plan.documents[1].text == f"Arla Venn was born in {record.corrupted}."
    assert plan.documents[0].text == "Sela Quorn is a painter."
    assert plan.passage.id == "p2" and plan.passage.text == plan.documents[1].text


def test_bridge_entity_when_the_answer_is_absent_and_it_feeds_a_later_sub_query() -> None:
    run = _run([doc("p1", CORPUS.by_id["p1"].text)], [doc("p2", "Arla Venn was born somewhere.")])
    record = certify_corruption(Q, run, 1, CORPUS, seed=0).record
    assert (record.kind, record.original) == ("bridge_entity", "Arla Venn")
    assert record.corrupted in {"Oren Dulc", "Sela Quorn"}  # people sharing no token with "Arla Venn"


def test_a_bridge_named_in_the_question_or_in_no_later_sub_query_is_not_a_bridge() -> None:
    # hop 2 searched something else: Arla Venn feeds no later sub-query, so a salient entity is taken
    run = _run([doc("p1", CORPUS.by_id["p1"].text)], [doc("p5", "x")], hop2_query="Where was Oren Dulc born?")
    record = certify_corruption(Q, run, 1, CORPUS, seed=0).record
    assert (
        record.kind == "salient_entity" and record.original == "Arla Venn"
    )  # first entity not in the question


def test_salient_number_gets_a_deterministic_perturbation_in_the_same_format() -> None:
    q = question(
        "Kelda",
        [("Who is the mayor of Port Tessaly?", "Kelda", "mayor")],
        "Who is the mayor of Port Tessaly?",
    )
    run = trajectory([("Who is the mayor of Port Tessaly?", [doc("p3", CORPUS.by_id["p3"].text)])])
    first = certify_corruption(q, run, 1, CORPUS, seed=7).record
    assert first.kind == "number" and first.original == "1,234,567"
    assert first.corrupted != first.original and "," in first.corrupted
    assert int(first.corrupted.replace(",", "")) != 1234567
    assert certify_corruption(q, run, 1, CORPUS, seed=7).record == first


@pytest.mark.parametrize("text", ["1823", "2001", "1,234,567", "48,000", "12"])
def test_perturb_number_changes_the_value_and_keeps_the_format(text: str) -> None:
    for seed in range(20):
        new = perturb_number(text, random.Random(seed))
        assert new != text and new.replace(",", "").isdigit()
        assert ("," in new) == ("," in text)
        if len(text) == 4 and "," not in text:
            assert len(new) == 4 and 2 <= abs(int(new) - int(text)) <= 12


def test_the_replacement_is_reproducible_from_the_seed_and_varies_with_it() -> None:
    run = _run([doc("p1", CORPUS.by_id["p1"].text)], [doc("p2", CORPUS.by_id["p2"].text)])
    again = [certify_corruption(Q, run, 2, CORPUS, seed=3).record for _ in range(3)]
    assert again[0] == again[1] == again[2] and again[0].seed == corruption_seed(3, Q.id, 2)
    across = {certify_corruption(Q, run, 2, CORPUS, seed=s).record.corrupted for s in range(30)}
    assert across == {"Lake Mirow", "Upper Fen"}
    # the trace key is part of the seed: another question id draws independently
    assert certify_corruption(Q, run, 2, CORPUS, seed=3, trace="other").record.seed != again[0].seed


def test_nothing_certifiable_is_skipped_and_counted_never_changed() -> None:
    run = _run(
        [doc("p1", CORPUS.by_id["p1"].text)], [doc("z1", "nothing to see here."), doc("z2", "it rained.")]
    )
    with pytest.raises(NotCertifiable):
        certify_corruption(Q, run, 2, CORPUS, seed=0)
    empty = _run([doc("p1", CORPUS.by_id["p1"].text)], [])
    with pytest.raises(NotCertifiable, match="no evidence"):
        certify_corruption(Q, empty, 2, CORPUS, seed=0)
    # through plan_fault: a skipped unit with its reason, counted by the report
    run = run.model_copy(update={"answer": "Port Tessaly"})
    plan = plan_fault("content_corruption", FaultContext(run, Q, CORPUS, adapter=_NoAdapter()), 2)
    assert plan.status == "skipped" and plan.reason_code == "not_certifiable" and plan.intervention is None
    record = UnitRecord(
        key="k", status="skipped", family="content_corruption", requested_hop=2, seed=0, dataset="d",
        retriever="bm25", question_id=Q.id, reason=plan.reason, reason_code=plan.reason_code,
    )  # fmt: skip
    report = build_report([record])
    assert (
        report.content[2].skipped == 1
        and report.content[2].n == 0
        and report.reasons == {"not_certifiable": 1}
    )


def test_an_entity_with_no_distractor_sharing_no_token_is_passed_over() -> None:
    small = corpus(
        ("p1", "Arla Venn", "person", "Arla Venn was born in Port Tessaly."),
        ("p2", "Port Tessaly", "city", "Port Tessaly is a city."),
        ("p3", "Tessaly Bay", "city", "Tessaly Bay is a city."),  # the only other city shares "tessaly"
    )
    q = question(
        "Port Tessaly",
        [("Where was Arla Venn born?", "Port Tessaly", "born_in")],
        "Where was Arla Venn born?",
    )
    run = trajectory([("Where was Arla Venn born?", [doc("p1", small.by_id["p1"].text)])])
    with pytest.raises(NotCertifiable):
        certify_corruption(q, run, 1, small, seed=0)


class _NoAdapter:
    def evidence_update(self, *a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("a skipped unit builds no intervention")

    subquery_update = answer_now_update = fact_update = evidence_update
