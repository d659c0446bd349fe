"""Passive diagnosers and the analyses under them, on runs where the guilty hop is known."""

from __future__ import annotations

from attribution_sim import context_for, faulted_run, make_world

from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.hops import hop_views, question_text, render_hops
from causal_middleware.attribution.provenance import bridge_links, hop_signals, trace_terms, wrong_terms
from causal_middleware.spans.model import Status


def test_hop_views_split_query_evidence_and_fact(world) -> None:
    run = world.backend.run(world.questions["q0-3"])
    views = hop_views(run)
    assert [v.index for v in views] == [1, 2, 3]
    assert views[0].sub_query == "Who created Zorblat?"
    assert views[0].documents[0].text == "Zorblat was created by Quanta Works."
    assert views[0].fact == "Quanta Works" and views[0].retrieval_node == "retrieve"
    assert views[2].after_nodes == ["read"]  # the answer node is not part of the last hop
    text = render_hops(run, views)
    assert "Hop 2 (retrieval)" in text and "extracted: Mira Velt" in text and "Final answer: 'Lostra'" in text
    reverse = render_hops(run, views, reverse=True)
    assert reverse.index("Hop 3") < reverse.index("Hop 1")


def test_empty_intervention_keeps_the_hops_retrieving_node(world) -> None:
    run = faulted_run(world, "empty_retrieval", 3)
    last = hop_views(run)[-1]
    assert last.empty and last.retrieval_node == "retrieve" and last.after_nodes == ["read"]


def test_bridge_links_and_token_trace(world) -> None:
    run = faulted_run(make_world(sloppy=True), "content_corruption", 3)
    views = hop_views(run)
    links = bridge_links(views, question_text(run))
    assert links[1].source is None
    assert (links[2].source, links[2].terms) == (1, ["quanta", "works"])
    assert (links[3].source, links[3].terms) == (2, ["mira", "velt"])
    wrong = wrong_terms(run.answer, question_text(run))
    assert run.answer == "Mervane" and wrong == {"mervane"}
    trace = trace_terms(views, wrong)
    assert (trace.origin_hop, trace.origin_part, trace.via_bridge) == (3, "evidence", False)


def test_signals_flag_empty_irrelevant_and_unsupported_bridges(world) -> None:
    empty = faulted_run(world, "empty_retrieval", 2)
    sig = {s.hop: s for s in hop_signals(hop_views(empty), question_text(empty))}
    assert sig[2].empty and sig[2].irrelevant and not sig[1].irrelevant
    noise = faulted_run(world, "irrelevant_documents", 1)
    sig = {s.hop: s for s in hop_signals(hop_views(noise), question_text(noise))}
    assert sig[1].irrelevant and not sig[1].empty
    bridge = faulted_run(world, "content_corruption", 1)
    sig = {s.hop: s for s in hop_signals(hop_views(bridge), question_text(bridge))}
    assert sig[2].bridge_source == 1 and sig[2].bridge_supported is False and not sig[2].irrelevant


def test_rule_finds_empty_retrieval_and_falls_back_to_answer_stage(world) -> None:
    rule = get_diagnoser("rule")
    for hop in (1, 2, 3):
        d = rule.diagnose(faulted_run(world, "empty_retrieval", hop), DiagnosisContext())
        assert (d.hop, d.stage, d.details["rule"]) == (hop, "retrieval", "empty_retrieval")
        assert d.step_scores[f"hop:{hop}"] == 1.0 and d.cost.reexecutions == 0
    d = rule.diagnose(faulted_run(world, "content_corruption", 1), DiagnosisContext())
    assert (d.hop, d.stage, d.details["rule"]) == (None, "answer", "empty_answer")  # it answered "unknown"
    wrong = faulted_run(make_world(sloppy=True), "content_corruption", 3)
    d = rule.diagnose(wrong, DiagnosisContext())
    assert d.details["rule"] == "incorrect_answer"  # 'Mervane' is in hop 3's evidence: grounded, wrong


