"""The live agent behind ``--graph``, for the commands that fork a stored run (diagnose, repair).

From the graph alone: the fork backend (the LangGraph replayer over the graph, instrumented here
when the spec names a plain compiled graph), the user's own retrievers as indexes (found in the
graph the way hop inference finds them), a runner that re-runs the graph's non-side-effecting
tools live, and the ``state_keys`` given to ``instrument()``. ``--adapter`` and ``--index`` stay
as optional overrides.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.language_models import BaseChatModel

from causal_middleware.loading import load_object
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.base import SpanStore


@dataclass
class LiveAgent:
    backend: Any
    adapter: Any = None
    index: Index | None = None
    indexes: dict[str, Index] = field(default_factory=dict)
    rerun_tool: Any = None
    state_keys: dict[str, str] = field(default_factory=dict)
    index_note: str = ""


def load_spec(spec: str, what: str) -> Any:
    """``module:attr`` / ``file.py:attr``; a class or a factory (not a runnable) is called."""
    obj = load_object(spec, what=what)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "invoke") and not hasattr(obj, "search")):
        obj = obj()
    return obj


def load_chat_model(spec: str, what: str) -> BaseChatModel:
    """A chat model by name (``offline``, ``anthropic[:MODEL]``, ``local[:NAME]``, ``gguf:PATH``) or a
    ``module:attr`` / ``file.py:attr`` spec (an instance, class or factory)."""
    from causal_middleware.integrations.models import is_model_spec, resolve_chat_model

    model = resolve_chat_model(spec) if is_model_spec(spec) else load_spec(spec, what)
    if not hasattr(model, "invoke"):
        raise ValueError(f"--{what} {spec!r} is not a LangChain chat model (got {type(model).__name__})")
    return cast(BaseChatModel, model)


def parse_state_keys(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        node, sep, key = item.partition("=")
        if not sep or not node.strip() or not key.strip():
            raise ValueError(f"--state-key {item!r} must look like NODE=KEY (e.g. retrieve=docs)")
        out[node.strip()] = key.strip()
    return out


@contextlib.contextmanager
def live_agent(
    spec: str,
    store: SpanStore,
    trajectory: Trajectory,
    *,
    adapter: str | None = None,
    index: str | None = None,
    state_keys: dict[str, str] | None = None,
) -> Iterator[LiveAgent]:
    """The agent ``spec`` names, ready to fork ``trajectory``; shuts down what it instrumented."""
    if importlib.util.find_spec("causal_middleware.integrations.langgraph.replayer") is None:
        raise ValueError("--graph needs the LangGraph integration (causal_middleware.integrations.langgraph)")
    from causal_middleware.integrations.langgraph.auto_repair import trace_proposer_for
    from causal_middleware.integrations.langgraph.instrument import InstrumentedGraph, instrument
    from causal_middleware.integrations.langgraph.replayer import Replayer, load_graph
    from causal_middleware.integrations.langgraph.replayer.locate import answer_nodes_of, hop_nodes_of
    from causal_middleware.integrations.langgraph.retrievers import lookup_index

    graph = load_graph(spec)
    owned = None
    if isinstance(graph, InstrumentedGraph):
        instrumented = graph
    else:
        instrumented = owned = instrument(
            graph,
            store=store,
            hop_nodes=hop_nodes_of(trajectory) or None,
            answer_nodes=answer_nodes_of(trajectory) or None,
            state_keys=state_keys or None,
        )
    try:
        # probing forks: a refused side effect answers the agent with a notice, never ends the fork
        backend = Replayer(instrumented, store=instrumented.store or store, refused_side_effects="withhold")
        agent = LiveAgent(backend=backend)
        agent.adapter = load_spec(adapter, "adapter") if adapter else None
        agent.state_keys = {**instrumented.state_keys, **(state_keys or {})}
        if index:
            agent.index = load_spec(index, "index")
            if not isinstance(agent.index, Index):
                raise ValueError(
                    f"--index {index!r} is a {type(agent.index).__name__}, not a causal_middleware Index"
                )
        derived = trace_proposer_for(instrumented)
        if not index:
            agent.index, agent.indexes = derived.index, derived.indexes
            agent.index_note = lookup_index(instrumented).reason
        agent.rerun_tool = derived.rerun_tool
        yield agent
    finally:
        if owned is not None:
            owned.shutdown()
