"""Steps and agents as attribution targets: the step (span) and agent a diagnosis names.

A hop-level diagnoser names a hop or the answer stage; :func:`fill_targets` adds the step that
stands for that blame, so every diagnosis of a run names a span (``Diagnosis.step_id``) and, on
multi-agent traces, the agent (``Diagnosis.agent``). ``Diagnosis.step_from`` says where the step
came from: ``method`` (the diagnoser named it), ``hop`` (the representative step of the blamed
hop: its first LLM step, else its first step) or ``answer`` (the step that wrote the answer: the
last answer step, else the last LLM step, else the last step).

A step's agent is the ``agent.name`` (OpenInference) or ``gen_ai.agent.name`` (OTel GenAI)
attribute of the step or of its nearest step ancestor that has one; a run none of whose steps
carries one is not multi-agent and its diagnoses name no agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from causal_middleware.spans.model import Trajectory

if TYPE_CHECKING:
    from causal_middleware.attribution.base import Diagnosis

__all__ = ["AGENT_ATTRIBUTES", "agent_of", "answer_step", "fill_targets", "hop_step"]

AGENT_ATTRIBUTES = ("agent.name", "gen_ai.agent.name")


def _own_agent(step: Any) -> str | None:
    for key in AGENT_ATTRIBUTES:
        value = step.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def agent_of(trajectory: Trajectory, step_id: str) -> str | None:
    """The agent of a step: its own agent attribute, else its nearest ancestor's; None when none."""
    by_id = {s.step_id: s for s in trajectory.steps}
    seen: set[str] = set()
    current = by_id.get(step_id)
    while current is not None and current.step_id not in seen:
        seen.add(current.step_id)
        agent = _own_agent(current)
        if agent is not None:
            return agent
        current = by_id.get(current.parent_step_id) if current.parent_step_id else None
    return None


def hop_step(trajectory: Trajectory, hop: int) -> str | None:
    """The step that stands for hop ``hop``: its first LLM step, else its first step."""
    steps = [s for s in trajectory.steps if s.hop == hop]
    chosen = next((s for s in steps if s.kind == "llm"), steps[0] if steps else None)
    return chosen.step_id if chosen is not None else None


def answer_step(trajectory: Trajectory) -> str | None:
    """The step that wrote the answer: the last answer step, else the last LLM step, else the last."""
    steps: Sequence[Any] = trajectory.steps
    for kind in ("answer", "llm"):
        found = [s for s in steps if s.kind == kind]
        if found:
            return str(found[-1].step_id)
    return str(steps[-1].step_id) if steps else None


def fill_targets(trajectory: Trajectory, diagnosis: Diagnosis) -> None:
    """Give a diagnosis that ran its step (when it names none) and its agent (multi-agent runs)."""
    if not diagnosis.ran:
        return
    known = {s.step_id for s in trajectory.steps}
    if diagnosis.step_id is not None and diagnosis.step_id in known:
        diagnosis.step_from = diagnosis.step_from or "method"
    elif diagnosis.hop is not None and (found := hop_step(trajectory, diagnosis.hop)) is not None:
        diagnosis.step_id, diagnosis.step_from = found, "hop"
    elif diagnosis.hop is None and (found := answer_step(trajectory)) is not None:
        diagnosis.step_id, diagnosis.step_from = found, "answer"
    if diagnosis.agent is None and diagnosis.step_id in known:
        diagnosis.agent = agent_of(trajectory, diagnosis.step_id)
