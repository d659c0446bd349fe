"""Fabricated runs for the store tests.

``emit_run`` emits a realistic 3-hop agentic-RAG run through a real OTel tracer, with the
attributes of ``docs/span-contract.md`` (run > hop > node > llm/decision/retrieval/tool, and an
answer span under the final node). ``openinference_run`` hand-makes spans the way the
OpenInference LangChain instrumentor writes them (no ``causal.*`` attributes, no hop spans).
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from causal_middleware.spans import attributes as A
from causal_middleware.spans.attributes import indexed
from causal_middleware.spans.record import SpanRecord

BASE_NS = 1_700_000_000_000_000_000
QUESTION = "Where was the founder of Zorvex Labs born?"
HOPS = [
    (
        "founder of Zorvex Labs",
        [("p1", "Zorvex Labs was founded by Ilka Morrow.", 12.5), ("p7", "Zorvex Ltd sells tea.", 3.25)],
        "Ilka Morrow",
    ),
    ("Ilka Morrow birthplace", [("p2", "Ilka Morrow was born in Tessaly.", 9.0)], "Tessaly"),
    (
        "Tessaly country",
        [("p3", "Tessaly is a town in Quarn.", 7.75), ("p9", "Tessa Lee paints.", 1.5)],
        "Quarn",
    ),
]


def run_attributes(
    *,
    thread_id: str,
    question: str,
    answer: str,
    graph: str = "reference_agent",
    outcome: str | None = None,
    reference: str | None = None,
    labels: dict[str, Any] | None = None,
    parent_run_id: str | None = None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        A.CAUSAL_SPAN_TYPE: "run",
        A.OPENINFERENCE_SPAN_KIND: "CHAIN",
        A.GEN_AI_OPERATION_NAME: "invoke_agent",
        A.SESSION_ID: thread_id,
        A.GEN_AI_CONVERSATION_ID: thread_id,
        A.INPUT_VALUE: json.dumps({"question": question}),
        A.INPUT_MIME_TYPE: "application/json",
        A.OUTPUT_VALUE: json.dumps({"answer": answer, "hops": 3}),
        A.OUTPUT_MIME_TYPE: "application/json",
        A.CAUSAL_RUN_GRAPH: graph,
        A.METADATA: json.dumps({"dataset": "world", "seed": 0}),
    }
    if outcome is not None:
        attrs[A.CAUSAL_RUN_OUTCOME] = outcome
    if reference is not None:
        attrs[A.CAUSAL_RUN_REFERENCE] = reference
    if labels is not None:
        attrs[A.CAUSAL_RUN_LABELS] = json.dumps(labels)
    if parent_run_id is not None:
        attrs[A.CAUSAL_LINEAGE_PARENT_RUN_ID] = parent_run_id
        attrs[A.CAUSAL_LINEAGE_FORK_HOP] = 2
        attrs[A.CAUSAL_LINEAGE_FORK_NODE] = "retrieve"
        attrs[A.CAUSAL_LINEAGE_MODE] = "frozen"
        attrs[A.CAUSAL_LINEAGE_INTERVENTION] = json.dumps(
            {"kind": "fault:empty_retrieval", "node": "retrieve", "hop": 2, "values": {"documents": []}}
        )
        attrs[A.CAUSAL_RUN_COUNTERFACTUAL] = True
    return attrs


def emit_run(
    tracer: trace.Tracer,
    *,
    thread_id: str = "thread-1",
    question: str = QUESTION,
    answer: str = "Quarn",
    base_ns: int = BASE_NS,
    fail_hop: int | None = None,
    **run_kwargs: Any,
) -> str:
    """Emit one 3-hop run; returns its run id (trace id as 32 hex digits)."""
    clock = iter(range(base_ns, base_ns + 10_000_000_000, 1_000_000))

    def start(name: str, parent: trace.Span | None, attrs: dict[str, Any]) -> trace.Span:
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        return tracer.start_span(name, context=ctx, attributes=attrs, start_time=next(clock))

    def end(span: trace.Span) -> None:
        span.end(end_time=next(clock))

    run = start(
        "reference_agent",
        None,
        run_attributes(thread_id=thread_id, question=question, answer=answer, **run_kwargs),
    )
    step = 0
    for index, (sub_query, docs, fact) in enumerate(HOPS, start=1):
        hop = start(
            f"hop {index}",
            run,
            {A.CAUSAL_SPAN_TYPE: "hop", A.CAUSAL_HOP_INDEX: index, A.CAUSAL_HOP_SUB_QUERY: sub_query},
        )
        for node in ("decide", "retrieve", "read"):
            step += 1
            common = {A.CAUSAL_NODE: node, A.CAUSAL_LANGGRAPH_STEP: step, A.CAUSAL_HOP_INDEX: index}
            node_span = start(
                node,
                hop,
                {
                    **common,
                    A.CAUSAL_SPAN_TYPE: "node",
                    A.OPENINFERENCE_SPAN_KIND: "CHAIN",
                    A.CAUSAL_CHECKPOINT_ID: f"ckpt-{step}",
                    A.CAUSAL_CHECKPOINT_NS: "",
                    A.INPUT_VALUE: json.dumps({"question": question, "hop": index}),
                    A.OUTPUT_VALUE: json.dumps(
                        {"sub_query": sub_query} if node == "decide" else {"fact": fact}
                    ),
                    A.CAUSAL_NODE_SIDE_EFFECTING: False,
                },
            )
            if node in ("decide", "read"):
                prompt = f"Question: {question}\nHop {index}"
                llm = start(
                    "OfflineChatModel",
                    node_span,
                    {
                        **common,
                        A.CAUSAL_SPAN_TYPE: "llm",
                        A.OPENINFERENCE_SPAN_KIND: "LLM",
                        A.GEN_AI_OPERATION_NAME: "chat",
                        A.LLM_MODEL_NAME: "offline-0",
                        A.LLM_PROVIDER: "offline",
                        indexed(A.LLM_INPUT_MESSAGES_MESSAGE_ROLE, 0): "system",
                        indexed(A.LLM_INPUT_MESSAGES_MESSAGE_CONTENT, 0): "You answer multi-hop questions.",
                        indexed(A.LLM_INPUT_MESSAGES_MESSAGE_ROLE, 1): "user",
                        indexed(A.LLM_INPUT_MESSAGES_MESSAGE_CONTENT, 1): prompt,
                        indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_ROLE, 0): "assistant",
                        indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_CONTENT, 0): (
                            f"SUBQUERY: {sub_query}" if node == "decide" else f"FACT: {fact}"
                        ),
                        A.LLM_TOKEN_COUNT_PROMPT: 20 + index,
                        A.LLM_TOKEN_COUNT_COMPLETION: 5,
                        A.LLM_TOKEN_COUNT_TOTAL: 25 + index,
                        A.GEN_AI_USAGE_INPUT_TOKENS: 20 + index,
                        A.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
                        A.LLM_INVOCATION_PARAMETERS: json.dumps({"temperature": 0.0}),
                        A.GEN_AI_REQUEST_SEED: 7,
                    },
                )
                end(llm)
            if node == "decide":
                decision = start(
                    "route",
                    node_span,
                    {
                        **common,
                        A.CAUSAL_SPAN_TYPE: "decision",
                        A.CAUSAL_DECISION_CHOICE: "retrieve",
                        A.CAUSAL_DECISION_OPTIONS: json.dumps(["retrieve", "answer"]),
                    },
                )
                end(decision)
            if node == "retrieve":
                attrs = {
                    **common,
                    A.CAUSAL_SPAN_TYPE: "retrieval",
                    A.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
                    A.GEN_AI_OPERATION_NAME: "retrieval",
                    A.INPUT_VALUE: sub_query,
                    A.CAUSAL_RETRIEVER_NAME: "bm25",
                }
                for n, (doc_id, text, score) in enumerate(docs):
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_ID, n)] = doc_id
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, n)] = text
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE, n)] = score
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA, n)] = json.dumps(
                        {"source": "world", "title": doc_id}
                    )
                retrieval = start("IndexRetriever", node_span, attrs)
                if fail_hop == index:
                    error = RuntimeError(f"index unavailable at hop {index}")
                    retrieval.record_exception(error)
                    retrieval.set_status(Status(StatusCode.ERROR, str(error)))
                end(retrieval)
            if node == "read" and index == 3:
                tool = start(
                    "calculator",
                    node_span,
                    {
                        **common,
                        A.CAUSAL_SPAN_TYPE: "tool",
                        A.OPENINFERENCE_SPAN_KIND: "TOOL",
                        A.GEN_AI_OPERATION_NAME: "execute_tool",
                        A.TOOL_NAME: "calculator",
                        A.TOOL_ID: "call-1",
                        A.TOOL_PARAMETERS: json.dumps({"expression": "1+1"}),
                        A.OUTPUT_VALUE: "2",
                    },
                )
                end(tool)
            end(node_span)
        end(hop)
    step += 1
    final = start(
        "answer",
        run,
        {
            A.CAUSAL_SPAN_TYPE: "node",
            A.CAUSAL_NODE: "answer",
            A.CAUSAL_LANGGRAPH_STEP: step,
            A.OUTPUT_VALUE: json.dumps({"answer": answer}),
        },
    )
    answer_span = start(
        "answer",
        final,
        {
            A.CAUSAL_SPAN_TYPE: "answer",
            A.CAUSAL_NODE: "answer",
            A.CAUSAL_LANGGRAPH_STEP: step,
            A.CAUSAL_ANSWER_TEXT: answer,
        },
    )
    end(answer_span)
    end(final)
    if fail_hop is not None:
        run.set_status(Status(StatusCode.ERROR, f"hop {fail_hop} failed"))
    end(run)
    return format(run.get_span_context().trace_id, "032x")


def fabricate_run(**kwargs: Any) -> tuple[str, list[SpanRecord]]:
    """One run's spans as SpanRecords, in the order the SDK exported them (children first)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_id = emit_run(provider.get_tracer("tests.store"), **kwargs)
    records = [SpanRecord.from_readable(s) for s in exporter.get_finished_spans()]
    provider.shutdown()
    return run_id, records


