"""A hop-level view of a run: per hop, what went in (sub-query), what was retrieved, what came out.

Diagnosers reason about hops, not raw spans. For each hop of a :class:`Trajectory` a
:class:`HopView` holds

* ``sub_query`` - the hop's sub-query (the hop's own, else its first retrieval's query);
* ``documents`` / ``evidence`` - what the hop retrieved (tool outputs count as evidence for a
  hop that called tools instead of a retriever);
* ``fact`` - what the agent made of it: text output by the hop's steps that ran *after* its
  retrieval (node outputs and LLM replies), minus copies of the sub-query and the documents;
* ``kind`` - ``retrieval`` or ``tool``, which is the stage a root cause in this hop belongs to.

The split works on any agent whose hop is "decide/issue query -> retrieve -> read" shaped, which
is the agentic-RAG loop the project targets; an agent without a separate reading step simply has
an empty ``fact`` and diagnosers fall back to the evidence.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.text import terms
from causal_middleware.prompts import Fence
from causal_middleware.spans.model import (
    AnswerStep,
    Document,
    LLMStep,
    NodeStep,
    RetrievalStep,
    Status,
    ToolStep,
    Trajectory,
)


class HopView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    sub_query: str = ""
    documents: list[Document] = Field(default_factory=list)
    tool_outputs: list[str] = Field(default_factory=list)
    fact: str = ""
    kind: Literal["retrieval", "tool"] = "retrieval"
    retrieval_node: str | None = Field(default=None, description="node whose step retrieved the evidence")
    after_nodes: list[str] = Field(
        default_factory=list, description="nodes of the hop that ran after retrieval"
    )
    node_step_ids: list[str] = Field(default_factory=list)
    error: str | None = None
    error_step_id: str | None = None

    @property
    def evidence(self) -> str:
        return "\n".join([d.text for d in self.documents] + self.tool_outputs)

    @property
    def empty(self) -> bool:
        return not self.documents and not any(t.strip() for t in self.tool_outputs)

    @property
    def query_terms(self) -> set[str]:
        return terms(self.sub_query)

    @property
    def evidence_terms(self) -> set[str]:
        return terms(self.evidence)

    @property
    def fact_terms(self) -> set[str]:
        return terms(self.fact)

    @property
    def has_reader(self) -> bool:
        """Whether steps ran after the retrieval (a reading step), even if they extracted nothing."""
        return bool(self.after_nodes) or bool(self.fact.strip())

    @property
    def output_terms(self) -> set[str]:
        """What the hop hands on: what its reading extracted, else (no reading step) its evidence."""
        return self.fact_terms if self.has_reader else self.evidence_terms


def string_leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            string_leaves(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            string_leaves(v, out)
    elif value is not None and not isinstance(value, bool | int | float):
        try:
            string_leaves(json.loads(json.dumps(value, default=str)), out)
        except (TypeError, ValueError):
            out.append(str(value))


FACT_KEYS = ("fact", "facts", "extracted", "extraction")


def fact_leaves(output: Any) -> list[str]:
    """The text a reading step extracted: a node output's ``fact``-like key when it has one (the
    rest of such an output is bookkeeping, e.g. a hop record repeating the documents), else every
    string in the output."""
    leaves: list[str] = []
    if isinstance(output, dict):
        keys = [k for k in FACT_KEYS if k in output]
        if keys:
            for key in keys:
                string_leaves(output[key], leaves)
            return leaves
    string_leaves(output, leaves)
    return leaves


def _hop_steps(trajectory: Trajectory, index: int) -> list[Any]:
    steps = [s for s in trajectory.steps if s.hop == index]
    if steps:
        return steps
    try:
        return list(trajectory.hop(index).steps)
    except KeyError:
        return []


def answer_step_ids(trajectory: Trajectory) -> set[str]:
    """Ids of the answer steps and of the node steps that produced them.

    They belong to no hop even when a stitched fork files them under the fork hop (a fork at the
    last hop has no own hop after it, so its answer node lands in the fork hop).
    """
    answers = [s for s in trajectory.steps if isinstance(s, AnswerStep)]
    ids = {s.step_id for s in answers}
    ids |= {s.parent_step_id for s in answers if s.parent_step_id}
    return ids


def hop_views(trajectory: Trajectory) -> list[HopView]:
    """One :class:`HopView` per hop of ``trajectory``, in hop order."""
    views: list[HopView] = []
    outside = answer_step_ids(trajectory)
    # Nodes that retrieve in some hop: a hop whose retrieval was replaced by nothing (an empty
    # evidence intervention leaves no retrieval step) still has its retrieving node.
    by_id = {s.step_id: s for s in trajectory.steps}
    fetching_nodes = {
        by_id[s.parent_step_id].node
        for s in trajectory.steps
        if isinstance(s, RetrievalStep | ToolStep) and s.parent_step_id in by_id
    }
    for hop in sorted(trajectory.hops, key=lambda h: h.index):
        steps = [s for s in _hop_steps(trajectory, hop.index) if s.step_id not in outside]
        retrievals = [s for s in steps if isinstance(s, RetrievalStep)]
        tools = [s for s in steps if isinstance(s, ToolStep)]
        first_fetch = next((i for i, s in enumerate(steps) if isinstance(s, RetrievalStep | ToolStep)), None)
        fetch_parents = {s.parent_step_id for s in steps if isinstance(s, RetrievalStep | ToolStep)}
        if first_fetch is None:
            first_fetch = next(
                (i for i, s in enumerate(steps) if isinstance(s, NodeStep) and s.node in fetching_nodes), None
            )
            if first_fetch is not None:
                fetch_parents = {steps[first_fetch].step_id}
        documents = list(hop.documents) or [d for r in retrievals for d in r.documents]
        sub_query = hop.sub_query or (retrievals[0].query if retrievals else "")
        if not sub_query and tools:
            sub_query = " ".join(str(v) for v in tools[0].args.values())
        doc_texts = {d.text.strip() for d in documents if d.text.strip()}
        retrieval_node = None
        for s in steps:
            if isinstance(s, NodeStep) and s.step_id in fetch_parents:
                retrieval_node = s.node
                break
        if retrieval_node is None and retrievals:
            retrieval_node = retrievals[0].node
        fact_parts: list[str] = []
        after_nodes: list[str] = []
        doc_fields = (
            doc_texts | {d.id for d in documents} | {str(d.metadata.get("title", "")) for d in documents}
        )
        if first_fetch is not None:
            for s in steps[first_fetch + 1 :]:
                if isinstance(s, NodeStep) and s.step_id not in fetch_parents:
                    if s.node and s.node not in after_nodes:
                        after_nodes.append(s.node)
                    fact_parts.extend(
                        leaf
                        for leaf in fact_leaves(s.output)
                        if leaf.strip() and leaf.strip() not in doc_fields and leaf != sub_query
                    )
                elif isinstance(s, LLMStep) and s.output.strip():
                    fact_parts.append(s.output)
        errored = next((s for s in steps if s.status == Status.ERROR), None)
        if first_fetch is None and not sub_query.strip() and errored is None:
            continue  # a hop that only decided to answer: nothing was searched in it
        views.append(
            HopView(
                index=hop.index,
                sub_query=sub_query,
                documents=documents,
                tool_outputs=[t.output for t in tools],
                fact="\n".join(dict.fromkeys(fact_parts)),
                kind="tool" if tools and not retrievals else "retrieval",
                retrieval_node=retrieval_node,
                after_nodes=after_nodes,
                node_step_ids=[s.step_id for s in steps if isinstance(s, NodeStep)],
                error=(errored.error or "step failed") if errored is not None else None,
                error_step_id=errored.step_id if errored is not None else None,
            )
        )
    return views


def answer_node(trajectory: Trajectory) -> str | None:
    """The node that produced the final answer: the last answer step's node, else the last node
    step outside every hop, else None."""
    answers = [s for s in trajectory.steps if isinstance(s, AnswerStep)]
    if answers and answers[-1].node:
        return answers[-1].node
    outside = [s for s in trajectory.steps if isinstance(s, NodeStep) and s.hop is None and s.node]
    return outside[-1].node if outside else None


def question_text(trajectory: Trajectory) -> str:
    """The run's input as text (a question string, or the string leaves of a structured input)."""
    value = trajectory.input
    if isinstance(value, str):
        return value
    leaves: list[str] = []
    string_leaves(value, leaves)
    return "\n".join(leaves)


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_hops(
    trajectory: Trajectory,
    views: list[HopView] | None = None,
    *,
    reverse: bool = False,
    doc_limit: int = 240,
    max_docs: int = 5,
    fence: Fence | None = None,
) -> str:
    """A hop-level text rendering of the run for LLM prompts (question, hops, final answer).

    With a ``fence`` every recorded value (question, sub-query, document id and text, tool output,
    extracted fact, error, answer) is one quoted line (:meth:`~causal_middleware.prompts.Fence.inline`),
    so no value can forge a header line (``Hop N``, ``SYSTEM:``); the caller puts the rendering in
    the fence's data block."""
    views = views if views is not None else hop_views(trajectory)

    def value(text: object, limit: int) -> str:
        if fence is not None:
            return fence.inline(text, limit)
        return shorten(str(text), limit)

    lines = [f"Question: {value(question_text(trajectory), 600)}"]
    blocks: list[str] = []
    for v in views:
        sub_query = value(v.sub_query, doc_limit) if v.sub_query else "(none)"
        block = [f"Hop {v.index} ({v.kind})", f"  sub-query: {sub_query}"]
        if v.empty:
            block.append("  evidence: (nothing retrieved)")
        for i, d in enumerate(v.documents[:max_docs], start=1):
            doc_id = fence.inline(d.id, 120) if fence is not None else d.id
            block.append(f"  evidence {i} [{doc_id}]: {value(d.text, doc_limit)}")
        for i, t in enumerate(v.tool_outputs[:max_docs], start=1):
            block.append(f"  tool output {i}: {value(t, doc_limit)}")
        if len(v.documents) > max_docs:
            block.append(f"  (+{len(v.documents) - max_docs} more documents)")
        block.append(f"  extracted: {value(v.fact, doc_limit) if v.fact.strip() else '(nothing)'}")
        if v.error:
            block.append(f"  error: {value(v.error, doc_limit)}")
        blocks.append("\n".join(block))
    answer = fence.inline(trajectory.answer, 600) if fence is not None else repr(trajectory.answer)
    final = f"Final answer: {answer}"
    if reverse:
        blocks.reverse()
        return "\n".join([*lines, final, *blocks])
    return "\n".join([*lines, *blocks, final])
