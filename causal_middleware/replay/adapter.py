"""Agent-specific knowledge the core needs to turn hop-level changes into fork updates.

Fault injection, probing diagnosers and repair speak in hop terms ("hop 2's evidence becomes
these documents", "hop 3's sub-query becomes this"); only the agent knows which node produced
that and what its state update looks like. An :class:`AgentAdapter` answers with an
:class:`~causal_middleware.spans.model.Intervention` (node + replacement output) that a
:class:`~causal_middleware.protocols.ForkBackend` applies. The reference agent ships one in
``benchmarks.reference_agent``; users of other agents write theirs.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from causal_middleware.spans.model import Document, Intervention, Trajectory


@runtime_checkable
class AgentAdapter(Protocol):
    def evidence_update(self, trajectory: Trajectory, hop: int, documents: list[Document]) -> Intervention:
        """Replace hop ``hop``'s retrieved evidence with ``documents`` (the suffix then reacts)."""
        ...

    def subquery_update(self, trajectory: Trajectory, hop: int, sub_query: str) -> Intervention:
        """Replace the sub-query issued at ``hop``; retrieval then runs live on the new query."""
        ...

    def answer_now_update(self, trajectory: Trajectory, hop: int) -> Intervention:
        """Force the agent to answer at ``hop`` from the evidence gathered before it."""
        ...

    def fact_update(self, trajectory: Trajectory, hop: int, fact: str) -> Intervention:
        """Replace the fact the agent extracted at ``hop`` (e.g. a corrected bridge entity)."""
        ...
