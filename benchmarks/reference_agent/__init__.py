"""The reference agentic-RAG agent: decide -> retrieve -> read -> ... -> answer, on LangGraph."""

from .adapter import ReferenceAgentAdapter, to_evidence
from .graph import (
    DEFAULT_BUDGET,
    GRAPH_NAME,
    NODES,
    REFERENCE_ANSWER_NODES,
    REFERENCE_HOP_NODES,
    AgentRun,
    build_reference_agent,
    build_world_agent,
    gold_plan,
    make_index,
    recursion_limit_for,
    run_question,
)
from .state import (
    AgentInput,
    AgentState,
    EvidenceDocument,
    HopRecord,
    answer_now_update,
    evidence_update,
    fact_update,
    subquery_update,
)

__all__ = [
    "DEFAULT_BUDGET",
    "GRAPH_NAME",
    "NODES",
    "REFERENCE_ANSWER_NODES",
    "REFERENCE_HOP_NODES",
    "AgentInput",
    "AgentRun",
    "AgentState",
    "EvidenceDocument",
    "HopRecord",
    "ReferenceAgentAdapter",
    "answer_now_update",
    "evidence_update",
    "fact_update",
    "subquery_update",
    "to_evidence",
    "build_reference_agent",
    "build_world_agent",
    "gold_plan",
    "make_index",
    "recursion_limit_for",
    "run_question",
]
