"""``CausalCallbackHandler``: LangChain/LangGraph callbacks -> OpenTelemetry spans per the span contract.

Usable on its own (``config={"callbacks": [CausalCallbackHandler(tracer_provider, graph=g)]}``) or
through ``instrument()``, which also wraps the graph's nodes so that each node span is the active
OTel context while the node runs (callbacks alone cannot attach a context for the node's body).

Mapping (see docs/span-contract.md):

* the outermost chain of a call (LangGraph's own ``on_chain_start``) -> ``run`` span, a new trace;
* a chain start tagged ``graph:step:N`` with ``langgraph_node`` metadata -> ``node`` span (``__start__``
  gets none); a chain started by a node after its body (tag ``seq:step:K``, K >= 2: a conditional
  edge's router) -> ``decision`` span; any other chain is transparent (its children hang under the
  nearest span);
* chat model / LLM calls -> ``llm``; retrievers -> ``retrieval``; tools -> ``tool``;
* a top-level node's answer (``answer_nodes``, or inferred from its update) -> ``answer`` span under
  the node; a node returning ``Command(goto=...)`` gets a ``decision`` span naming the targets;
* hops per ``hops.py``.

``*_end`` callbacks carry no metadata, so every span is kept by LangChain ``run_id`` until it ends.
Every hook is fail-open: an exception inside it is counted in ``causal_middleware.spans.health``
and never reaches the agent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langchain_core.outputs import LLMResult
from langgraph.errors import GraphBubbleUp
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, Status, StatusCode, TracerProvider

from causal_middleware.spans import attributes as A
from causal_middleware.spans.health import health
from causal_middleware.spans.trusted import SpanStarter, put_attributes, set_ok

from .extract import (
    NodeInputEncoder,
    answer_text,
    document_attributes,
    goto_targets,
    input_message_attributes,
    llm_result_attributes,
    route_choice,
    to_json,
    tool_output_text,
    tool_sub_query,
    value_attributes,
)
from .graph_info import GraphInfo, analyze_graph
from .hops import Hop, NodeExec, RunState
from .markers import HOP_METADATA_KEY, SIDE_EFFECTING_METADATA_KEY

TRACER_NAME = "causal_middleware"
START_NODE = "__start__"
_RESERVED_METADATA_PREFIXES = ("ls_", "langgraph_", "causal_", "__")
# config["metadata"][HOP_OFFSET_METADATA_KEY] = k: the run's first hop is hop k + 1 (replayer forks)
HOP_OFFSET_METADATA_KEY = "causal_hop_offset"
_RESERVED_METADATA_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "run_id"})


class RunRef:
    """Filled with the run id (trace id, 32 hex) when the run it stands for starts."""

    __slots__ = ("run_id",)

    def __init__(self) -> None:
        self.run_id: str | None = None


class _Entry:
    __slots__ = ("kind", "span", "_ctx", "run", "node", "data")

    def __init__(
        self,
        kind: str,
        span: Span | None,
        ctx: Context | None,
        run: RunState,
        node: NodeExec | None,
        data: Any = None,
    ) -> None:
        self.kind = kind  # run | node | hidden | chain | decision | llm | retrieval | tool
        self.span = span
        self._ctx = ctx  # None: the span's own context, made when a child first needs it
        self.run = run
        self.node = node
        self.data = data

    @property
    def ctx(self) -> Context:
        ctx = self._ctx
        if ctx is None:
            assert self.span is not None
            ctx = self._ctx = trace.set_span_in_context(self.span, Context())
        return ctx


def _is_node_start(tags: Sequence[str] | None, metadata: Mapping[str, Any]) -> bool:
    if not tags or "langgraph_node" not in metadata:
        return False
    for tag in tags:
        if tag.startswith("graph:step:"):
            return True
    return False


def _is_router(tags: Sequence[str] | None) -> bool:
    for tag in tags or ():
        if tag.startswith("seq:step:"):
            try:
                return int(tag[9:]) >= 2
            except ValueError:
                return False
    return False


_OK = Status(StatusCode.OK)
_STR_ONLY = frozenset({str})


def _finish(
    span: Span, error: BaseException | None = None, end_ns: int | None = None, failed: str | None = None
) -> None:
    if failed is not None:  # the step reported its own failure (a tool's error ToolMessage)
        span.set_status(Status(StatusCode.ERROR, failed))
    elif error is None:
        set_ok(span)
    elif isinstance(error, GraphBubbleUp):  # interrupts and Command(graph=PARENT): control flow, not failure
        span.add_event(f"langgraph.{type(error).__name__}")
    elif isinstance(error, GeneratorExit | asyncio.CancelledError):  # a stream closed early, a task cancelled
        span.add_event("cancelled")
    else:
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end(end_time=end_ns)


def outcome_attributes(answer: Any, reference: Any) -> dict[str, Any]:
    """``causal.run.outcome`` derived at record time: ``success``/``failure`` when the run has a
    reference (``config["metadata"]["causal_reference"]``) and produced an answer, judged by the
    project's correctness rule (:func:`causal_middleware.tasks.scoring.answer_matches`); nothing
    otherwise. An outcome set later with ``store.annotate()`` overrides it. Never raises."""
    if reference is None or not isinstance(answer, str) or not answer.strip():
        return {}
    try:
        from causal_middleware.tasks.scoring import answer_matches

        ok = answer_matches(answer, str(reference))
    except Exception as exc:  # fail open: an outcome is a nicety, never a reason to break a run
        health.record_error("handler.outcome", exc)
        return {}
    return {A.CAUSAL_RUN_OUTCOME: "success" if ok else "failure"}


def final_answer(output: Any) -> str | None:
    """The answer a run's final output states, the way the store reads it when no answer span
    exists: the output itself when a string, else its ``answer``/``final_answer`` string."""
    if isinstance(output, str):
        return output or None
    if isinstance(output, Mapping):
        for key in ("answer", "final_answer"):
            value = output.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def lineage_attributes(lineage: Any) -> dict[str, Any]:
    """The run-span attributes of a fork's lineage (a ``Lineage`` or its dict); shared with the replayer."""
    data = lineage.model_dump(mode="json") if hasattr(lineage, "model_dump") else dict(lineage)
    out: dict[str, Any] = {A.CAUSAL_RUN_COUNTERFACTUAL: bool(data.get("counterfactual", True))}
    keys = {
        "parent_run_id": A.CAUSAL_LINEAGE_PARENT_RUN_ID,
        "fork_checkpoint_id": A.CAUSAL_LINEAGE_FORK_CHECKPOINT_ID,
        "fork_hop": A.CAUSAL_LINEAGE_FORK_HOP,
        "fork_node": A.CAUSAL_LINEAGE_FORK_NODE,
        "fork_step": A.CAUSAL_LINEAGE_FORK_STEP,
        "mode": A.CAUSAL_LINEAGE_MODE,
    }
    for key, attr in keys.items():
        if data.get(key) is not None:
            out[attr] = data[key]
    if data.get("intervention") is not None:
        out[A.CAUSAL_LINEAGE_INTERVENTION] = to_json(data["intervention"])
    return out


