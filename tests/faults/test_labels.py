"""Eligibility (requested vs actual injected hop, base correctness), judge-free outcome labels,
query contamination and the report's tables, on hand-built runs and records."""

from __future__ import annotations

from faults_helpers import corpus, doc, question, trajectory

from causal_middleware.faults.eligibility import check_eligibility, injected_hop, search_hops, stage_of
from causal_middleware.faults.families import FaultContext, plan_fault
from causal_middleware.faults.model import CorruptionRecord, UnitRecord
from causal_middleware.faults.outcomes import content_outcome, outcome_of, query_contaminated
from causal_middleware.faults.report import build_report, markdown_tables
from causal_middleware.spans.model import Hop, NodeStep, ToolStep

Q = question("Lake Mirow", [("q1", "Oren Dulc", None), ("q2", "Lake Mirow", None)], "Where was X born?")
CORRUPTION = CorruptionRecord(
    kind="answer_fact", original="Lake Mirow", corrupted="Upper Fen", passage_id="p", seed=1
)


def _two_searches(answer: str = "Lake Mirow"):  # type: ignore[no-untyped-def]
    run = trajectory(
        [("Who founded Brask?", [doc("a", "x")]), ("Where was Oren Dulc born?", [doc("b", "y")])], answer
    )
    stop = Hop(index=3, steps=[NodeStep(step_id="f" * 16, node="decide", hop=3)])  # the decision to answer
    return run.model_copy(update={"hops": [*run.hops, stop]})


def test_a_request_past_the_last_search_lands_earlier_and_is_ineligible() -> None:
    run = _two_searches()
    assert search_hops(run) == [1, 2]
    assert injected_hop(run, 3) == 2 and injected_hop(run, 2) == 2
    verdict = check_eligibility(run, Q, "empty_retrieval", 3)
    assert not verdict.eligible and verdict.injected_hop == 2 and verdict.code == "hop_mismatch"
    assert check_eligibility(run, Q, "empty_retrieval", 2).eligible


def test_a_base_run_with_a_wrong_answer_is_ineligible() -> None:
    verdict = check_eligibility(_two_searches("Upper Fen"), Q, "false_premise", 1)
    assert not verdict.eligible and verdict.code == "base_incorrect" and verdict.injected_hop == 1


def test_plan_fault_records_requested_and_actual_hop_without_injecting_when_ineligible() -> None:
    ctx = FaultContext(
        _two_searches(), Q, corpus(("p", "Oren Dulc", "person", "Oren Dulc is a painter.")), adapter=None
    )  # type: ignore[arg-type]
    plan = plan_fault("early_termination", ctx, 3)
    assert (plan.status, plan.requested_hop, plan.injected_hop, plan.stage) == ("ineligible", 3, 2, "answer")
    assert plan.intervention is None and plan.label is None


def test_stages() -> None:
    run = _two_searches()
    assert stage_of("empty_retrieval", run, 1) == "retrieval"
    assert stage_of("early_termination", run, 1) == "answer"
    assert stage_of("empty_retrieval", run, None) == "none"
    tool_hop = Hop(index=1, steps=[ToolStep(step_id="e" * 16, tool_name="search", hop=1)])
    assert stage_of("query_drift", run.model_copy(update={"hops": [tool_hop]}), 1) == "tool"


def test_outcomes_correctness_wins_then_absorbed_then_derailed() -> None:
    assert outcome_of("Lake Mirow", Q) == "recovered" and outcome_of("Upper Fen", Q) == "failed"
    assert content_outcome("Lake Mirow", Q, CORRUPTION) == "resisted"
    assert content_outcome("Lake Mirow or Upper Fen", Q, CORRUPTION) == "resisted"  # correctness wins
    assert content_outcome("It is Upper Fen.", Q, CORRUPTION) == "absorbed"
    assert content_outcome("Upper Fenwick", Q, CORRUPTION) == "derailed"  # not the span's whole tokens
    assert content_outcome(None, Q, CORRUPTION) == "derailed"


def test_query_contamination_looks_only_after_the_injected_hop() -> None:
    run = trajectory([("Where is Upper Fen?", []), ("Who is the mayor of Upper Fen?", []), ("other", [])])
    assert query_contaminated(run, CORRUPTION, 1)
    assert not query_contaminated(run, CORRUPTION, 2)
    clean = trajectory([("Where is Upper Fen?", []), ("Who is the mayor of Lake Mirow?", [])])
    assert not query_contaminated(clean, CORRUPTION, 1)


def _record(family: str, depth: int, status: str = "done", **kw) -> UnitRecord:  # type: ignore[no-untyped-def]
    return UnitRecord(
        key=f"{family}{depth}{kw}", status=status, family=family, requested_hop=depth, seed=0, dataset="d",
        retriever="bm25", question_id="q", **kw,
    )  # fmt: skip


def test_report_tables_count_recovery_by_depth_and_family_and_content_outcomes() -> None:
    records = [
        _record("empty_retrieval", 1, outcome="recovered"),
        _record("empty_retrieval", 1, outcome="failed"),
        _record("false_premise", 2, outcome="failed"),
        _record("false_premise", 2, "ineligible", reason_code="hop_mismatch"),
        _record(
            "content_corruption", 1, outcome="failed", content_outcome="absorbed", query_contamination=True
        ),
        _record(
            "content_corruption",
            1,
            outcome="recovered",
            content_outcome="resisted",
            query_contamination=False,
        ),
        _record(
            "content_corruption", 1, outcome="failed", content_outcome="derailed", query_contamination=True
        ),
        _record("content_corruption", 2, "skipped", reason_code="not_certifiable"),
        _record("empty_retrieval", 3, "error", error="boom"),
    ]
    report = build_report(records)
    assert report.units == 9 and report.statuses == {"done": 6, "ineligible": 1, "skipped": 1, "error": 1}
    assert report.reasons == {"hop_mismatch": 1, "not_certifiable": 1}
    assert (report.recovery["empty_retrieval"][1].n, report.recovery["empty_retrieval"][1].rate) == (2, 0.5)
    assert report.recovery["false_premise"][2].rate == 0.0
    assert report.recovery_by_depth[1].n == 5 and report.recovery_by_depth[1].recovered == 2
    hop1 = report.content[1]
    assert (hop1.n, hop1.absorbed, hop1.resisted, hop1.derailed, hop1.contaminated) == (3, 1, 1, 1, 2)
    assert report.content[2].skipped == 1 and report.content[2].n == 0
    as_json = report.to_json()
    assert as_json["recovery"]["empty_retrieval"]["1"] == {"n": 2, "recovered": 1, "rate": 0.5}
    assert as_json["content"]["1"]["absorbed_rate"] == round(1 / 3, 4)
    text = markdown_tables(report)
    assert "| empty_retrieval | 0.50 (1/2) |" in text and "| 1 | 3 | 0.33 (1)" in text and "2 of 3" in text
