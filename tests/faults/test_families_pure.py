"""The family functions on hand-built runs: what each puts in the intervention, without an agent."""

from __future__ import annotations

import pytest
from faults_helpers import doc, question, trajectory

from benchmarks.world.grammar import WORLD_GRAMMAR
from causal_middleware.faults.corpus import FaultCorpus
from causal_middleware.faults.families import FaultContext, hop_target, plan_fault
from causal_middleware.faults.grammar import CONFIDENCE_MARKERS
from causal_middleware.spans.model import Document, Intervention, Trajectory
from causal_middleware.tasks.model import Passage
from causal_middleware.tasks.scoring import token_set


class RecordingAdapter:
    """Returns interventions that carry what the family asked for, so tests can read it back."""

    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        return Intervention(
            node="retrieve", hop=hop, values={"evidence": [d.model_dump() for d in documents]}
        )

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        return Intervention(node="decide", hop=hop, values={"sub_query": sub_query})

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        return Intervention(node="decide", hop=hop, values={"decision": "answer"})

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        return Intervention(node="read", hop=hop, values={"fact": fact})


def _passage(pid: str, entity: str, etype: str, text: str, **meta: object) -> Passage:
    return Passage(id=pid, title=entity, text=text, metadata={"entity": entity, "type": etype, **meta})


CORPUS = FaultCorpus(
    [
        _passage(
            "p1",
            "Arla Venn",
            "person",
            "Arla Venn was born in Port Tessaly. Arla Venn works for Brask Holdings.",
        ),
        _passage("p2", "Arla Vent", "person", "Arla Vent was born in Lake Mirow."),
        _passage("p3", "Port Tessaly", "city", "Port Tessaly is a city."),
        _passage("p4", "Lake Mirow", "city", "Lake Mirow is a city."),
        _passage("p5", "Brask Holdings", "org", "Brask Holdings is a company."),
        _passage("p6", "Quill Works", "org", "Quill Works is a company."),
        _passage(
            "p7",
            "Arla Venn",
            "person",
            "As of 1990, Arla Venn worked for Quill Works.",
            stale=True,
            relations=["employer"],
        ),
        _passage("p8", "Oren Dulc", "person", "Oren Dulc is a painter."),
    ],
    grammar=WORLD_GRAMMAR,
)
BORN = question(
    "Port Tessaly", [("Where was Arla Venn born?", "Port Tessaly", "born_in")], "Where was Arla Venn born?"
)
EMPLOYER = question(
    "Brask Holdings", [("Which organisation does Arla Venn work for?", "Brask Holdings", "employer")],
    "Which organisation does Arla Venn work for?",
)  # fmt: skip


def _ctx(q, query: str, docs: list[Document], answer: str, corpus: FaultCorpus = CORPUS) -> FaultContext:  # type: ignore[no-untyped-def]
    return FaultContext(trajectory([(query, docs)], answer), q, corpus, RecordingAdapter(), seed=0)  # type: ignore[arg-type]


def test_query_drift_swaps_the_subject_for_a_near_namesake() -> None:
    plan = plan_fault(
        "query_drift", _ctx(BORN, "Where was Arla Venn born?", [doc("p1", "x")], "Port Tessaly"), 1
    )
    assert plan.status == "ready" and plan.intervention.values == {"sub_query": "Where was Arla Vent born?"}
    drift = plan.label.drift
    assert (drift.strategy, drift.replaced, drift.replacement) == ("namesake", "Arla Venn", "Arla Vent")


def test_query_drift_drops_the_relation_terms_when_no_namesake_exists() -> None:
    plan = plan_fault(
        "query_drift", _ctx(BORN, "Where was Oren Dulc born?", [doc("p8", "x")], "Port Tessaly"), 1
    )
    assert plan.label.drift.strategy == "drop_relation"
    assert plan.intervention.values == {"sub_query": "Where was Oren Dulc?"}


def test_irrelevant_documents_share_no_token_with_the_gold_value_or_subject() -> None:
    ctx = _ctx(BORN, "Where was Arla Venn born?", [doc("p1", "x"), doc("p2", "y")], "Port Tessaly")
    plan = plan_fault("irrelevant_documents", ctx, 1)
    chosen = [d["id"] for d in plan.intervention.values["evidence"]]
    assert len(chosen) == 2 and not {"p1", "p2"} & set(chosen)
    for pid in chosen:
        passage = CORPUS.by_id[pid]
        assert not token_set(f"{passage.title} {passage.text}") & (
            token_set("Port Tessaly") | token_set("Arla Venn")
        )
    tiny = FaultCorpus(
        [_passage("p1", "Arla Venn", "person", "Arla Venn was born in Port Tessaly.")], grammar=WORLD_GRAMMAR
    )
    skipped = plan_fault(
        "irrelevant_documents", _ctx(BORN, "Where was Arla Venn born?", [], "Port Tessaly", tiny), 1
    )
    assert skipped.status == "skipped" and skipped.reason_code == "not_certifiable"


