"""Replay, core side: fork requests, side-effect policy, determinism (stitching a
fork onto its parent is the store's: ``causal_middleware.store.stitch``; the fork backend
protocols are in ``causal_middleware.protocols``).

The LangGraph implementation (``Replayer``) lives in ``causal_middleware.integrations.langgraph.replayer``
and is also importable as ``causal_middleware.Replayer``; nothing here imports LangGraph.
"""

from causal_middleware.replay.adapter import AgentAdapter
from causal_middleware.replay.determinism import (
    DeterminismReport,
    DeterminismSettings,
    SuffixDifference,
    compare_suffixes,
    determinism_settings,
)
from causal_middleware.replay.errors import ReplayError, SideEffectBlockedError
from causal_middleware.replay.policy import ForkPolicy, RecordedCall, current_fork_policy, fork_policy
from causal_middleware.replay.request import ForkPoint, ForkRequest, SuffixMode

__all__ = [
    "AgentAdapter",
    "DeterminismReport",
    "DeterminismSettings",
    "ForkPoint",
    "ForkPolicy",
    "ForkRequest",
    "RecordedCall",
    "ReplayError",
    "SideEffectBlockedError",
    "SuffixDifference",
    "SuffixMode",
    "compare_suffixes",
    "current_fork_policy",
    "determinism_settings",
    "fork_policy",
]