def _span(
    trace_id: str, span_id: str, parent: str | None, name: str, start: int, attrs: dict[str, Any]
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_ns=BASE_NS + start * 1000,
        end_time_ns=BASE_NS + start * 1000 + 500,
        status_code="OK",
        attributes=attrs,
    )


def openinference_run(trace_id: str = "0af7651916cd43dd8448eb211c80319c") -> list[SpanRecord]:
    """What the OpenInference LangChain instrumentor writes for a 2-hop graph (decide > retrieve
    > read, twice, then answer): CHAIN/LLM/RETRIEVER kinds, ``metadata`` JSON, no causal.* names."""

    def meta(node: str, step: int) -> str:
        return json.dumps(
            {"langgraph_node": node, "langgraph_step": step, "langgraph_checkpoint_ns": f"{node}:t{step}"}
        )

    spans = [
        _span(
            trace_id,
            "a000000000000001",
            None,
            "LangGraph",
            0,
            {
                A.OPENINFERENCE_SPAN_KIND: "CHAIN",
                A.SESSION_ID: "oi-thread",
                A.INPUT_VALUE: json.dumps({"question": QUESTION}),
                A.OUTPUT_VALUE: json.dumps({"answer": "Tessaly"}),
            },
        )
    ]
    t = 1
    step = 0
    for hop, (sub_query, docs, fact) in enumerate(HOPS[:2], start=1):
        for node in ("decide", "retrieve", "read"):
            step += 1
            node_id = f"b{hop}{step:014d}"
            spans.append(
                _span(
                    trace_id,
                    node_id,
                    "a000000000000001",
                    node,
                    t,
                    {
                        A.OPENINFERENCE_SPAN_KIND: "CHAIN",
                        A.METADATA: meta(node, step),
                        A.OUTPUT_VALUE: json.dumps({"x": node}),
                    },
                )
            )
            t += 1
            child_id = f"c{hop}{step:014d}"
            if node == "retrieve":
                attrs: dict[str, Any] = {
                    A.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
                    A.INPUT_VALUE: sub_query,
                    A.METADATA: meta(node, step),
                }
                for n, (doc_id, text, score) in enumerate(docs):
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, n)] = text
                    attrs[indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA, n)] = json.dumps(
                        {"id": doc_id, "score": score}
                    )
                spans.append(_span(trace_id, child_id, node_id, "IndexRetriever", t, attrs))
            else:
                spans.append(
                    _span(
                        trace_id,
                        child_id,
                        node_id,
                        "FakeChatModel",
                        t,
                        {
                            A.OPENINFERENCE_SPAN_KIND: "LLM",
                            A.METADATA: meta(node, step),
                            A.LLM_MODEL_NAME: "fake",
                            indexed(A.LLM_INPUT_MESSAGES_MESSAGE_ROLE, 0): "user",
                            "llm.input_messages.0.message.contents.0.message_content.text": f"hop {hop}",
                            indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_ROLE, 0): "assistant",
                            indexed(A.LLM_OUTPUT_MESSAGES_MESSAGE_CONTENT, 0): fact,
                            A.LLM_TOKEN_COUNT_PROMPT: "10",
                            A.LLM_TOKEN_COUNT_COMPLETION: 2,
                        },
                    )
                )
            t += 1
    return spans
