"""LangGraph adapters: instrumentation (``instrument``, ``CausalCallbackHandler``, markers)."""

from .handler import CausalCallbackHandler
from .instrument import InstrumentedGraph, instrument
from .markers import hop_node, side_effecting
from .node_wrapper import OVERRIDE_KEY, CausalNodeWrapper

__all__ = [
    "OVERRIDE_KEY",
    "CausalCallbackHandler",
    "CausalNodeWrapper",
    "InstrumentedGraph",
    "hop_node",
    "instrument",
    "side_effecting",
]
