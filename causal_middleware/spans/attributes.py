"""Span attribute names, one constant each. The registry of record is ``otel/attributes.yaml``;
``tests/test_attribute_registry.py`` keeps the two in step and fails on any unregistered attribute.

Names containing ``N``/``M`` are templates: format them with :func:`indexed`.
"""

from __future__ import annotations

OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME_TYPE = "output.mime_type"
SESSION_ID = "session.id"
METADATA = "metadata"
RETRIEVAL_DOCUMENTS_DOCUMENT_ID = "retrieval.documents.N.document.id"
RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT = "retrieval.documents.N.document.content"
RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE = "retrieval.documents.N.document.score"
RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA = "retrieval.documents.N.document.metadata"
LLM_MODEL_NAME = "llm.model_name"
LLM_PROVIDER = "llm.provider"
LLM_INVOCATION_PARAMETERS = "llm.invocation_parameters"
LLM_INPUT_MESSAGES_MESSAGE_ROLE = "llm.input_messages.N.message.role"
LLM_INPUT_MESSAGES_MESSAGE_CONTENT = "llm.input_messages.N.message.content"
LLM_OUTPUT_MESSAGES_MESSAGE_ROLE = "llm.output_messages.N.message.role"
LLM_OUTPUT_MESSAGES_MESSAGE_CONTENT = "llm.output_messages.N.message.content"
LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_FUNCTION_NAME = (
    "llm.output_messages.N.message.tool_calls.M.tool_call.function.name"
)
LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_FUNCTION_ARGUMENTS = (
    "llm.output_messages.N.message.tool_calls.M.tool_call.function.arguments"
)
LLM_OUTPUT_MESSAGES_MESSAGE_TOOL_CALLS_TOOL_CALL_ID = (
    "llm.output_messages.N.message.tool_calls.M.tool_call.id"
)
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL = "llm.token_count.total"
TOOL_NAME = "tool.name"
TOOL_PARAMETERS = "tool.parameters"
TOOL_ID = "tool.id"
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_SEED = "gen_ai.request.seed"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
# attributes of the gen_ai.evaluation.result event on diagnosis and repair spans
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
CAUSAL_SPAN_TYPE = "causal.span.type"
CAUSAL_RUN_GRAPH = "causal.run.graph"
CAUSAL_RUN_REFERENCE = "causal.run.reference"
CAUSAL_RUN_OUTCOME = "causal.run.outcome"
CAUSAL_RUN_LABELS = "causal.run.labels"
CAUSAL_RUN_COUNTERFACTUAL = "causal.run.counterfactual"
CAUSAL_LINEAGE_PARENT_RUN_ID = "causal.lineage.parent_run_id"
CAUSAL_LINEAGE_FORK_CHECKPOINT_ID = "causal.lineage.fork_checkpoint_id"
CAUSAL_LINEAGE_FORK_HOP = "causal.lineage.fork_hop"
CAUSAL_LINEAGE_FORK_NODE = "causal.lineage.fork_node"
CAUSAL_LINEAGE_FORK_STEP = "causal.lineage.fork_step"
CAUSAL_LINEAGE_MODE = "causal.lineage.mode"
CAUSAL_LINEAGE_INTERVENTION = "causal.lineage.intervention"
CAUSAL_HOP_INDEX = "causal.hop.index"
CAUSAL_HOP_SUB_QUERY = "causal.hop.sub_query"
CAUSAL_NODE = "causal.node"
CAUSAL_NODE_SIDE_EFFECTING = "causal.node.side_effecting"
CAUSAL_NODE_FROZEN = "causal.node.frozen"
CAUSAL_NODE_INPUT_REFS = "causal.node.input.refs"
CAUSAL_LANGGRAPH_STEP = "causal.langgraph.step"
CAUSAL_LANGGRAPH_PATH = "causal.langgraph.path"
CAUSAL_LANGGRAPH_TRIGGERS = "causal.langgraph.triggers"
CAUSAL_CHECKPOINT_ID = "causal.checkpoint.id"
CAUSAL_CHECKPOINT_NS = "causal.checkpoint.ns"
CAUSAL_RETRIEVER_NAME = "causal.retriever.name"
CAUSAL_DECISION_CHOICE = "causal.decision.choice"
CAUSAL_DECISION_OPTIONS = "causal.decision.options"
CAUSAL_ANSWER_TEXT = "causal.answer.text"
CAUSAL_TOOL_SIDE_EFFECTING = "causal.tool.side_effecting"
CAUSAL_CONTENT_TRUNCATED = "causal.content.truncated"
CAUSAL_EVENT_KIND = "causal.event.kind"
CAUSAL_REPAIR_RUN_ID = "causal.repair.run_id"
CAUSAL_REPAIR_STATUS = "causal.repair.status"
CAUSAL_REPAIR_STEP_ID = "causal.repair.step_id"
CAUSAL_REPAIR_CRS = "causal.repair.crs"
CAUSAL_REPAIR_MINIMALITY = "causal.repair.minimality"
CAUSAL_REPAIR_VALIDATED = "causal.repair.validated"
CAUSAL_REPAIR_FORK_RUN_ID = "causal.repair.fork_run_id"
CAUSAL_REPAIR_REEXECUTIONS = "causal.repair.reexecutions"
CAUSAL_REPAIR_NAIVE_REEXECUTIONS = "causal.repair.naive_reexecutions"
CAUSAL_REPAIR_LLM_CALLS = "causal.repair.llm_calls"
CAUSAL_REPAIR_EXPLANATION = "causal.repair.explanation"
CAUSAL_DIAGNOSIS_METHOD = "causal.diagnosis.method"


_INDEXED: dict[tuple[str, tuple[int, ...]], str] = {}


def indexed(template: str, *indices: int) -> str:
    """Fill the ``N`` (then ``M``) placeholders of a templated attribute name."""
    key = (template, indices)
    name = _INDEXED.get(key)
    if name is None:
        name = _fill(template, indices)
        if len(_INDEXED) < 16_384:  # names repeat on every span: documents 0..k, messages 0..k
            _INDEXED[key] = name
    return name


def _fill(template: str, indices: tuple[int, ...]) -> str:
    parts = template.split(".")
    it = iter(indices)
    out = []
    for p in parts:
        out.append(str(next(it)) if p in ("N", "M") else p)
    return ".".join(out)