def test_false_premise_states_a_certified_wrong_value_confidently_at_rank_one() -> None:
    docs = [doc("p1", CORPUS.by_id["p1"].text)]
    plan = plan_fault("false_premise", _ctx(BORN, "Where was Arla Venn born?", docs, "Port Tessaly"), 1)
    evidence = plan.intervention.values["evidence"]
    (planted,) = plan.label.planted
    assert evidence[0]["text"] == planted.text and [d["id"] for d in evidence[1:]] == ["p1"]
    assert planted.value == "Lake Mirow" and planted.gold_value == "Port Tessaly"  # the only other city
    marker = next(m for m in CONFIDENCE_MARKERS if planted.text.startswith(m))
    assert planted.text[len(marker) :] in {
        "Arla Venn was born in Lake Mirow.",
        "Arla Venn is a native of Lake Mirow.",
    }


def test_stale_evidence_prefers_the_corpus_superseded_statement() -> None:
    docs = [doc("p1", CORPUS.by_id["p1"].text)]
    plan = plan_fault(
        "stale_evidence",
        _ctx(EMPLOYER, "Which organisation does Arla Venn work for?", docs, "Brask Holdings"),
        1,
    )
    (planted,) = plan.label.planted
    assert (planted.passage_id, planted.fabricated) == ("p7", False)
    assert plan.upserts == []  # already in the corpus: nothing to persist


def test_stale_evidence_fabricates_a_dated_variant_when_the_corpus_has_none() -> None:
    docs = [doc("p1", CORPUS.by_id["p1"].text)]
    ctx = _ctx(BORN, "Where was Arla Venn born?", docs, "Port Tessaly")
    plan = plan_fault("stale_evidence", ctx, 1, persistent=True)
    (planted,) = plan.label.planted
    assert planted.fabricated and planted.value == "Lake Mirow" and planted.date is not None
    assert planted.text.endswith(f"This was recorded in {planted.date[:4]}.")
    assert plan.label.persistent and [p.id for p in plan.upserts] == [planted.passage_id]
    assert plan.upserts[0].date is not None and plan.upserts[0].text == planted.text
    # employer is a dated relation: the fabricated statement uses its dated wording
    other = question(
        "Brask Holdings", [("Which organisation does Oren Dulc work for?", "Brask Holdings", "employer")],
        "Which organisation does Oren Dulc work for?",
    )  # fmt: skip
    plan = plan_fault("stale_evidence", _ctx(other, other.text, [doc("p8", "x")], "Brask Holdings"), 1)
    text = plan.label.planted[0].text
    assert text.startswith(("As of ", "In ")) and "Quill Works" in text and "Oren Dulc" in text


def test_hop_target_parses_the_sub_query_and_maps_the_gold_hop() -> None:
    q = question(
        "Lake Mirow", [("Who founded Brask Holdings?", "Arla Venn", "founded_by"), ("Where was #1 born?", "Lake Mirow", "born_in")],
        "Where was the founder of Brask Holdings born?",
    )  # fmt: skip
    run = trajectory(
        [
            ("Who founded Brask Holdings?", [doc("a", "Arla Venn established Brask Holdings.")]),
            ("Where was Arla Venn born?", [doc("b", "nothing")]),
            ("Arla Venn birthplace native of", [doc("c", "Arla Venn was born in Lake Mirow.")]),
        ]
    )
    first, second, third = (hop_target(q, run, h, CORPUS) for h in (1, 2, 3))
    assert (first.relation, first.subject, first.gold.index) == ("founded_by", "Brask Holdings", 1)
    assert (second.relation, second.subject, second.gold.index) == ("born_in", "Arla Venn", 2)
    assert (third.relation, third.subject, third.gold.index) == ("born_in", "Arla Venn", 2)  # a re-query


def test_unknown_family_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown fault family"):
        plan_fault("typo", _ctx(BORN, "q", [], "Port Tessaly"), 1)  # type: ignore[arg-type]
