"""Record a scripted run as contract spans (run > hop > node > retrieval / answer) into a store.

The spans go through a real OTel ``TracerProvider`` into the store's span-exporter side, so what
diagnosers read back is what the store builds from spans, as for an instrumented agent. A fork's
own trace holds only the steps it ran after the fork step, numbered on absolutely (steps and hops
continue the parent's, as the LangGraph replayer's forks do); the store stitches the parent's
prefix and the intervened step back on when it reads the fork.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from causal_middleware.spans import attributes as A
from causal_middleware.testing.agent import ExecutedStep, ScriptedAgent

__all__ = ["emit_run"]


def emit_run(
    provider: TracerProvider,
    agent: ScriptedAgent,
    *,
    input_text: str,
    steps: Sequence[ExecutedStep],
    answer: str | None,
    own_from: int = 0,
    frozen: Collection[int] = (),
) -> str:
    """Emit one run's spans; returns its run id (the trace id). ``steps[:own_from]`` are the
    parent's (not emitted); indices in ``frozen`` returned a recorded output without running, so
    their node spans are marked frozen and have no children (the store copies the parent's)."""
    tracer = provider.get_tracer("causal_middleware.testing")
    run_attrs: dict[str, Any] = {
        A.CAUSAL_SPAN_TYPE: "run",
        A.OPENINFERENCE_SPAN_KIND: "CHAIN",
        A.GEN_AI_OPERATION_NAME: "invoke_agent",
        A.CAUSAL_RUN_GRAPH: agent.name,
        A.INPUT_VALUE: input_text,
        A.OUTPUT_VALUE: str(answer),
    }
    with tracer.start_as_current_span(
        agent.name, context=otel_context.Context(), attributes=run_attrs
    ) as root:
        run_id = format(root.get_span_context().trace_id, "032x")
        hop_span: trace.Span | None = None
        current_hop: int | None = None
        for index in range(own_from, len(steps)):
            step = steps[index]
            if step.hop != current_hop:
                if hop_span is not None:
                    hop_span.end()
                    hop_span = None
                current_hop = step.hop
                if step.hop is not None:
                    hop_attrs: dict[str, Any] = {A.CAUSAL_SPAN_TYPE: "hop", A.CAUSAL_HOP_INDEX: step.hop}
                    hop_span = tracer.start_span(f"hop {step.hop}", attributes=hop_attrs)
            parent = trace.set_span_in_context(hop_span) if hop_span is not None else None
            _emit_node(tracer, agent, step, index + 1, parent, frozen=index in frozen)
        if hop_span is not None:
            hop_span.end()
    return run_id


def _emit_node(
    tracer: trace.Tracer,
    agent: ScriptedAgent,
    step: ExecutedStep,
    number: int,
    parent: otel_context.Context | None,
    *,
    frozen: bool,
) -> None:
    common: dict[str, Any] = {A.CAUSAL_NODE: step.node, A.CAUSAL_LANGGRAPH_STEP: number}
    if step.hop is not None:
        common[A.CAUSAL_HOP_INDEX] = step.hop
    node_attrs: dict[str, Any] = {
        **common,
        A.CAUSAL_SPAN_TYPE: "node",
        A.OUTPUT_VALUE: json.dumps(step.output),
        A.OUTPUT_MIME_TYPE: "application/json",
    }
    if frozen:
        node_attrs[A.CAUSAL_NODE_FROZEN] = True
    node = agent.node(step.node)
    with tracer.start_as_current_span(step.node, context=parent, attributes=node_attrs):
        if frozen:
            return
        if node.query is not None:
            tracer.start_span(
                node.retriever, attributes=_retrieval_attributes(common, step, node.documents_key)
            ).end()
        if node.answer_key is not None:
            answer_attrs = {
                **common,
                A.CAUSAL_SPAN_TYPE: "answer",
                A.CAUSAL_ANSWER_TEXT: str(step.output.get(node.answer_key)),
            }
            tracer.start_span("answer", attributes=answer_attrs).end()


def _retrieval_attributes(common: dict[str, Any], step: ExecutedStep, documents_key: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {**common, A.CAUSAL_SPAN_TYPE: "retrieval", A.INPUT_VALUE: step.query or ""}
    for i, doc in enumerate(step.output.get(documents_key) or []):
        attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_ID, i)] = str(doc["id"])
        attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, i)] = str(doc["text"])
        if doc.get("score") is not None:
            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE, i)] = float(doc["score"])
        if doc.get("title"):
            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA, i)] = json.dumps({"title": doc["title"]})
    return attrs
