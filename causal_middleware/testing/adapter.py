"""An :class:`~causal_middleware.replay.adapter.AgentAdapter` for scripted agents whose hops run a
sub-query node, a retrieval node and a reading node (each writing one output key)."""

from __future__ import annotations

from dataclasses import dataclass

from causal_middleware.spans.model import Document, Intervention, Trajectory

__all__ = ["ScriptedAdapter"]


@dataclass(frozen=True)
class ScriptedAdapter:
    """Maps hop-level changes onto node outputs: a sub-query -> ``subquery_node``'s
    ``subquery_key``, evidence -> ``evidence_node``'s ``evidence_key`` (documents as dicts with
    ``id``, ``text``, ``score`` and ``title``), a fact -> ``fact_node``'s ``fact_key``. The agent
    decides when to answer itself, so ``answer_now_update`` raises ``NotImplementedError``."""

    subquery_node: str = "decide"
    subquery_key: str = "sub_query"
    evidence_node: str = "retrieve"
    evidence_key: str = "evidence"
    fact_node: str = "read"
    fact_key: str = "fact"

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        return Intervention(node=self.subquery_node, hop=hop, values={self.subquery_key: sub_query})

    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        evidence = [
            {"id": d.id, "text": d.text, "score": d.score, "title": d.metadata.get("title", "")}
            for d in documents
        ]
        return Intervention(node=self.evidence_node, hop=hop, values={self.evidence_key: evidence})

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        raise NotImplementedError("the scripted agent decides when to answer itself")

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        return Intervention(node=self.fact_node, hop=hop, values={self.fact_key: fact})