def test_rule_blames_a_failed_step(world) -> None:
    run = world.backend.run(world.questions["q0-3"])
    steps = list(run.steps)
    i = next(i for i, s in enumerate(steps) if s.kind == "node" and s.node == "read" and s.hop == 2)
    steps[i] = steps[i].model_copy(update={"status": Status.ERROR, "error": "TimeoutError: model"})
    hops = [
        h.model_copy(update={"steps": [steps[i] if s.step_id == steps[i].step_id else s for s in h.steps]})
        for h in run.hops
    ]
    d = get_diagnoser("rule").diagnose(run.model_copy(update={"steps": steps, "hops": hops}))
    assert (d.hop, d.details["rule"]) == (2, "error") and "TimeoutError" in d.root_cause


def test_coverage_reproduces_the_papers_pattern(world) -> None:
    """Doctor-RAG coverage blames hop 1 whatever the depth: the final answer only appears in the
    last hop's evidence, so hop 1 always lacks coverage (right at depth 1, wrong deeper)."""
    cov = get_diagnoser("coverage")
    ctx = context_for(world)
    for hop in (1, 2, 3):
        d = cov.diagnose(faulted_run(world, "irrelevant_documents", hop), ctx)
        assert (d.hop, d.uses_gold) == (1, True)
        assert d.details["coverage"]["hop:1"] == 0.0
    # When every hop's evidence covers the gold answer, answer generation is blamed.
    run = world.backend.run(world.questions["q0-2"])
    last_only = run.model_copy(
        update={
            "answer": "Mira Velt",
            "hops": [h for h in run.hops if h.index == 2],
            "steps": [s for s in run.steps if s.hop != 1],
        }
    )
    d = cov.diagnose(last_only, ctx.model_copy(update={"question": world.questions["q0-2"]}))
    assert d.details["coverage"] == {"hop:2": 1.0}
    assert (d.hop, d.stage) == (None, "answer")


def test_holistic_and_iterative_trace_the_delta(world) -> None:
    sloppy = make_world(sloppy=True)
    for family in ("content_corruption", "false_premise", "stale_evidence"):
        run = faulted_run(sloppy, family, 3)
        ctx = context_for(sloppy)
        h = get_diagnoser("holistic").diagnose(run, ctx)
        i = get_diagnoser("iterative").diagnose(run, ctx)
        assert (h.hop, h.stage, h.uses_gold) == (3, "retrieval", True)
        assert (i.hop, i.node) == (3, "retrieve") and i.step_scores[i.step_id] == 1.0
        assert h.details["delta"]["wrong"] == ["mervane"] and h.details["delta"]["missing"] == ["lostra"]
    # Nothing wrong was said ("unknown"): the expected answer never entered, the last retrieval is blamed.
    run = faulted_run(world, "empty_retrieval", 2)
    d = get_diagnoser("iterative").diagnose(run, context_for(world))
    assert d.node == "retrieve" and d.hop == len(run.hops)


def test_iterative_separates_a_bad_reading_from_bad_evidence(world) -> None:
    run = world.backend.run(world.questions["q0-3"])
    # hop 3's reader hallucinates a place that is in no evidence
    steps = []
    for s in run.steps:
        if s.kind == "node" and s.node == "read" and s.hop == 3:
            s = s.model_copy(update={"output": {"fact": "Brimstead"}})
        if s.kind == "node" and s.node == "answer":
            s = s.model_copy(update={"output": {"answer": "Brimstead"}})
        steps.append(s)
    broken = run.model_copy(update={"steps": steps, "hops": [], "answer": "Brimstead"})
    broken = broken.model_copy(update={"hops": [h.model_copy(update={"steps": []}) for h in run.hops]})
    d = get_diagnoser("iterative").diagnose(broken, context_for(world))
    assert (d.hop, d.node, d.details["role"]) == (3, "read", "read")