class CausalCallbackHandler(BaseCallbackHandler):
    """Emits the span contract's spans for LangGraph runs (see the module docstring).

    Args:
        tracer_provider: where spans go; default the global OTel provider.
        graph: the compiled graph, read once for hop nodes, answer nodes, routers and side effects.
        hop_nodes, answer_nodes, side_effecting, graph_name: as for ``instrument()``.
        graph_info: precomputed facts (``instrument()`` passes them; overrides ``graph``).
        own_provider: ``tracer_provider`` is ``instrument()``'s own (only its processors see the
            spans): child spans then take their attributes without the SDK checking each value
            again (:mod:`causal_middleware.spans.trusted`).
    """

    run_inline = True  # spans must exist before the node body runs; our hooks are cheap
    raise_error = False

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        graph: Any = None,
        hop_nodes: Iterable[str] | None = None,
        answer_nodes: Iterable[str] | None = None,
        side_effecting: Iterable[str] = (),
        graph_name: str | None = None,
        graph_info: GraphInfo | None = None,
        own_provider: bool = False,
    ) -> None:
        super().__init__()
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        from causal_middleware import __version__

        self._tracer = provider.get_tracer(TRACER_NAME, __version__)
        self._starter = SpanStarter.for_provider(self._tracer, provider, own_provider=own_provider)
        if graph_info is None:
            if graph is not None:
                graph_info = analyze_graph(
                    graph,
                    hop_nodes=hop_nodes,
                    answer_nodes=answer_nodes,
                    side_effecting=side_effecting,
                    graph_name=graph_name,
                )
            else:
                graph_info = GraphInfo(
                    name=graph_name or "",
                    hop_nodes=frozenset([hop_nodes] if isinstance(hop_nodes, str) else hop_nodes or ()),
                    hops_explicit=bool(hop_nodes),
                    answer_nodes=frozenset(
                        [answer_nodes] if isinstance(answer_nodes, str) else answer_nodes or ()
                    ),
                    answers_explicit=answer_nodes is not None,
                    side_effecting=frozenset(
                        [side_effecting] if isinstance(side_effecting, str) else side_effecting
                    ),
                )
        self.info = graph_info
        self._entries: dict[UUID, _Entry] = {}
        self._expected: OrderedDict[UUID, RunRef] = OrderedDict()
        self._lock = threading.Lock()
        self._last_run_id: str | None = None
        self._json_cache: dict[tuple[type, tuple[str, ...]], str] = {}

    # --- API used by InstrumentedGraph and the node wrapper ------------------------------
    def expect_run(self, lc_run_id: UUID, ref: RunRef) -> None:
        """Fill ``ref`` with the trace id of the run whose root LangChain run id is ``lc_run_id``."""
        with self._lock:
            self._expected[lc_run_id] = ref
            while len(self._expected) > 4096:  # runs that were prepared but never started
                self._expected.popitem(last=False)

    def node_span(self, lc_run_id: UUID | None) -> Span | None:
        """The live span of the node whose LangChain run id is ``lc_run_id``, if any."""
        if lc_run_id is None:
            return None
        entry = self._entries.get(lc_run_id)
        return entry.span if entry is not None and entry.kind == "node" else None

    @property
    def last_run_id(self) -> str | None:
        """Trace id of the most recent run this handler started (any thread)."""
        return self._last_run_id

    @property
    def open_spans(self) -> int:
        """Spans started and not yet ended (0 between runs; a leak check for tests)."""
        return sum(1 for e in list(self._entries.values()) if e.span is not None)

    # --- helpers -------------------------------------------------------------------------
    def _register(self, run_id: UUID, entry: _Entry) -> None:
        self._entries[run_id] = entry
        entry.run.members.append(run_id)

    def _child_attributes(
        self, parent: _Entry, *, with_ns: bool = True, session: bool = True
    ) -> dict[str, Any]:
        run = parent.run
        attrs: dict[str, Any] = dict(run.common)
        node = parent.node
        if node is not None:  # node.child_attributes(with_ns=with_ns), inline
            attrs[A.CAUSAL_NODE] = node.name
            if node.step is not None:
                attrs[A.CAUSAL_LANGGRAPH_STEP] = node.step
            if node.hop is not None:
                attrs[A.CAUSAL_HOP_INDEX] = node.hop.index
            if with_ns and node.ns:
                attrs[A.CAUSAL_CHECKPOINT_NS] = node.ns
        if session and run.session_id:
            attrs[A.SESSION_ID] = run.session_id
        return attrs

    def _start_child(self, run_id: UUID, parent: _Entry, kind: str, name: str, attrs: dict[str, Any]) -> Span:
        span = self._starter.start(name, parent.ctx, attrs)
        self._register(run_id, _Entry(kind, span, None, parent.run, parent.node))
        return span

    def _end(
        self,
        run_id: UUID,
        attrs: Mapping[str, Any] | None = None,
        error: BaseException | None = None,
        failed: str | None = None,
    ) -> _Entry | None:
        entry = self._entries.pop(run_id, None)
        if entry is None or entry.span is None:
            return entry
        if attrs:
            put_attributes(entry.span, attrs)
        _finish(entry.span, error, failed=failed)
        return entry

    # --- chains: run, nodes, routers -----------------------------------------------------
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            md = metadata or {}
            parent = self._entries.get(parent_run_id) if parent_run_id is not None else None
            if parent is None:
                if parent_run_id is not None and _is_node_start(tags, md):
                    return  # a node whose run we do not trace (its start was missed)
                self._start_run(run_id, inputs, md, kwargs.get("name"), serialized)
            elif _is_node_start(tags, md):
                self._start_node(run_id, parent, inputs, md)
            elif (
                parent.kind in ("node", "hidden")
                and _is_router(tags)
                and self._known_router(md, name := self._router_name(md, kwargs.get("name")))
            ):
                self._start_decision(run_id, parent, md, name or "route")
            else:
                self._register(run_id, _Entry("chain", None, parent.ctx, parent.run, parent.node))
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_chain_start", exc)

    def _router_name(self, md: Mapping[str, Any], name: str | None) -> str | None:
        """The router's name as sync code reports it (async code reports None for an unnamed one)."""
        if name is not None:
            return name
        return self.info.unnamed_routers.get(str(md.get("langgraph_node", "")))

    def _known_router(self, md: Mapping[str, Any], name: str | None) -> bool:
        """With the graph known, only its conditional edges' routers are decisions (a node whose
        runnable is a sequence also runs later steps after its body); without it, any such chain."""
        routers = self.info.routers
        return routers is None or (str(md.get("langgraph_node", "")), str(name)) in routers

    def _start_run(
        self,
        run_id: UUID,
        inputs: Any,
        md: Mapping[str, Any],
        name: str | None,
        serialized: Mapping[str, Any] | None,
    ) -> None:
        graph_name = self.info.name or name or (serialized or {}).get("name") or "LangGraph"
        attrs: dict[str, Any] = {
            A.CAUSAL_SPAN_TYPE: "run",
            A.OPENINFERENCE_SPAN_KIND: "AGENT" if self.info.is_agent else "CHAIN",
            A.GEN_AI_OPERATION_NAME: "invoke_agent",
            A.CAUSAL_RUN_GRAPH: graph_name,
        }
        thread_id = md.get("thread_id")
        session_id = str(thread_id) if thread_id is not None else None
        if session_id:
            attrs[A.SESSION_ID] = session_id
            attrs[A.GEN_AI_CONVERSATION_ID] = session_id
        attrs.update(value_attributes(A.INPUT_VALUE, A.INPUT_MIME_TYPE, inputs))
        reference = md.get("causal_reference")
        if reference is not None:
            attrs[A.CAUSAL_RUN_REFERENCE] = str(reference)
        if md.get("causal_labels"):
            attrs[A.CAUSAL_RUN_LABELS] = to_json(md["causal_labels"])
        common: dict[str, Any] = {}
        if md.get("causal_lineage") is not None:
            lineage = lineage_attributes(md["causal_lineage"])
            attrs.update(lineage)
            common[A.CAUSAL_RUN_COUNTERFACTUAL] = lineage[A.CAUSAL_RUN_COUNTERFACTUAL]
        user_md = {
            k: v
            for k, v in md.items()
            if k not in _RESERVED_METADATA_KEYS and not k.startswith(_RESERVED_METADATA_PREFIXES)
        }
        if user_md:
            attrs[A.METADATA] = to_json(user_md)
        current = trace.get_current_span().get_span_context()
        links = [Link(current)] if current.is_valid else None
        span = self._tracer.start_span(graph_name, context=Context(), attributes=attrs, links=links)
        # replayer (issue #4): a fork resumed mid-run numbers its hops on from the fork hop
        offset = md.get(HOP_OFFSET_METADATA_KEY)
        hop_offset = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else 0
        run = RunState(
            self._tracer,
            span,
            self.info,
            session_id=session_id,
            common=common,
            hop_offset=hop_offset,
            starter=self._starter,
        )
        run.reference = str(reference) if reference is not None else None
        run.encoder = NodeInputEncoder()
        self._entries[run_id] = _Entry("run", span, run.ctx, run, None)
        trace_id = format(span.get_span_context().trace_id, "032x")
        self._last_run_id = trace_id
        with self._lock:
            ref = self._expected.pop(run_id, None)
        if ref is not None:
            ref.run_id = trace_id

    def _start_node(self, run_id: UUID, parent: _Entry, inputs: Any, md: Mapping[str, Any]) -> None:
        name = str(md["langgraph_node"])
        run = parent.run
        if name == START_NODE:
            self._register(run_id, _Entry("hidden", None, parent.ctx, run, parent.node))
            return
        outer = parent.node
        top = None if outer is None else (outer.top or outer)
        node = NodeExec(
            name,
            0 if outer is None else outer.depth + 1,
            md.get("langgraph_step"),
            md.get("langgraph_checkpoint_ns"),
            top,
        )
        ctx = run.place_node(node) or parent.ctx
        attrs: dict[str, Any] = dict(run.common)
        attrs[A.CAUSAL_SPAN_TYPE] = "node"
        attrs[A.OPENINFERENCE_SPAN_KIND] = "CHAIN"
        attrs[A.CAUSAL_NODE] = name  # node.child_attributes(), inline
        if node.step is not None:
            attrs[A.CAUSAL_LANGGRAPH_STEP] = node.step
        if node.hop is not None:
            attrs[A.CAUSAL_HOP_INDEX] = node.hop.index
        if node.ns:
            attrs[A.CAUSAL_CHECKPOINT_NS] = node.ns
        path = md.get("langgraph_path")
        if path:
            attrs[A.CAUSAL_LANGGRAPH_PATH] = self._static_json(path)
        triggers = md.get("langgraph_triggers")
        if triggers:
            attrs[A.CAUSAL_LANGGRAPH_TRIGGERS] = self._static_json(triggers)
        if run.session_id:
            attrs[A.SESSION_ID] = run.session_id
        if name in self.info.side_effecting:
            attrs[A.CAUSAL_NODE_SIDE_EFFECTING] = True
        attrs.update(self._node_input(run, inputs))
        span = self._starter.start(name, ctx, attrs)
        node.span = span
        self._register(run_id, _Entry("node", span, None, run, node))

    def _static_json(self, value: Any) -> str:
        """``to_json`` of a node's path / triggers / a router's options, cached when it is a list
        or tuple of strings: the same few come back at every step of every run."""
        if not isinstance(value, list | tuple) or not _STR_ONLY.issuperset(map(type, value)):
            return to_json(value)
        key = (type(value), tuple(value))
        text = self._json_cache.get(key)
        if text is None:
            text = to_json(value)
            if len(self._json_cache) < 4096:
                self._json_cache[key] = text
        return text

    def _node_input(self, run: RunState, inputs: Any) -> dict[str, Any]:
        """The node's input as what changed since the run's earlier node spans (fail-open: the
        whole input when encoding fails)."""
        try:
            encoder = run.encoder
            if encoder is None:  # a node starting after its run ended
                with self._lock:
                    encoder = run.encoder
                    if encoder is None:
                        encoder = run.encoder = NodeInputEncoder()
            return encoder.attributes(inputs)
        except Exception as exc:
            health.record_error("handler.node_input", exc)
            return value_attributes(A.INPUT_VALUE, A.INPUT_MIME_TYPE, inputs)

    def _start_decision(self, run_id: UUID, parent: _Entry, md: Mapping[str, Any], name: str) -> None:
        attrs = self._child_attributes(parent, with_ns=False, session=False)
        attrs[A.CAUSAL_SPAN_TYPE] = "decision"
        attrs[A.OPENINFERENCE_SPAN_KIND] = "DECISION"
        ends = self.info.router_ends.get((str(md.get("langgraph_node", "")), name))
        if ends:
            attrs[A.CAUSAL_DECISION_OPTIONS] = self._static_json(list(dict.fromkeys(ends.values())))
        span = self._starter.start(name, parent.ctx, attrs)
        self._register(run_id, _Entry("decision", span, None, parent.run, parent.node, ends))

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            entry = self._entries.get(run_id)
            if entry is None:
                return
            if entry.kind == "node":
                self._end_node(run_id, entry, outputs, None)
            elif entry.kind == "decision":
                choice = list(dict.fromkeys(route_choice(outputs, entry.data)))
                self._end(run_id, {A.CAUSAL_DECISION_CHOICE: ",".join(choice)} if choice else None)
            elif entry.kind == "run":
                self._end_run(run_id, entry, outputs, None)
            else:
                self._entries.pop(run_id, None)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_chain_end", exc)

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            entry = self._entries.get(run_id)
            if entry is None:
                return
            if entry.kind == "node":
                self._end_node(run_id, entry, None, error)
            elif entry.kind == "run":
                self._end_run(run_id, entry, None, error)
            elif entry.span is not None:
                self._end(run_id, None, error)
            else:
                self._entries.pop(run_id, None)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_chain_error", exc)

    def _end_node(self, run_id: UUID, entry: _Entry, outputs: Any, error: BaseException | None) -> None:
        self._entries.pop(run_id, None)
        node, span, run = entry.node, entry.span, entry.run
        assert node is not None and span is not None
        end_ns = time.time_ns()
        try:
            if error is None:
                put_attributes(span, value_attributes(A.OUTPUT_VALUE, A.OUTPUT_MIME_TYPE, outputs))
                self._node_outcomes(entry, node, outputs, end_ns)
        finally:
            _finish(span, error, end_ns)
            run.node_finished(node, end_ns)

    def _node_outcomes(self, entry: _Entry, node: NodeExec, outputs: Any, end_ns: int) -> None:
        """A ``Command(goto=...)`` decision span under the ending node, and the answer candidate."""
        targets = list(dict.fromkeys(goto_targets(outputs)))
        if targets:
            attrs = self._child_attributes(entry, with_ns=False, session=False)
            attrs[A.CAUSAL_SPAN_TYPE] = "decision"
            attrs[A.OPENINFERENCE_SPAN_KIND] = "DECISION"
            attrs[A.CAUSAL_DECISION_CHOICE] = ",".join(targets)
            goto = self._starter.start("goto", entry.ctx, attrs, start_time=end_ns)
            _finish(goto, None, end_ns)
        if node.depth != 0:
            return
        text = None
        if self.info.answers_explicit:
            if node.name in self.info.answer_nodes:
                text = answer_text(outputs, explicit=True)
        else:
            text = answer_text(outputs)
        if text:
            attrs = self._child_attributes(entry, with_ns=False, session=False)
            attrs.update(
                {A.CAUSAL_SPAN_TYPE: "answer", A.OPENINFERENCE_SPAN_KIND: "CHAIN", A.CAUSAL_ANSWER_TEXT: text}
            )
            entry.run.offer_answer(entry.ctx, attrs, end_ns)

    def _emit_answer(self, run: RunState) -> None:
        if run.answer is None:
            return
        ctx, attrs, end_ns = run.answer
        _finish(self._starter.start("answer", ctx, attrs, start_time=end_ns), None, end_ns)

    def _end_run(self, run_id: UUID, entry: _Entry, outputs: Any, error: BaseException | None) -> None:
        self._entries.pop(run_id, None)
        run, span = entry.run, entry.span
        assert span is not None
        try:
            for member in run.members:  # spans whose end never came (an abandoned stream, a failed hook)
                leftover = self._entries.pop(member, None)
                if leftover is not None and leftover.span is not None and leftover.span.is_recording():
                    leftover.span.end()
            run.finish()
            run.encoder = None
            self._emit_answer(run)
            if error is None:
                put_attributes(span, value_attributes(A.OUTPUT_VALUE, A.OUTPUT_MIME_TYPE, outputs))
                if run.reference is not None:
                    answer = run.answer[1].get(A.CAUSAL_ANSWER_TEXT) if run.answer is not None else None
                    put_attributes(span, outcome_attributes(answer or final_answer(outputs), run.reference))
        finally:
            _finish(span, error)

    # --- LLMs ----------------------------------------------------------------------------
    def _start_llm(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        serialized: Mapping[str, Any] | None,
        message_attrs: dict[str, Any],
        metadata: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> None:
        parent = self._entries.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            return
        md = metadata or {}
        params = kwargs.get("invocation_params") or {}
        ser_kwargs = (serialized or {}).get("kwargs") or {}
        model = (
            md.get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or ser_kwargs.get("model")
            or ser_kwargs.get("model_name")
            or kwargs.get("name")
            or (serialized or {}).get("name")
            or "llm"
        )
        attrs = self._child_attributes(parent)
        attrs[A.CAUSAL_SPAN_TYPE] = "llm"
        attrs[A.OPENINFERENCE_SPAN_KIND] = "LLM"
        attrs[A.GEN_AI_OPERATION_NAME] = "chat"
        attrs[A.LLM_MODEL_NAME] = str(model)
        attrs[A.GEN_AI_REQUEST_MODEL] = str(model)
        provider = md.get("ls_provider")
        if provider:
            attrs[A.LLM_PROVIDER] = str(provider)
            attrs[A.GEN_AI_PROVIDER_NAME] = str(provider)
        if params:
            attrs[A.LLM_INVOCATION_PARAMETERS] = to_json(params)
        temperature = params.get("temperature", md.get("ls_temperature"))
        if isinstance(temperature, int | float) and not isinstance(temperature, bool):
            attrs[A.GEN_AI_REQUEST_TEMPERATURE] = float(temperature)
        seed = params.get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            attrs[A.GEN_AI_REQUEST_SEED] = seed
        attrs.update(message_attrs)
        self._start_child(run_id, parent, "llm", str(model), attrs)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            batch = messages[0] if messages else []
            self._start_llm(
                run_id, parent_run_id, serialized, input_message_attributes(batch), metadata, kwargs
            )
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_chat_model_start", exc)

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._start_llm(
                run_id, parent_run_id, serialized, input_message_attributes(prompts[:1]), metadata, kwargs
            )
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_llm_start", exc)

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            if run_id in self._entries:
                self._end(run_id, llm_result_attributes(response))
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_llm_end", exc)

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            self._end(run_id, None, error)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_llm_error", exc)

    # --- retrievers ----------------------------------------------------------------------
    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            parent = self._entries.get(parent_run_id) if parent_run_id is not None else None
            if parent is None:
                return
            md = metadata or {}
            name = (
                kwargs.get("name")
                or md.get("ls_retriever_name")
                or (serialized or {}).get("name")
                or "retriever"
            )
            hop, defined = self._note_action(parent, query)
            attrs = self._child_attributes(parent)
            attrs[A.CAUSAL_SPAN_TYPE] = "retrieval"
            attrs[A.OPENINFERENCE_SPAN_KIND] = "RETRIEVER"
            attrs[A.GEN_AI_OPERATION_NAME] = "retrieval"
            attrs[A.INPUT_VALUE] = query
            attrs[A.GEN_AI_RETRIEVAL_QUERY_TEXT] = query
            attrs[A.CAUSAL_RETRIEVER_NAME] = str(name)
            if hop is not None:
                attrs[A.CAUSAL_HOP_INDEX] = hop.index
            if defined:
                attrs[A.CAUSAL_HOP_SUB_QUERY] = query
            self._start_child(run_id, parent, "retrieval", str(name), attrs)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_retriever_start", exc)

    @staticmethod
    def _note_action(parent: _Entry, query: str | None, force_new: bool = False) -> tuple[Hop | None, bool]:
        if parent.node is None:
            return None, False
        return parent.run.note_action(parent.node, query, force_new=force_new)

    def on_retriever_end(
        self, documents: Sequence[Any], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            if run_id in self._entries:
                self._end(run_id, document_attributes(documents))
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_retriever_end", exc)

    def on_retriever_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            self._end(run_id, None, error)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_retriever_error", exc)

    # --- tools ---------------------------------------------------------------------------
    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            parent = self._entries.get(parent_run_id) if parent_run_id is not None else None
            if parent is None:
                return
            md = metadata or {}
            name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
            args: Any = inputs if isinstance(inputs, dict) else {"input": input_str}
            hop, _ = self._note_action(
                parent, tool_sub_query(args), force_new=md.get(HOP_METADATA_KEY) is True
            )
            attrs = self._child_attributes(parent)
            attrs[A.CAUSAL_SPAN_TYPE] = "tool"
            attrs[A.OPENINFERENCE_SPAN_KIND] = "TOOL"
            attrs[A.GEN_AI_OPERATION_NAME] = "execute_tool"
            attrs[A.TOOL_NAME] = name
            attrs[A.GEN_AI_TOOL_NAME] = name
            attrs[A.TOOL_PARAMETERS] = to_json(args)
            if hop is not None:
                attrs[A.CAUSAL_HOP_INDEX] = hop.index
            call_id = kwargs.get("tool_call_id")
            if call_id:
                attrs[A.TOOL_ID] = str(call_id)
                attrs[A.GEN_AI_TOOL_CALL_ID] = str(call_id)
            if name in self.info.side_effecting or md.get(SIDE_EFFECTING_METADATA_KEY) is True:
                attrs[A.CAUSAL_TOOL_SIDE_EFFECTING] = True
            self._start_child(run_id, parent, "tool", name, attrs)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_tool_start", exc)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            if run_id in self._entries:
                text = tool_output_text(output)
                # a tool that handles its own error (handle_tool_error) still failed: its
                # ToolMessage says status="error", and so does the span
                failed = (
                    (text[:200] or "tool error")
                    if isinstance(output, ToolMessage) and output.status == "error"
                    else None
                )
                self._end(run_id, {A.OUTPUT_VALUE: text, A.OUTPUT_MIME_TYPE: "text/plain"}, failed=failed)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_tool_end", exc)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            self._end(run_id, None, error)
        except Exception as exc:  # fail-open: never reaches the agent
            health.record_error("handler.on_tool_error", exc)
