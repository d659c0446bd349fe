"""The checkpoint replayer: fork a recorded LangGraph run at any step, intervene, and regenerate,
freeze or replay the suffix, without touching the original run or re-firing side effects.

>>> replayer = Replayer(instrumented_graph)                       # doctest: +SKIP
>>> fork = replayer.fork(run_id, hop=2, values={"evidence": []})  # doctest: +SKIP
"""

from causal_middleware.replay.determinism import DeterminismReport
from causal_middleware.replay.errors import ReplayError, SideEffectBlockedError
from causal_middleware.replay.request import ForkPoint, ForkRequest

from .loader import load_graph
from .replayer import Replayer
from .side_effects import guard_graph_tools, install_tool_guard

__all__ = [
    "DeterminismReport",
    "ForkPoint",
    "ForkRequest",
    "ReplayError",
    "Replayer",
    "SideEffectBlockedError",
    "guard_graph_tools",
    "install_tool_guard",
    "load_graph",
]
