"""Per-run bookkeeping: which hop each node execution, retrieval and tool call belongs to.

The rule (documented in docs/instrumentation.md):

* A hop starts at each execution of a hop node (named, ``@hop_node``-marked, or inferred: see
  ``graph_info.py``). A top-level hop node's span is a child of its hop span; a hop node inside a
  subgraph opens a hop span under the run while its node span stays under its parent node.
* A top-level node that is not a hop node joins the most recently opened hop (the run, before the
  first hop). Answer nodes (``answer_nodes``, default: top-level nodes whose only edge goes to
  ``END``) close the current hop and run under the run span.
* Inside a subgraph node, non-hop nodes join the latest hop opened inside that subgraph node, else
  the hop of the subgraph node itself.
* When hop nodes were inferred (none named), a retrieval or tool call in a node execution that is
  not in a hop, or whose hop already holds another node execution's retrieval/tool call, opens a
  new hop on the spot; later executions of that node in the same run open hops when they start.
  A tool marked ``@hop_node`` opens a new hop at each call in any mode.
* A hop's sub-query is the query of its first retrieval, else its first tool call's arguments.
* ``causal.hop.index`` on a span is authoritative; a node whose hop was opened lazily keeps its
  span parent but carries the new index.
* A hop span ends when a later hop (or an answer node) has superseded it and its last node
  execution has ended, at that node's end time; hops still open end with the run.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from causal_middleware.spans import attributes as A
from causal_middleware.spans.trusted import SpanStarter

from .graph_info import GraphInfo

if TYPE_CHECKING:
    from .extract import NodeInputEncoder

_OK = Status(StatusCode.OK)


class Hop:
    __slots__ = (
        "index",
        "span",
        "ctx",
        "active",
        "last_end_ns",
        "superseded",
        "acted_by",
        "has_sub_query",
        "ended",
    )

    def __init__(self, index: int, span: Span) -> None:
        self.index = index
        self.span = span
        self.ctx = trace.set_span_in_context(span, Context())
        self.active = 0
        self.last_end_ns: int | None = None
        self.superseded = False
        self.acted_by: NodeExec | None = None
        self.has_sub_query = False
        self.ended = False


class NodeExec:
    """One execution of one node (a node span)."""

    __slots__ = ("name", "depth", "step", "ns", "span", "hop", "opened", "top", "inner_hop", "counted")

    def __init__(self, name: str, depth: int, step: int | None, ns: str | None, top: NodeExec | None) -> None:
        self.name = name
        self.depth = depth
        self.step = step
        self.ns = ns
        self.span: Span | None = None
        self.hop: Hop | None = None
        self.opened: Hop | None = None
        self.top = top  # the top-level node execution this one runs inside (None at depth 0)
        self.inner_hop: Hop | None = None  # latest hop opened inside this (top-level) execution
        self.counted: list[Hop] = []

    def child_attributes(self, with_ns: bool = True) -> dict[str, Any]:
        """Attributes every span below this node carries."""
        out: dict[str, Any] = {A.CAUSAL_NODE: self.name}
        if self.step is not None:
            out[A.CAUSAL_LANGGRAPH_STEP] = self.step
        if self.hop is not None:
            out[A.CAUSAL_HOP_INDEX] = self.hop.index
        if with_ns and self.ns:
            out[A.CAUSAL_CHECKPOINT_NS] = self.ns
        return out


class RunState:
    """Hops of one run. Every method takes the run's lock: nodes of one run may run in parallel."""

    def __init__(
        self,
        tracer: trace.Tracer,
        run_span: Span,
        info: GraphInfo,
        *,
        session_id: str | None = None,
        common: dict[str, Any] | None = None,
        hop_offset: int = 0,
        starter: SpanStarter | None = None,
    ) -> None:
        self.tracer = tracer
        self.starter = starter if starter is not None else SpanStarter(tracer)
        self.hop_offset = hop_offset  # replayer forks: hops are numbered on from the fork hop
        self.span = run_span
        self.ctx = trace.set_span_in_context(run_span, Context())
        self.info = info
        self.session_id = session_id
        self.common = common or {}  # attributes on every span of the run (counterfactual marker)
        self.lock = threading.Lock()
        self.hops: list[Hop] = []
        self.current: Hop | None = None
        self.promoted: set[str] = set()
        self.members: list[Any] = []  # LangChain run ids of this run's callbacks, swept at its end
        # (parent context, attributes, end time) of the latest answer seen; one answer span per run
        self.answer: tuple[Context, dict[str, Any], int] | None = None
        # the run's reference answer (config["metadata"]["causal_reference"]): its outcome at the end
        self.reference: str | None = None
        # its node inputs' encoder (extract.NodeInputEncoder), set by the handler, None once it ended
        self.encoder: NodeInputEncoder | None = None

    # --- hops ----------------------------------------------------------------------------
    def _is_hop_node(self, name: str) -> bool:
        return name in self.info.hop_nodes or (not self.info.hops_explicit and name in self.promoted)

    def _open_hop(self) -> Hop:
        index = self.hop_offset + len(self.hops) + 1
        attrs: dict[str, Any] = {
            A.CAUSAL_SPAN_TYPE: "hop",
            A.OPENINFERENCE_SPAN_KIND: "CHAIN",
            A.CAUSAL_HOP_INDEX: index,
            **self.common,
        }
        if self.session_id:
            attrs[A.SESSION_ID] = self.session_id
        hop = Hop(index, self.starter.start(f"hop {index}", self.ctx, attrs))
        self._supersede_current()
        self.current = hop
        self.hops.append(hop)
        return hop

    def _supersede_current(self) -> None:
        hop = self.current
        if hop is None:
            return
        hop.superseded = True
        self.current = None
        if hop.active == 0:
            self._end_hop(hop)

    def _end_hop(self, hop: Hop) -> None:
        if hop.ended:
            return
        hop.ended = True
        hop.span.set_status(_OK)
        hop.span.end(end_time=hop.last_end_ns or time.time_ns())

    def _count(self, node: NodeExec, hop: Hop) -> None:
        hop.active += 1
        node.counted.append(hop)

    def place_node(self, node: NodeExec) -> Context | None:
        """Assign ``node`` to a hop. Returns the parent context for its span: a hop's or the
        run's for top-level nodes, None for nested nodes (their parent is the enclosing node)."""
        hop: Hop | None
        with self.lock:
            if node.depth == 0:
                if node.name in self.info.answer_nodes:
                    self._supersede_current()
                    return self.ctx
                if self._is_hop_node(node.name):
                    hop = self._open_hop()
                    node.opened = hop
                else:
                    hop = self.current
                if hop is None:
                    return self.ctx
                node.hop = hop
                self._count(node, hop)
                return hop.ctx
            top = node.top
            if self._is_hop_node(node.name):
                hop = self._open_hop()
                node.opened = hop
                self._adopt_inner_hop(top, hop)
            else:
                hop = (top.inner_hop or top.hop) if top is not None else self.current
            if hop is not None:
                node.hop = hop
                self._count(node, hop)
            return None

    def _adopt_inner_hop(self, top: NodeExec | None, hop: Hop) -> None:
        if top is None:
            return
        top.inner_hop = hop
        if top.hop is None:  # a subgraph node outside any hop takes its first inner hop's index
            top.hop = hop
            if top.span is not None:
                top.span.set_attribute(A.CAUSAL_HOP_INDEX, hop.index)

    def note_action(
        self, node: NodeExec, query: str | None, *, force_new: bool = False
    ) -> tuple[Hop | None, bool]:
        """A retrieval or tool call in ``node``: returns its hop (opening one per the rule) and
        whether ``query`` became that hop's sub-query."""
        use: Hop | None
        with self.lock:
            hop = node.hop
            if force_new:
                use = hop if (hop is not None and node.opened is hop and hop.acted_by is None) else None
            elif hop is not None and (hop.acted_by is None or hop.acted_by is node):
                use = hop
            elif self.info.hops_explicit:
                return hop, False
            else:
                use = None
            if use is None:
                use = self._open_hop()
                self._count(node, use)
                node.hop = use
                if not force_new:
                    self.promoted.add(node.name)
                if node.span is not None:
                    node.span.set_attribute(A.CAUSAL_HOP_INDEX, use.index)
                if node.depth > 0:
                    self._adopt_inner_hop(node.top, use)
                elif node.top is None:
                    node.inner_hop = use
            if use.acted_by is None:
                use.acted_by = node
            if query and not use.has_sub_query:
                use.has_sub_query = True
                use.span.set_attribute(A.CAUSAL_HOP_SUB_QUERY, query)
                return use, True
            return use, False

    def offer_answer(self, ctx: Context, attrs: dict[str, Any], end_ns: int) -> None:
        """Keep the latest-ending answer candidate; its span is emitted when the run ends."""
        with self.lock:
            if self.answer is None or end_ns >= self.answer[2]:
                self.answer = (ctx, attrs, end_ns)

    def node_finished(self, node: NodeExec, end_ns: int) -> None:
        with self.lock:
            for hop in node.counted:
                hop.active -= 1
                if hop.last_end_ns is None or end_ns > hop.last_end_ns:
                    hop.last_end_ns = end_ns
                if hop.superseded and hop.active <= 0:
                    self._end_hop(hop)

    def finish(self) -> None:
        """End every hop still open (the run is ending)."""
        with self.lock:
            for hop in self.hops:
                self._end_hop(hop)
            self.current = None
