"""A small deterministic multi-hop RAG agent for the repair tests, on :mod:`causal_middleware.testing`.

The agent runs ``decide -> retrieve -> read`` per hop and then ``answer``, like the reference agent:
``decide`` issues the hop's sub-query (its template filled with the previous hop's fact), ``retrieve``
searches a real :class:`BM25Index`, ``read`` extracts the fact with a relation pattern, ``answer``
returns the last fact. :class:`SimBackend` is a :class:`FakeForkBackend` over it: runs land as
contract spans in a real :class:`InMemorySpanStore` and forks regenerate the suffix live, so where a
change flips the outcome is known by construction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.tasks.model import Passage
from causal_middleware.testing import FakeForkBackend, Node, ScriptedAdapter, ScriptedAgent

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
class SimAgent:
    """The agent program. ``sloppy`` makes ``read`` accept any subject sharing the entity's first
    word and take the last match: a natural failure when a near-namesake passage is retrieved."""

    index: BM25Index
    k: int = 2
    sloppy: bool = False

    def scripted(self) -> ScriptedAgent:
        """This program as a :class:`ScriptedAgent` (hop = the hop about to run; answer has none)."""
        return ScriptedAgent(
            nodes=[
                Node("decide", lambda s: self.node("decide", s)),
                Node(
                    "retrieve",
                    lambda s: self.node("retrieve", s),
                    query=lambda s: s["sub_query"],
                    retriever="bm25",
                ),
                Node("read", lambda s: self.node("read", s)),
                Node("answer", lambda s: self.node("answer", s), answer_key="answer"),
            ],
            entry="decide",
            route=apply,
            start=lambda question: {
                "question": question,
                "hops": [],
                "facts": [],
                "sub_query": "",
                "evidence": [],
            },
            hop_of=lambda state, node: len(state["hops"]) + 1 if node != "answer" else None,
            name="sim-agent",
        )

    def node(self, name: str, state: dict[str, Any]) -> dict[str, Any]:
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


class SimBackend(FakeForkBackend):
    """The fake fork backend over :class:`SimAgent`, asked the one question; ``fork_calls`` lists forks."""

    def __init__(self, agent: SimAgent, store: SpanStore | None = None) -> None:
        super().__init__(agent.scripted(), store)

    def run(self) -> Trajectory:  # type: ignore[override]
        return super().run(QUESTION, reference=REFERENCE)

    def inject(self, run_id: str, node: str, hop: int, values: dict[str, Any]) -> Trajectory:
        """A faulted run: a fork of ``run_id`` with ``node``'s output at ``hop`` replaced."""
        return self.fork(run_id, hop=hop, node=node, values=values, intervention_kind="fault:test")

    @property
    def fork_calls(self) -> list[dict[str, Any]]:
        return [
            {"run_id": r.run_id, "hop": r.hop, "node": r.node, "step": r.step, "values": r.values}
            for r in self.requests
        ]


SimAdapter = ScriptedAdapter  # sub-query -> decide, evidence -> retrieve, fact -> read


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
