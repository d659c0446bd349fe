"""Delta tracing (Trace), deterministic: find the earliest step whose output carries the delta and
whose input does not.

The **delta** between the expected answer and the actual one has two sides: ``wrong`` (content
terms of the actual answer that neither the question nor the expected answer has) and ``missing``
(terms of the expected answer the actual one lacks).

* With a ``wrong`` side, the trace walks backwards from the answer: the step whose output carries
  the wrong terms, then the provider of that step's input if the input carries them too, and so
  on until a step's input is clean. That step introduced the delta.
* With only a ``missing`` side (e.g. the agent answered "unknown"), the expected content was
  either dropped by a reading step that had it in its evidence (that step), or dropped by the
  answer step although a fact carried it (answer stage), or never retrieved at all: then the last
  retrieval is blamed, since that is where the expected answer should have entered.

:func:`hop_delta_trace` works on hops (the holistic pass), :func:`node_delta_trace` on node
steps (the iterative pass) with each node's input and output read by its role in the hop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.hops import (
    HopView,
    answer_node,
    answer_step_ids,
    fact_leaves,
    question_text,
    string_leaves,
)
from causal_middleware.attribution.provenance import trace_terms, wrong_terms
from causal_middleware.attribution.text import carries, terms
from causal_middleware.spans.model import LLMStep, NodeStep, Trajectory

Role = Literal["query", "retrieve", "read", "answer", "other"]


class Delta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected: str
    actual: str | None
    wrong: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        parts = []
        if self.wrong:
            parts.append(f"the answer carries {', '.join(self.wrong)} that the expected answer lacks")
        if self.missing:
            parts.append(f"it lacks {', '.join(self.missing)} of the expected answer")
        return "; ".join(parts) or "no content difference"


def compute_delta(trajectory: Trajectory, expected: str, aliases: Sequence[str] = ()) -> Delta:
    question = question_text(trajectory)
    wrong = wrong_terms(trajectory.answer, question, expected)
    for alias in aliases:
        wrong -= terms(alias)
    missing = terms(expected) - terms(trajectory.answer)
    return Delta(expected=expected, actual=trajectory.answer, wrong=sorted(wrong), missing=sorted(missing))


class TraceResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hop: int | None = None
    step_id: str | None = None
    node: str | None = None
    part: str = ""
    visited: list[str] = Field(default_factory=list, description="hops ('hop:N') or step ids walked")
    explanation: str = ""


def hop_delta_trace(views: Sequence[HopView], delta: Delta) -> TraceResult:
    """The holistic pass over hops (see the module docstring)."""
    if delta.wrong:
        trace = trace_terms(views, set(delta.wrong))
        visited = [f"hop:{h}" for h in trace.path]
        if trace.origin_hop is None:
            return TraceResult(part="answer", visited=visited, explanation="no hop carries the wrong content")
        return TraceResult(
            hop=trace.origin_hop,
            part=trace.origin_part or "",
            visited=visited,
            explanation=f"the wrong content entered at hop {trace.origin_hop} ({trace.origin_part})",
        )
    missing = set(delta.missing)
    for view in reversed(views):
        if carries(view.fact_terms, missing):
            return TraceResult(
                part="answer",
                visited=[f"hop:{view.index}"],
                explanation=(
                    f"hop {view.index} extracted the expected answer but the final answer dropped it"
                ),
            )
        if view.after_nodes and carries(view.evidence_terms, missing):
            return TraceResult(
                hop=view.index,
                part="fact",
                visited=[f"hop:{view.index}"],
                explanation=f"hop {view.index}'s evidence had the expected answer but its reading missed it",
            )
        if carries(view.evidence_terms, missing):
            return TraceResult(
                part="answer",
                visited=[f"hop:{view.index}"],
                explanation=(
                    f"hop {view.index}'s evidence had the expected answer but the final answer missed it"
                ),
            )
    if not views:
        return TraceResult(part="answer", explanation="the run has no hop")
    last = views[-1]
    return TraceResult(
        hop=last.index,
        part="evidence",
        visited=[f"hop:{last.index}"],
        explanation=f"the expected answer never entered the run; hop {last.index} is where it should have",
    )


class NodeUnit(BaseModel):
    """One node step read by its role: what it consumed and what it produced, as term sets."""

    model_config = ConfigDict(extra="forbid")

    step_id: str
    node: str
    hop: int | None
    role: Role
    input_terms: set[str]
    output_terms: set[str]
    input_text: str = ""
    output_text: str = ""


def node_units(trajectory: Trajectory, views: Sequence[HopView]) -> list[NodeUnit]:
    """Every node step of the run as a :class:`NodeUnit`, in causal order."""
    by_hop = {v.index: v for v in views}
    final_node = answer_node(trajectory)
    nodes = [s for s in trajectory.steps if isinstance(s, NodeStep)]
    producers = answer_step_ids(trajectory)
    last_final = max((i for i, s in enumerate(nodes) if s.step_id in producers), default=None)
    if last_final is None:
        last_final = max(
            (i for i, s in enumerate(nodes) if s.node == final_node and s.hop is None), default=None
        )
    llm_by_parent: dict[str, list[str]] = {}
    for s in trajectory.steps:
        if isinstance(s, LLMStep) and s.parent_step_id:
            llm_by_parent.setdefault(s.parent_step_id, []).append(s.output)
    units: list[NodeUnit] = []
    prev_fact: dict[int, str] = {}
    for i, step in enumerate(nodes):
        leaves = fact_leaves(step.output)
        leaves.extend(llm_by_parent.get(step.step_id, []))
        out_text = "\n".join(leaves)
        view = by_hop.get(step.hop) if step.hop is not None and i != last_final else None
        role: Role
        if view is not None:
            if step.node == view.retrieval_node:
                role, in_text, out_text = "retrieve", view.sub_query, view.evidence or out_text
            elif step.node in view.after_nodes:
                role, in_text = "read", f"{view.sub_query}\n{view.evidence}"
            else:
                role = "query"
                earlier = [prev_fact[h] for h in sorted(prev_fact) if h < view.index]
                in_text = earlier[-1] if earlier else ""
        elif i == last_final:
            role = "answer"
            in_text = "\n".join(v.fact if v.has_reader else v.evidence for v in views)
            out_text = trajectory.answer or out_text
        else:
            role = "other"
            in_leaves: list[str] = []
            string_leaves(step.input, in_leaves)
            in_text = "\n".join(in_leaves)
        if view is not None:
            prev_fact[view.index] = view.fact if view.has_reader else view.evidence
        units.append(
            NodeUnit(
                step_id=step.step_id,
                node=step.node or step.name,
                hop=step.hop,
                role=role,
                input_terms=terms(in_text),
                output_terms=terms(out_text),
                input_text=in_text,
                output_text=out_text,
            )
        )
    return units


def node_delta_trace(units: Sequence[NodeUnit], delta: Delta) -> TraceResult:
    """The iterative (per node, backward) pass (see the module docstring)."""
    if delta.wrong:
        wrong = set(delta.wrong)
        carriers = [i for i, u in enumerate(units) if carries(u.output_terms, wrong)]
        if not carriers:
            return TraceResult(part="answer", explanation="no step carries the wrong content")
        current = carriers[-1]
        visited: list[str] = []
        while True:
            unit = units[current]
            visited.append(unit.step_id)
            if not carries(unit.input_terms, wrong):
                return TraceResult(
                    hop=unit.hop,
                    step_id=unit.step_id,
                    node=unit.node,
                    part=unit.role,
                    visited=visited,
                    explanation=f"{unit.node} (hop {unit.hop}) output the wrong content; its input did not carry it",
                )
            earlier = [i for i in carriers if i < current]
            if not earlier:
                return TraceResult(
                    hop=unit.hop,
                    step_id=unit.step_id,
                    node=unit.node,
                    part=unit.role,
                    visited=visited,
                    explanation=f"{unit.node} (hop {unit.hop}) is the earliest step carrying the wrong content",
                )
            current = earlier[-1]
    missing = set(delta.missing)
    for unit in reversed(units):
        if (
            unit.role == "read"
            and carries(unit.input_terms, missing)
            and not carries(unit.output_terms, missing)
        ):
            return TraceResult(
                hop=unit.hop,
                step_id=unit.step_id,
                node=unit.node,
                part="read",
                visited=[unit.step_id],
                explanation=f"{unit.node} (hop {unit.hop}) had the expected answer in its evidence and dropped it",
            )
        if unit.role == "answer" and carries(unit.input_terms, missing):
            return TraceResult(
                step_id=unit.step_id,
                node=unit.node,
                part="answer",
                visited=[unit.step_id],
                explanation="the answer step had the expected answer in its input and dropped it",
            )
    retrieves = [u for u in units if u.role == "retrieve"]
    if not retrieves:
        return TraceResult(part="answer", explanation="the run retrieved nothing")
    last = retrieves[-1]
    return TraceResult(
        hop=last.hop,
        step_id=last.step_id,
        node=last.node,
        part="retrieve",
        visited=[last.step_id],
        explanation="the expected answer was never retrieved; the last retrieval is where it should have entered",
    )
