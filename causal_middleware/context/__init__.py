"""Context debugging (Trace): find the stale or missing context behind dissatisfied sessions.

detect (dissatisfaction signals) -> diagnose (the node where the wrong content entered, its fault
category and source) -> recommend (explore the workspace, propose a reviewable CREATE / UPDATE /
DELETE / NO_ACTION change as a unified diff) -> apply (only with explicit confirmation, with a
backup). See ``docs/context.md``.
"""

from causal_middleware.context.apply import ApplyResult, apply_recommendation, restore_backup
from causal_middleware.context.authority import AuthorityDecision, SourceInfo, resolve_authority
from causal_middleware.context.conversation import (
    Conversation,
    ConversationNode,
    Feedback,
    NodeType,
    RetrievedDoc,
    conversation_from_trajectories,
    conversation_from_trajectory,
)
from causal_middleware.context.delta import Delta
from causal_middleware.context.detector import detect, detect_offline
from causal_middleware.context.explorer import EXPLORATION_TOOLS, ToolCall, WorkspaceExplorer
from causal_middleware.context.judges import DissatisfactionVerifier
from causal_middleware.context.llm import LLMResponseError
from causal_middleware.context.pipeline import ContextReport, debug_session
from causal_middleware.context.recommendation import Classification, Dimensions, Operation, Recommendation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.recommender_llm import recommend_llm
from causal_middleware.context.root_cause import Attribution, ContextDiagnosis, FaultCategory, diagnose
from causal_middleware.context.segmenter import Segment, segment
from causal_middleware.context.sessions import (
    find_recommendation,
    list_sessions,
    load_conversation,
    save_recommendation,
    save_session,
)
from causal_middleware.context.signals import SIGNAL_WEIGHTS, Detection, Signal, SignalType
from causal_middleware.context.workspace import KBEntry, KBHit, Workspace

__all__ = [
    "DissatisfactionVerifier",
    "EXPLORATION_TOOLS",
    "SIGNAL_WEIGHTS",
    "ApplyResult",
    "Attribution",
    "AuthorityDecision",
    "Classification",
    "ContextReport",
    "Conversation",
    "ConversationNode",
    "Delta",
    "Detection",
    "ContextDiagnosis",
    "Dimensions",
    "FaultCategory",
    "Feedback",
    "KBEntry",
    "KBHit",
    "LLMResponseError",
    "NodeType",
    "Operation",
    "Recommendation",
    "RetrievedDoc",
    "Segment",
    "Signal",
    "SignalType",
    "SourceInfo",
    "ToolCall",
    "Workspace",
    "WorkspaceExplorer",
    "apply_recommendation",
    "conversation_from_trajectories",
    "conversation_from_trajectory",
    "debug_session",
    "detect",
    "detect_offline",
    "diagnose",
    "find_recommendation",
    "list_sessions",
    "load_conversation",
    "recommend",
    "recommend_llm",
    "resolve_authority",
    "restore_backup",
    "save_recommendation",
    "save_session",
    "segment",
]
