"""spans -> Trajectory: the contract's builder rules, tolerance, foreign traces, errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from span_factory import BASE_NS, HOPS, QUESTION, fabricate_run, openinference_run

from causal_middleware.spans import attributes as A
from causal_middleware.spans.builder import build_trajectory, decode_json
from causal_middleware.spans.model import Outcome, Status
from causal_middleware.spans.record import SpanRecord

OTHER_TRACE = "1f2e3d4c5b6a79881f2e3d4c5b6a7988"


def test_contract_run_builds_hops_steps_and_run_fields() -> None:
    run_id, records = fabricate_run(
        thread_id="t-7", outcome="failure", reference="Quarn", labels={"fault": "x"}
    )
    t = build_trajectory(records)

    assert t.run_id == run_id
    assert (t.thread_id, t.graph) == ("t-7", "reference_agent")
    assert t.input == {"question": QUESTION}
    assert t.answer == "Quarn"
    assert (t.outcome, t.reference, t.labels) == (Outcome.FAILURE, "Quarn", {"fault": "x"})
    assert t.metadata == {"dataset": "world", "seed": 0}
    assert t.started_at == datetime.fromtimestamp(BASE_NS // 10**9, UTC)
    assert t.ended_at is not None and t.ended_at > t.started_at

    assert [h.index for h in t.hops] == [1, 2, 3]
    assert [h.sub_query for h in t.hops] == [q for q, _, _ in HOPS]
    assert [[(d.id, d.score) for d in h.documents] for h in t.hops] == [
        [(doc_id, score) for doc_id, _, score in docs] for _, docs, _ in HOPS
    ]
    first_doc = t.hops[0].documents[0]
    assert (first_doc.text, first_doc.source, first_doc.metadata["title"]) == (
        HOPS[0][1][0][1],
        "world",
        "p1",
    )
    assert all(s.hop == h.index for h in t.hops for s in h.steps)
    assert [s.node for s in t.hops[0].steps if s.kind == "node"] == ["decide", "retrieve", "read"]

    # one step per node/llm/retrieval/tool/decision/answer span, in start order
    assert len(t.steps) == 3 * 7 + 1 + 2
    starts = [s.start_time for s in t.steps]
    assert starts == sorted(starts)
    assert {s.kind for s in t.steps} == {"node", "llm", "retrieval", "tool", "decision", "answer"}
    by_id = {s.step_id: s for s in t.steps}
    for step in t.steps:
        if step.kind == "node":
            assert step.parent_step_id is None  # parents are hop/run spans, not steps
        else:
            assert by_id[step.parent_step_id].kind == "node"
            assert by_id[step.parent_step_id].node == step.node

    node = t.hops[1].steps[0]
    assert (node.kind, node.langgraph_step, node.checkpoint_id) == ("node", 4, "ckpt-4")
    assert node.input == {"question": QUESTION, "hop": 2} and node.output == {"sub_query": HOPS[1][0]}
    llm = t.steps_of("llm")[0]
    assert (llm.model, llm.provider, llm.output) == ("offline-0", "offline", f"SUBQUERY: {HOPS[0][0]}")
    assert [m.role for m in llm.messages] == ["system", "user"]
    assert (llm.usage.input_tokens, llm.usage.output_tokens) == (21, 5)
    assert llm.invocation_parameters == {"temperature": 0.0, "seed": 7}
    assert llm.attributes == {A.GEN_AI_OPERATION_NAME: "chat", A.GEN_AI_REQUEST_SEED: 7}  # the unread rest
    decision = t.steps_of("decision")[0]
    assert (decision.choice, decision.options) == ("retrieve", ["retrieve", "answer"])
    retrieval = t.steps_of("retrieval")[2]
    assert (retrieval.query, retrieval.retriever, retrieval.hop) == (HOPS[2][0], "bm25", 3)
    tool = t.steps_of("tool")[0]
    assert (tool.tool_name, tool.call_id, tool.args, tool.output) == (
        "calculator",
        "call-1",
        {"expression": "1+1"},
        "2",
    )
    answer = t.steps_of("answer")[0]
    assert (answer.answer, answer.hop, answer.node) == ("Quarn", None, "answer")

    assert t.cost.llm_calls == 6 and t.cost.retrievals == 3 and t.cost.tool_calls == 1
    assert t.cost.input_tokens == 2 * (21 + 22 + 23) and t.cost.output_tokens == 30


def test_errors_and_lineage_are_read_from_spans() -> None:
    parent = "0123456789abcdef0123456789abcdef"
    _, records = fabricate_run(fail_hop=2, parent_run_id=parent)
    t = build_trajectory(records)
    assert t.status is Status.ERROR and t.error == "hop 2 failed"
    failed = [s for s in t.steps if s.status is Status.ERROR]
    assert [(s.kind, s.hop, s.error) for s in failed] == [("retrieval", 2, "index unavailable at hop 2")]
    assert t.lineage is not None and t.is_counterfactual
    assert (t.lineage.parent_run_id, t.lineage.fork_hop, t.lineage.fork_node, t.lineage.mode) == (
        parent,
        2,
        "retrieve",
        "frozen",
    )
    assert t.lineage.intervention is not None and t.lineage.intervention.kind == "fault:empty_retrieval"


def test_error_message_falls_back_to_the_exception_event() -> None:
    _, records = fabricate_run(fail_hop=1)
    failed = next(r for r in records if r.status_code == "ERROR" and r.parent_span_id is not None)
    failed.status_message = None
    t = build_trajectory(records)
    assert next(s for s in t.steps if s.step_id == failed.span_id).error == "index unavailable at hop 1"


def test_missing_optional_attributes_are_tolerated() -> None:
    run_id, records = fabricate_run()
    required = {A.CAUSAL_SPAN_TYPE, A.CAUSAL_HOP_INDEX, A.CAUSAL_NODE, A.CAUSAL_LANGGRAPH_STEP}
    for r in records:
        r.attributes = {k: v for k, v in r.attributes.items() if k in required}
    t = build_trajectory(records)
    assert len(t.hops) == 3 and all(h.sub_query is None for h in t.hops)
    assert t.answer is None and t.input is None and t.thread_id is None
    assert t.graph == "reference_agent"  # root span name
    assert all(h.documents == [] for h in t.hops)
    assert t.steps_of("llm")[0].model is None and t.cost.input_tokens == 0


def test_values_of_the_wrong_type_count_as_absent() -> None:
    _, records = fabricate_run()
    root = next(r for r in records if r.parent_span_id is None)
    root.attributes[A.CAUSAL_RUN_LABELS] = "not json"
    root.attributes[A.CAUSAL_RUN_OUTCOME] = "so-so"
    retrieval = next(r for r in records if r.attributes.get(A.CAUSAL_SPAN_TYPE) == "retrieval")
    retrieval.attributes["retrieval.documents.0.document.score"] = "high"
    retrieval.attributes[A.CAUSAL_LANGGRAPH_STEP] = "two"
    t = build_trajectory(records)
    assert t.labels == {} and t.outcome is None
    step = t.steps_of("retrieval")[0]
    assert step.documents[0].score is None and step.langgraph_step is None


def test_json_attributes_are_decoded_by_mime_type() -> None:
    assert decode_json('{"a": 1}') == {"a": 1}
    assert decode_json("1984") == "1984"
    assert decode_json("1984", "application/json") == 1984
    assert decode_json('{"a": 1}', "text/plain") == '{"a": 1}'
    assert decode_json("{broken") == "{broken"
    assert decode_json(3) == 3


def test_answer_falls_back_to_the_root_output() -> None:
    _, records = fabricate_run(answer="Quarn")
    without_answer_spans = [r for r in records if r.attributes.get(A.CAUSAL_SPAN_TYPE) != "answer"]
    assert build_trajectory(without_answer_spans).answer == "Quarn"  # root output {"answer": ...}
    root = next(r for r in without_answer_spans if r.parent_span_id is None)
    root.attributes[A.OUTPUT_VALUE] = "plain text answer"
    root.attributes[A.OUTPUT_MIME_TYPE] = "text/plain"
    assert build_trajectory(without_answer_spans).answer == "plain text answer"
    root.attributes[A.OUTPUT_VALUE] = json.dumps({"state": 1})
    root.attributes[A.OUTPUT_MIME_TYPE] = "application/json"
    assert build_trajectory(without_answer_spans).answer == "Quarn"  # the outermost node stating one
    answer_node = next(r for r in without_answer_spans if r.attributes.get(A.CAUSAL_NODE) == "answer")
    answer_node.attributes[A.OUTPUT_VALUE] = json.dumps({"done": True})
    assert build_trajectory(without_answer_spans).answer is None


def test_foreign_roots_without_input_take_the_outermost_nodes() -> None:
    spans = openinference_run()
    root = spans[0]
    del root.attributes[A.INPUT_VALUE], root.attributes[A.OUTPUT_VALUE]
    spans[1].attributes[A.INPUT_VALUE] = "task text"  # first decide node (depth 1)
    spans[3].attributes[A.OUTPUT_VALUE] = "first answer"  # retrieve node, same depth, later
    spans[2].attributes[A.OUTPUT_VALUE] = "deeper"  # the decide node's LLM: not a node
    t = build_trajectory(spans)
    assert (t.input, t.answer) == ("task text", "first answer")


def test_hop_indices_on_steps_make_hops_without_hop_spans() -> None:
    _, records = fabricate_run()
    hop_ids = {r.span_id for r in records if r.attributes.get(A.CAUSAL_SPAN_TYPE) == "hop"}
    root = next(r for r in records if r.parent_span_id is None)
    kept = []
    for r in records:
        if r.span_id in hop_ids:
            continue
        if r.parent_span_id in hop_ids:
            r.parent_span_id = root.span_id
        kept.append(r)
    t = build_trajectory(kept)
    assert [h.index for h in t.hops] == [1, 2, 3] and all(h.span_id is None for h in t.hops)
    assert [h.sub_query for h in t.hops] == [q for q, _, _ in HOPS]  # from each hop's retrieval


def test_openinference_trace_gets_steps_and_inferred_hops() -> None:
    t = build_trajectory(openinference_run())
    assert t.thread_id == "oi-thread" and t.graph == "LangGraph" and t.answer == "Tessaly"
    assert [s.kind for s in t.steps].count("node") == 6
    assert t.cost.llm_calls == 4 and t.cost.retrievals == 2
    assert t.cost.input_tokens == 40 and t.cost.output_tokens == 8  # "10" coerced to int
    # each retriever starts a hop together with the node that encloses it and the round's planner
    # (the decide node before it: round 2's is not counted in round 1)
    assert [h.index for h in t.hops] == [1, 2]
    assert [[s.node for s in h.steps if s.kind == "node"] for h in t.hops] == [
        ["decide", "retrieve", "read"],
        ["decide", "retrieve", "read"],
    ]
    assert [s.node for s in t.steps if s.hop is None] == []
    assert [(d.id, d.score) for d in t.hops[0].documents] == [("p1", 12.5), ("p7", 3.25)]
    assert t.hops[0].sub_query == HOPS[0][0]
    retrieve = next(s for s in t.hops[0].steps if s.node == "retrieve")
    assert (retrieve.langgraph_step, retrieve.checkpoint_ns) == (2, "retrieve:t2")
    assert t.steps_of("llm")[0].messages[0].content == "hop 1"  # from message.contents parts


def test_tools_start_hops_in_foreign_traces() -> None:
    trace = "abcdefabcdefabcdefabcdefabcdef01"
    spans = [
        SpanRecord(trace_id=trace, span_id="1000000000000001", name="main", start_time_ns=1),
        SpanRecord(
            trace_id=trace,
            span_id="1000000000000002",
            parent_span_id="1000000000000001",
            name="agent",
            start_time_ns=2,
            attributes={A.OPENINFERENCE_SPAN_KIND: "AGENT"},
        ),
    ]
    for i in range(2):
        step_id = f"20000000000000{i}0"
        spans.append(
            SpanRecord(
                trace_id=trace,
                span_id=step_id,
                parent_span_id="1000000000000002",
                name=f"Step {i + 1}",
                start_time_ns=10 + 10 * i,
                attributes={A.OPENINFERENCE_SPAN_KIND: "CHAIN"},
            )
        )
        spans.append(
            SpanRecord(
                trace_id=trace,
                span_id=f"30000000000000{i}0",
                parent_span_id=step_id,
                name="search",
                start_time_ns=11 + 10 * i,
                attributes={
                    A.OPENINFERENCE_SPAN_KIND: "TOOL",
                    A.TOOL_NAME: "web_search",
                    A.INPUT_VALUE: json.dumps({"query": f"q{i}"}),
                    A.TOOL_PARAMETERS: json.dumps({"query": {"type": "string"}}),
                },
            )
        )
    t = build_trajectory(spans)
    assert [h.index for h in t.hops] == [1, 2]
    assert [h.sub_query for h in t.hops] == ["q0", "q1"]
    assert [[s.name for s in h.steps] for h in t.hops] == [["Step 1", "search"], ["Step 2", "search"]]
    assert t.steps[0].name == "agent" and t.steps[0].hop is None
    assert t.steps_of("tool")[0].args == {"query": "q0"}  # the call's input, not the parameter schema
    assert t.steps_of("tool")[0].node == "Step 1"


def test_mixed_traces_need_a_run_id() -> None:
    _, first = fabricate_run()
    other = openinference_run(trace_id=OTHER_TRACE)
    with pytest.raises(ValueError, match="spans of 2 traces are mixed"):
        build_trajectory(first + other)
    assert build_trajectory(first + other, run_id=OTHER_TRACE).thread_id == "oi-thread"
    with pytest.raises(ValueError, match="no spans of run 'ffffffffffffffffffffffffffffffff'"):
        build_trajectory(first, run_id="f" * 32)
    with pytest.raises(ValueError, match="no spans"):
        build_trajectory([])


def test_a_run_without_root_span_is_an_error() -> None:
    run_id, records = fabricate_run()
    children = [r for r in records if r.parent_span_id is not None]
    with pytest.raises(ValueError, match=f"run {run_id} has no root span"):
        build_trajectory(children)


def test_a_re_exported_span_counts_once() -> None:
    _, records = fabricate_run()
    assert build_trajectory(records + records[:5]) == build_trajectory(records)
