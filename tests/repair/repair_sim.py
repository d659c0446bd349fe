"""A small deterministic simulator of a multi-hop RAG agent, and a ForkBackend over it.

The agent runs ``decide -> retrieve -> read`` per hop and then ``answer``, like the reference agent:
``decide`` issues the hop's sub-query (its template filled with the previous hop's fact), ``retrieve``
searches a real :class:`BM25Index`, ``read`` extracts the fact with a relation pattern, ``answer``
returns the last fact. Every run is emitted as contract spans (run > hop > node > retrieval/answer) through a
real OTel ``TracerProvider`` into a real :class:`InMemorySpanStore`, and read back as the store's
:class:`Trajectory`. :class:`SimBackend.fork` replays the recorded
prefix, applies the replacement output at the fork step and executes the suffix live, exactly the
contract of the LangGraph replayer (a fork's own trace holds only the suffix; the store stitches
the parent's prefix and the intervened step on), so where a change flips the outcome is known by
construction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Document, Intervention, Lineage, NodeStep, Outcome, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.stitch import HOPS_OFFSET_LABEL
from causal_middleware.world.model import Passage

PASSAGES = [
    Passage(id="p1", title="Acme Corp", text="Acme Corp was founded by Bob Smith in 1990."),
    Passage(id="p2", title="Bob Smith", text="Bob Smith was born in Paris."),
    Passage(id="p3", title="Rob Smith", text="Rob Smith was born in Lyon."),
    Passage(id="p4", title="Acme Group", text="Acme Group was founded by Rob Smith."),
    Passage(id="p5", title="Zeta Inc", text="Zeta Inc was founded by Carl Jones."),
    Passage(id="p6", title="Carl Jones", text="Carl Jones was born in Rome."),
]
QUESTION = "Where was the founder of Acme Corp born?"
REFERENCE = "Paris"
HOP_TEMPLATES = [("Who founded {entity}?", "founded by"), ("Where was {entity} born?", "born in")]
NAME = r"([A-Z]\w+(?: [A-Z]\w+)?)"


@dataclass
class SimRun:
    trajectory: Trajectory
    executed: list[tuple[str, int | None, dict[str, Any]]]  # (node, hop, output) in order


@dataclass
class SimAgent:
    """The agent program. ``sloppy`` makes ``read`` accept any subject sharing the entity's first
    word and take the last match: a natural failure when a near-namesake passage is retrieved."""

    index: BM25Index
    k: int = 2
    sloppy: bool = False
    executions: int = 0

    def node(self, name: str, state: dict[str, Any]) -> dict[str, Any]:
        self.executions += 1
        hop = len(state["hops"])
        if name == "decide":
            template, _ = HOP_TEMPLATES[hop]
            entity = state["facts"][-1] if state["facts"] else "Acme Corp"
            return {"sub_query": template.format(entity=entity)}
        if name == "retrieve":
            hits = self.index.search(state["sub_query"], self.k)
            return {
                "evidence": [
                    {
                        "id": h.passage.id,
                        "text": h.passage.text,
                        "score": round(h.score, 4),
                        "title": h.passage.title,
                    }
                    for h in hits
                ]
            }
        if name == "read":
            return {"fact": self.read(state["sub_query"], state["evidence"], hop)}
        if name == "answer":
            return {"answer": state["facts"][-1] if state["facts"] and state["facts"][-1] else "unknown"}
        raise KeyError(name)

    def read(self, sub_query: str, evidence: list[dict[str, Any]], hop: int) -> str:
        _, relation = HOP_TEMPLATES[hop]
        entity = self.entity_of(sub_query, hop)
        if not entity.strip():
            return ""
        subject = re.escape(entity.split()[0]) + r"[\w ]*?" if self.sloppy else re.escape(entity)
        found = ""
        for doc in evidence:
            for m in re.finditer(rf"{subject} was {relation} {NAME}", doc["text"]):
                found = m.group(1)
                if not self.sloppy:
                    return found
        return found

    @staticmethod
    def entity_of(sub_query: str, hop: int) -> str:
        template, _ = HOP_TEMPLATES[hop]
        pattern = re.escape(template).replace(r"\{entity\}", "(.*)")
        m = re.fullmatch(pattern, sub_query)
        return m.group(1) if m else sub_query


def apply(state: dict[str, Any], node: str, output: dict[str, Any]) -> str | None:
    """Fold a node's output into the state; returns the next node (None when the run ends)."""
    if node == "decide":
        state["sub_query"] = output.get("sub_query", "")
        return "retrieve"
    if node == "retrieve":
        state["evidence"] = output.get("evidence", [])
        return "read"
    if node == "read":
        state["facts"].append(output.get("fact", ""))
        state["hops"].append({"sub_query": state["sub_query"], "evidence": state["evidence"]})
        return "answer" if len(state["hops"]) == len(HOP_TEMPLATES) else "decide"
    if node == "answer":
        state["answer"] = output.get("answer")
        return None
    raise KeyError(node)


