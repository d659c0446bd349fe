"""Turning a judge model's JSON verdict into a :class:`Diagnosis` (shared by the LLM diagnosers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from causal_middleware.attribution.base import Diagnosis, DiagnosisCost
from causal_middleware.attribution.hops import HopView, question_text
from causal_middleware.attribution.llm import VERDICT, as_bool, as_hop, as_stage, as_unit, parse_object
from causal_middleware.attribution.provenance import impact
from causal_middleware.spans.model import Trajectory


def verdict_from_reply(
    method: str,
    reply: str,
    trajectory: Trajectory,
    views: Sequence[HopView],
    cost: DiagnosisCost,
    details: dict[str, Any],
) -> Diagnosis:
    """A diagnosis from a judge's JSON verdict (``hop``, ``stage``, ``propagation``, ``severity``,
    ``root_cause``): the reply's last top-level object with a ``hop`` or ``stage`` (the one reply
    rule, :func:`~causal_middleware.attribution.llm.parse_object`). An unusable reply gives a
    diagnosis with no hop and no stage, and says why."""
    try:
        data = parse_object(reply, VERDICT)
    except ValueError as exc:
        return Diagnosis(
            method=method,
            root_cause="",
            cost=cost,
            details={**details, "parse_error": str(exc), "reply": reply[:500]},
        )
    by_index = {v.index: v for v in views}
    hop = as_hop(data.get("hop"), max(by_index) if by_index else 0)
    if hop not in by_index:
        hop = None
    stage = as_stage(data.get("stage"))
    if stage in ("answer", "none"):
        hop = None  # answer generation runs outside every hop
    elif hop is not None:
        stage = stage or by_index[hop].kind
    else:
        stage = stage or "answer"
    sev, propagation = impact(views, question_text(trajectory), hop)
    model_prop = as_bool(data.get("propagation"))
    model_sev = as_unit(data.get("severity"))
    scores = {f"hop:{v.index}": (1.0 if v.index == hop else 0.0) for v in views}
    return Diagnosis(
        method=method,
        stage=stage,
        hop=hop,
        propagation=model_prop if model_prop is not None else propagation,
        severity=model_sev if model_sev is not None else sev,
        root_cause=str(data.get("root_cause") or data.get("reason") or "")[:1000],
        step_scores=scores,
        cost=cost,
        details={**details, "verdict": {k: str(v)[:300] for k, v in data.items()}},
    )
