"""causal-middleware: which step made the run fail, proved by intervention.

The names below are loaded lazily (module ``__getattr__``) so that importing the core never imports
LangGraph: ``import causal_middleware`` stays cheap and framework-free, ``from causal_middleware
import instrument`` pulls in the LangGraph integration.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("causal-middleware")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0.0.0"

_LAZY = {
    "instrument": "causal_middleware.integrations.langgraph.instrument",
    "InstrumentedGraph": "causal_middleware.integrations.langgraph.instrument",
    "CausalCallbackHandler": "causal_middleware.integrations.langgraph.handler",
    "hop_node": "causal_middleware.integrations.langgraph.markers",
    "side_effecting": "causal_middleware.integrations.langgraph.markers",
    # the checkpoint replayer (issue #4)
    "Replayer": "causal_middleware.integrations.langgraph.replayer",
    # repair on failure for any graph, interventions derived from the trace (issue #12)
    "repair_on_failure": "causal_middleware.integrations.langgraph.auto_repair",
    "ForkRequest": "causal_middleware.replay.request",
    "ReplayError": "causal_middleware.replay.errors",
    "SideEffectBlockedError": "causal_middleware.replay.errors",
}

__all__ = [
    "CausalCallbackHandler",
    "ForkRequest",
    "InstrumentedGraph",
    "ReplayError",
    "Replayer",
    "SideEffectBlockedError",
    "__version__",
    "hop_node",
    "repair_on_failure",
    "instrument",
    "side_effecting",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from causal_middleware.integrations.langgraph.auto_repair import repair_on_failure
    from causal_middleware.integrations.langgraph.handler import CausalCallbackHandler
    from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph, instrument
    from causal_middleware.integrations.langgraph.markers import hop_node, side_effecting
    from causal_middleware.integrations.langgraph.replayer import Replayer
    from causal_middleware.replay.errors import ReplayError, SideEffectBlockedError
    from causal_middleware.replay.request import ForkRequest


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'causal_middleware' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
