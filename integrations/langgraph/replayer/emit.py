"""The run span of a ``replay``-mode fork, which executes no node and so gets no trace of its own.

It carries the same run attributes the instrumentation writes (lineage, labels, thread, graph,
the rebuilt final state as ``output.value``), so the store lists the fork like any other run and
stitching fills in its steps from the parent.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Lineage

from ..extract import to_json, value_attributes
from ..handler import final_answer, lineage_attributes, outcome_attributes

__all__ = ["emit_replay_run"]


def emit_replay_run(
    tracer_provider: TracerProvider,
    *,
    graph_name: str,
    thread_id: str | None,
    lineage: Lineage,
    labels: dict[str, Any],
    reference: str | None,
    final_state: Any,
) -> str:
    """Emit the fork's run span; returns its run id (the trace id). The instrumentation's store
    processor writes a run to the store as soon as its root span ends."""
    attrs: dict[str, Any] = {
        A.CAUSAL_SPAN_TYPE: "run",
        A.OPENINFERENCE_SPAN_KIND: "CHAIN",
        A.GEN_AI_OPERATION_NAME: "invoke_agent",
        A.CAUSAL_RUN_GRAPH: graph_name,
        A.CAUSAL_RUN_LABELS: to_json(labels),
        **lineage_attributes(lineage),
        **value_attributes(A.OUTPUT_VALUE, A.OUTPUT_MIME_TYPE, final_state),
    }
    if thread_id:
        attrs[A.SESSION_ID] = thread_id
        attrs[A.GEN_AI_CONVERSATION_ID] = thread_id
    if reference is not None:
        attrs[A.CAUSAL_RUN_REFERENCE] = reference
        attrs.update(outcome_attributes(final_answer(final_state), reference))
    tracer = tracer_provider.get_tracer("causal_middleware.replay")
    span = tracer.start_span(graph_name, context=Context(), attributes=attrs)
    span.end()
    return format(span.get_span_context().trace_id, "032x")