class SimBackend:
    """ForkBackend over :class:`SimAgent`: runs and forks kept in memory by run id."""

    def __init__(self, agent: SimAgent, store: SpanStore | None = None) -> None:
        self.agent = agent
        self.store: SpanStore = store if store is not None else InMemorySpanStore()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.store))
        self.runs: dict[str, SimRun] = {}
        self.fork_calls: list[dict[str, Any]] = []

    def run(self) -> Trajectory:
        return self._execute([], None, None)

    def inject(self, run_id: str, node: str, hop: int, values: dict[str, Any]) -> Trajectory:
        """A faulted run: a fork of ``run_id`` with ``node``'s output at ``hop`` replaced."""
        return self.fork(run_id, hop=hop, node=node, values=values, intervention_kind="fault:test")

    def fork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: str = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory:
        if run_id not in self.runs:
            raise KeyError(f"unknown run {run_id}")
        if mode != "regenerate":
            raise ValueError("SimBackend only regenerates")
        self.fork_calls.append({"run_id": run_id, "hop": hop, "node": node, "step": step, "values": values})
        parent = self.runs[run_id]
        at = self._locate(parent, hop, node, step)
        prefix = parent.executed[:at]
        target = parent.executed[at]
        new_values = dict(values or {})
        lineage = Lineage(
            parent_run_id=run_id,
            fork_hop=target[1],
            fork_node=target[0],
            fork_step=at + 1,
            intervention=Intervention(
                kind=intervention_kind, node=target[0], hop=target[1], values=new_values
            ),
        )
        return self._execute(prefix + [(target[0], target[1], new_values)], lineage, labels)

    @staticmethod
    def _locate(parent: SimRun, hop: int | None, node: str | None, step: int | None) -> int:
        for i, (name, h, _) in enumerate(parent.executed):
            if step is not None and i + 1 == step and (node is None or name == node):
                return i
            if step is None and name == node and h == hop:
                return i
        raise KeyError(f"no step node={node} hop={hop} step={step}")

    def _execute(
        self,
        fixed: list[tuple[str, int | None, dict[str, Any]]],
        lineage: Lineage | None,
        labels: dict[str, Any] | None,
    ) -> Trajectory:
        state: dict[str, Any] = {
            "question": QUESTION,
            "hops": [],
            "facts": [],
            "sub_query": "",
            "evidence": [],
        }
        executed: list[tuple[str, int | None, dict[str, Any]]] = []
        nxt: str | None = "decide"
        i = 0
        while nxt is not None:
            hop = len(state["hops"]) + 1 if nxt != "answer" else None
            if i < len(fixed):
                name, _, output = fixed[i]
                assert name == nxt, f"prefix diverged: {name} vs {nxt}"
            else:
                output = self.agent.node(nxt, state)
            executed.append((nxt, hop, output))
            nxt = apply(state, nxt, output)
            i += 1
        trajectory = self._trajectory(executed, state, lineage, labels)
        self.runs[trajectory.run_id] = SimRun(trajectory, executed)
        return trajectory

    def _trajectory(
        self,
        executed: list[tuple[str, int | None, dict[str, Any]]],
        state: dict[str, Any],
        lineage: Lineage | None,
        labels: dict[str, Any] | None,
    ) -> Trajectory:
        """Emit the run as contract spans into the store, annotate it, read it back."""
        tracer = self.provider.get_tracer("repair-sim")
        answer = state.get("answer")
        run_attrs = {
            A.CAUSAL_SPAN_TYPE: "run",
            A.OPENINFERENCE_SPAN_KIND: "CHAIN",
            A.GEN_AI_OPERATION_NAME: "invoke_agent",
            A.CAUSAL_RUN_GRAPH: "sim-agent",
            A.INPUT_VALUE: QUESTION,
            A.OUTPUT_VALUE: str(answer),
        }
        with tracer.start_as_current_span(
            "sim-agent", context=otel_context.Context(), attributes=run_attrs
        ) as root:
            run_id = format(root.get_span_context().trace_id, "032x")
            hop_span: Any = None
            current_hop: int | None = None
            # a fork's own trace holds only the suffix it executed; the store stitches the prefix on
            first_own = (lineage.fork_step or 0) if lineage is not None else 0
            for n, (name, hop, output) in enumerate(executed, start=1):
                if n <= first_own:
                    continue
                if hop != current_hop:
                    if hop_span is not None:
                        hop_span.end()
                        hop_span = None
                    current_hop = hop
                    if hop is not None:
                        hop_span = tracer.start_span(
                            f"hop {hop}", attributes={A.CAUSAL_SPAN_TYPE: "hop", A.CAUSAL_HOP_INDEX: hop}
                        )
                parent = trace.set_span_in_context(hop_span) if hop_span is not None else None
                common: dict[str, Any] = {A.CAUSAL_NODE: name, A.CAUSAL_LANGGRAPH_STEP: n}
                if hop is not None:
                    common[A.CAUSAL_HOP_INDEX] = hop
                node_attrs = {
                    **common,
                    A.CAUSAL_SPAN_TYPE: "node",
                    A.OUTPUT_VALUE: json.dumps(output),
                    A.OUTPUT_MIME_TYPE: "application/json",
                }
                with tracer.start_as_current_span(name, context=parent, attributes=node_attrs):
                    if name == "retrieve":
                        attrs = {
                            **common,
                            A.CAUSAL_SPAN_TYPE: "retrieval",
                            A.INPUT_VALUE: state_query(executed, n),
                        }
                        for i, d in enumerate(output.get("evidence", [])):
                            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_ID, i)] = d["id"]
                            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, i)] = d["text"]
                            if d.get("score") is not None:
                                attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_SCORE, i)] = float(d["score"])
                            attrs[A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_METADATA, i)] = json.dumps(
                                {"title": d.get("title", "")}
                            )
                        tracer.start_span("bm25", attributes=attrs).end()
                    if name == "answer":
                        answer_attrs = {
                            **common,
                            A.CAUSAL_SPAN_TYPE: "answer",
                            A.CAUSAL_ANSWER_TEXT: output["answer"],
                        }
                        tracer.start_span("answer", attributes=answer_attrs).end()
            if hop_span is not None:
                hop_span.end()
        own_labels = dict(labels or {})
        if lineage is not None:
            own_labels[HOPS_OFFSET_LABEL] = True  # hops above are numbered absolutely
        self.store.annotate(
            run_id,
            reference=REFERENCE,
            outcome=Outcome.SUCCESS if answer == REFERENCE else Outcome.FAILURE,
            labels=own_labels,
            lineage=lineage,
        )
        return self.store.get_trajectory(run_id)


