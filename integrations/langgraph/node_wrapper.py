"""Node wrappers: make each node's span the active OTel context while the node's body runs.

LangGraph runs a node as ``RunnableSeq(bound, *writers)``: the sequence fires ``on_chain_start``
(our handler opens the node span) and then calls ``bound.invoke(input, config)`` with a callback
manager whose ``parent_run_id`` is the node's LangChain run id. :func:`wrap_graph` copies the
compiled graph with every ``bound`` replaced by a :class:`CausalNodeWrapper`, which looks the node
span up by that id, attaches it (``opentelemetry.context.attach``) for the body's duration and
detaches it in ``finally``; so spans other code creates inside the node (a plain
``tracer.start_as_current_span``, the Anthropic SDK's span) nest under the node span. Compiled
subgraphs used as nodes are wrapped recursively. A subgraph invoked from inside a node function is
not: its nodes still get spans (callbacks), and other libraries' spans nest under the outer node.

The wrapper also records the checkpoint the node ran from (``causal.checkpoint.id``: LangGraph
puts ``checkpoint_map`` = {namespace: checkpoint id} in the node's config; the node's own graph is
its ``checkpoint_ns`` minus the last ``|`` segment) and offers the replayer one hook:

``config["configurable"]["causal_node_override"]``: a callable ``override(node_name, state, config)
-> tuple[bool, Any]``. When it returns ``(True, output)`` the node body is skipped, ``output`` is
returned as the node's update and the node span gets ``causal.node.frozen=true``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.constants import START
from langgraph.pregel import Pregel
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from causal_middleware.spans import attributes as A
from causal_middleware.spans.health import health

try:  # langgraph internals used to re-enable tracing of routers; without them routers stay untraced
    from langgraph._internal._runnable import RunnableCallable
    from langgraph.graph._branch import BranchSpec
    from langgraph.pregel._read import DEFAULT_BOUND
    from langgraph.pregel._write import ChannelWrite
except ImportError:  # pragma: no cover - private names in langgraph
    RunnableCallable = BranchSpec = ChannelWrite = None  # type: ignore[assignment,misc]
    DEFAULT_BOUND = None  # type: ignore[assignment]

OVERRIDE_KEY = "causal_node_override"
NodeOverride = Callable[[str, Any, RunnableConfig], tuple[bool, Any]]
SpanLookup = Callable[[UUID | None], Span | None]


def _node_checkpoint_id(configurable: dict[str, Any]) -> str | None:
    if configurable.get("__pregel_checkpointer") is None:
        return None  # no checkpointer: the ids exist only in memory for this run
    cmap = configurable.get("checkpoint_map")
    if not cmap:
        return None
    ns = configurable.get("checkpoint_ns") or ""
    graph_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    value = cmap.get(graph_ns)
    return str(value) if value else None


class CausalNodeWrapper(Runnable[Any, Any]):
    """Runs the wrapped node runnable with the node's span attached as the current OTel context."""

    def __init__(self, inner: Runnable[Any, Any], node_name: str, lookup: SpanLookup) -> None:
        self.inner = inner
        self.node_name = node_name
        self.name = getattr(inner, "name", None) or node_name
        self._lookup = lookup

    def __repr__(self) -> str:
        return f"CausalNodeWrapper({self.inner!r})"

    def _before(self, input: Any, config: RunnableConfig | None) -> tuple[Span | None, NodeOverride | None]:
        """The node span (with the checkpoint id recorded) and the replay override, fail-open."""
        try:
            cfg = config or {}
            configurable = cfg.get("configurable") or {}
            callbacks = cfg.get("callbacks")
            span = self._lookup(getattr(callbacks, "parent_run_id", None))
            if span is not None:
                checkpoint_id = _node_checkpoint_id(configurable)
                if checkpoint_id:
                    span.set_attribute(A.CAUSAL_CHECKPOINT_ID, checkpoint_id)
            override = configurable.get(OVERRIDE_KEY)
            return span, override if callable(override) else None
        except Exception as exc:
            health.record_error("node_wrapper.before", exc)
            return None, None

    @staticmethod
    def _frozen(span: Span | None) -> None:
        if span is not None:
            try:
                span.set_attribute(A.CAUSAL_NODE_FROZEN, True)
            except Exception as exc:
                health.record_error("node_wrapper.frozen", exc)

    @staticmethod
    def _attach(span: Span | None) -> object | None:
        if span is None:
            return None
        try:
            return otel_context.attach(trace.set_span_in_context(span))
        except Exception as exc:
            health.record_error("node_wrapper.attach", exc)
            return None

    @staticmethod
    def _detach(token: object | None) -> None:
        if token is not None:
            try:
                otel_context.detach(token)  # type: ignore[arg-type]
            except Exception as exc:
                health.record_error("node_wrapper.detach", exc)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        span, override = self._before(input, config)
        if override is not None:
            hit, output = override(self.node_name, input, config or {})
            if hit:
                self._frozen(span)
                return output
        token = self._attach(span)
        try:
            return self.inner.invoke(input, config, **kwargs)
        finally:
            self._detach(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        span, override = self._before(input, config)
        if override is not None:
            hit, output = override(self.node_name, input, config or {})
            if hit:
                self._frozen(span)
                return output
        token = self._attach(span)
        try:
            return await self.inner.ainvoke(input, config, **kwargs)
        finally:
            self._detach(token)


def _traced_router(writer: Any) -> Any | None:
    """A copy of a conditional-edge writer whose router was built with ``trace=False`` (as
    ``create_agent`` does), with tracing on, so the handler sees the route; None if not one."""
    if RunnableCallable is None or not isinstance(writer, RunnableCallable):
        return None
    spec = getattr(writer.func, "__self__", None)
    if not isinstance(spec, BranchSpec) or not isinstance(spec.path, RunnableCallable) or spec.path.trace:
        return None
    path = copy.copy(spec.path)
    path.trace = True
    traced = spec._replace(path=path)
    new = RunnableCallable(
        traced._route,
        traced._aroute,
        name=writer.name,
        tags=writer.tags,
        trace=writer.trace,
        recurse=writer.recurse,
        **writer.kwargs,
    )
    return ChannelWrite.register_writer(new, getattr(writer, "_is_channel_writer", None))


def _with_traced_routers(writers: Sequence[Any]) -> list[Any] | None:
    out, changed = [], False
    for writer in writers:
        try:
            traced = _traced_router(writer)
        except Exception as exc:  # an unexpected langgraph shape: keep the router as it is
            health.record_error("node_wrapper.router", exc)
            traced = None
        out.append(traced if traced is not None else writer)
        changed = changed or traced is not None
    return out if changed else None


def wrap_graph(graph: Pregel[Any, Any, Any, Any], lookup: SpanLookup) -> Pregel[Any, Any, Any, Any]:
    """A copy of ``graph`` whose nodes (and compiled subgraphs' nodes) run in :class:`CausalNodeWrapper`.

    The copy shares the original's checkpointer, store, channels and builder, so ``get_state``,
    ``get_state_history`` and ``update_state`` see the same threads; the original is not modified.
    """
    nodes = {}
    for name, node in graph.nodes.items():
        if name == START or node.bound is DEFAULT_BOUND or isinstance(node.bound, CausalNodeWrapper):
            writers = _with_traced_routers(node.writers) if name == START else None
            nodes[name] = node.copy({"writers": writers}) if writers is not None else node
            continue
        bound = node.bound
        update: dict[str, Any] = {}
        if isinstance(bound, Pregel):
            inner = wrap_graph(bound, lookup)
            update = {"bound": CausalNodeWrapper(inner, name, lookup), "subgraphs": [inner]}
        else:
            update = {"bound": CausalNodeWrapper(bound, name, lookup)}
        writers = _with_traced_routers(node.writers)
        if writers is not None:
            update["writers"] = writers
        nodes[name] = node.copy(update)
    return graph.copy({"nodes": nodes})
