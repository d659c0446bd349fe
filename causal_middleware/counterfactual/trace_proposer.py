"""``TraceProposer``: offline proposals for any agent, from the generic intervention space.

It needs no agent adapter: the alternatives come from what the run recorded
(:func:`~causal_middleware.interventions.space.step_interventions`): retrieved documents left out,
replaced by the next documents the agent's own retriever returns, demoted or re-retrieved; tools
re-run live when they are not side-effecting; produced values swapped for candidates found in the
step's evidence. Each proposal carries its :class:`~causal_middleware.interventions.edit.StepEdit`
(applied to the node's live output in the fork) and ``values``, its JSON image.

``index`` re-retrieves for every node, ``indexes`` per node (a graph with several retrievers);
``state_keys`` maps a node name to the state key holding its documents, for nodes whose output
holds documents under several keys (the diagnosis says when that is so). ``channels`` (the graph's
state keys) drops edits of keys a fork cannot write (a subgraph's own keys in its recorded output).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from causal_middleware.counterfactual.render import to_jsonable
from causal_middleware.interventions.edit import EditError
from causal_middleware.interventions.locate import state_update
from causal_middleware.interventions.space import ToolRunner, step_interventions
from causal_middleware.protocols import Proposal, ProposalBatch
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import NodeStep, Trajectory


class TraceProposer:
    """Deterministic proposals for any node step of any agent (see the module docstring)."""

    def __init__(
        self,
        index: Index | None = None,
        *,
        indexes: Mapping[str, Index] | None = None,
        rerun_tool: ToolRunner | None = None,
        state_keys: Mapping[str, str] | None = None,
        channels: Iterable[str] | None = None,
    ) -> None:
        for name, candidate in {"index": index, **dict(indexes or {})}.items():
            if candidate is not None and not isinstance(candidate, Index):
                raise TypeError(f"{name!r} must be a causal_middleware Index, got {type(candidate).__name__}")
        self.index = index
        self.indexes = dict(indexes or {})
        self.rerun_tool = rerun_tool
        self.state_keys = dict(state_keys or {})
        self.channels = frozenset(channels) if channels is not None else None

    def index_for(self, node: str | None) -> Index | None:
        """The index re-retrieval uses for ``node``: its own retriever, else the default."""
        return self.indexes.get(node or "", self.index)

    def propose(self, trajectory: Trajectory, step: NodeStep, k: int, *, feedback: str = "") -> ProposalBatch:
        output = state_update(step.output)
        if not isinstance(output, dict):
            return ProposalBatch(note=f"node {step.node!r} recorded no state update to edit")
        if self.channels is not None and not set(output) <= self.channels:
            # a subgraph's recorded output also holds its own keys; the fork writes the parent's only
            output = {k: v for k, v in output.items() if k in self.channels}
        candidates, contents = step_interventions(
            trajectory,
            step,
            index=self.index_for(step.node),
            rerun_tool=self.rerun_tool,
            state_key=self.state_keys.get(step.node or ""),
        )
        proposals: list[Proposal] = []
        notes = [contents.note] if contents.note else []
        for candidate in candidates:
            top = candidate.edit.path[0] if candidate.edit.path else None
            if self.channels is not None and isinstance(top, str) and top not in self.channels:
                continue  # e.g. a subgraph's own key in its recorded output: the parent state has none
            try:
                values = to_jsonable(candidate.edit.apply(output))
            except EditError as exc:
                notes.append(str(exc))
                continue
            if not isinstance(values, dict) or values == output:
                continue
            proposals.append(
                Proposal(
                    step_id=step.step_id,
                    node=step.node or "",
                    hop=step.hop,
                    langgraph_step=step.langgraph_step,
                    values=values,
                    source=f"trace:{candidate.kind}",
                    description=candidate.description,
                    edit=candidate.edit,
                    target=candidate.state_key,
                    evidence=candidate.evidence,
                )
            )
            if len(proposals) >= k:
                break
        if not proposals and not notes:
            notes.append(
                f"no alternative for node {step.node!r}: its update holds no retrieved document or tool "
                "output, and its evidence offers no other value for what it wrote"
            )
        return ProposalBatch(proposals=proposals, baseline=to_jsonable(output), note="; ".join(notes) or None)