def state_query(executed: list[tuple[str, int | None, dict[str, Any]]], n: int) -> str:
    """The sub-query in force at step ``n`` (the last decide before it)."""
    for name, _, output in reversed(executed[: n - 1]):
        if name == "decide":
            return output.get("sub_query", "")
    return ""


class SimAdapter:
    """AgentAdapter of the simulated agent: sub-query -> decide, evidence -> retrieve, fact -> read."""

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        return Intervention(node="decide", hop=hop, values={"sub_query": sub_query})

    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        evidence = [
            {"id": d.id, "text": d.text, "score": d.score, "title": d.metadata.get("title", "")}
            for d in documents
        ]
        return Intervention(node="retrieve", hop=hop, values={"evidence": evidence})

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        raise NotImplementedError("the simulated agent always runs every hop")

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        return Intervention(node="read", hop=hop, values={"fact": fact})


@dataclass
class World:
    index: BM25Index
    agent: SimAgent
    backend: SimBackend
    adapter: SimAdapter = field(default_factory=SimAdapter)


def make_world(*, sloppy: bool = False, k: int = 2) -> World:
    index = BM25Index(PASSAGES)
    agent = SimAgent(index=index, k=k, sloppy=sloppy)
    return World(index=index, agent=agent, backend=SimBackend(agent))


def node_step(trajectory: Trajectory, node: str, hop: int | None) -> NodeStep:
    for s in trajectory.steps:
        if isinstance(s, NodeStep) and s.node == node and s.hop == hop:
            return s
    raise KeyError((node, hop))
