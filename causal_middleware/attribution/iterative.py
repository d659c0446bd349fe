"""``iterative`` / ``iterative_llm`` (Trace): the per-node backward pass.

* ``iterative`` - deterministic delta tracing over node steps
  (:func:`~causal_middleware.attribution.delta.node_delta_trace`): each node is read by its role
  in its hop (query, retrieve, read, answer) and the backward walk names the node that introduced
  the delta, which also separates a bad retrieval from a bad reading of good evidence.
* ``iterative_llm`` - N + 2 calls to the context's chat model for a run of N node steps: one
  states the delta, one per node (last node first) asks whether the node's output carries the
  delta and whether its input does, and a final one names the root-cause step from those
  verdicts. A final reply that cannot be read falls back to the earliest node of the backward
  chain whose output carries the delta and whose input does not.

Both use gold information (the expected answer).
"""

from __future__ import annotations

from typing import Any

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    missing_parts,
)
from causal_middleware.attribution.delta import NodeUnit, compute_delta, node_delta_trace, node_units
from causal_middleware.attribution.holistic import DELTA_SYSTEM, delta_prompt, read_delta
from causal_middleware.attribution.hops import HopView, hop_views, question_text
from causal_middleware.attribution.llm import (
    FINAL_VERDICT,
    NODE_VERDICT,
    as_bool,
    as_hop,
    as_stage,
    call,
    delta_schema,
    final_verdict_schema,
    node_verdict_schema,
    parse_object,
)
from causal_middleware.attribution.provenance import impact
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import BudgetExceeded
from causal_middleware.spans.model import Trajectory

NODE_SYSTEM = (
    "You check one step of a multi-hop retrieval agent's run against a known failure delta (how its "
    "final answer differs from the expected one). Say whether the step's OUTPUT carries the delta "
    "(wrong content, or the expected content lost) and whether its INPUT already carried it. Reply "
    'with JSON only: {"output_carries": true | false, "input_carries": true | false, "reason": "short"}'
)

FINAL_SYSTEM = (
    "You name the root cause of a failed multi-hop retrieval agent run. You get the failure delta and, "
    "for each step (listed from the last to the first), whether its output and its input carried the "
    "delta. The root cause is the earliest step whose output carries the delta while its input does not. "
    'Reply with JSON only: {"step": "<step id>", "hop": <hop number or null>, '
    '"stage": "retrieval" | "tool" | "answer", "root_cause": "one sentence"}'
)


def _stage_of(unit: NodeUnit | None, views: list[HopView]) -> str:
    if unit is None or unit.hop is None or unit.role == "answer":
        return "answer"
    view = next((v for v in views if v.index == unit.hop), None)
    return view.kind if view is not None else "retrieval"


def _diagnosis_from_unit(
    method: str,
    trajectory: Trajectory,
    views: list[HopView],
    unit: NodeUnit | None,
    scores: dict[str, float],
    why: str,
    cost: DiagnosisCost,
    details: dict[str, Any],
) -> Diagnosis:
    hop = unit.hop if unit is not None and unit.role != "answer" else None
    sev, propagation = impact(views, question_text(trajectory), hop)
    if unit is not None:
        scores[unit.step_id] = 1.0
    return Diagnosis(
        method=method,
        stage=_stage_of(unit, views),  # type: ignore[arg-type]
        hop=hop,
        step_id=unit.step_id if unit is not None else None,
        node=unit.node if unit is not None else None,
        propagation=propagation,
        severity=sev,
        root_cause=why,
        step_scores=scores,
        cost=cost,
        details=details,
    )


class IterativeDiagnoser(Diagnoser):
    name = "iterative"
    uses_gold = True
    description = "Trace, offline: per-node backward delta tracing"

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "gold")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        expected, aliases = context.expected_answer()  # type: ignore[misc]
        views = hop_views(trajectory)
        units = node_units(trajectory, views)
        delta = compute_delta(trajectory, expected, aliases)
        result = node_delta_trace(units, delta)
        scores = {u.step_id: 0.0 for u in units}
        for step_id in result.visited:
            scores[step_id] = 0.5
        unit = next((u for u in units if u.step_id == result.step_id), None)
        return _diagnosis_from_unit(
            self.name,
            trajectory,
            views,
            unit,
            scores,
            f"{delta.describe()}; {result.explanation}",
            DiagnosisCost(),
            {"delta": delta.model_dump(), "role": result.part},
        )


class IterativeLLMDiagnoser(Diagnoser):
    name = "iterative_llm"
    uses_gold = True
    description = "Trace with a chat model: delta call, one call per node backwards, a final call (N+2)"

    def __init__(self, text_limit: int = 600) -> None:
        self.text_limit = text_limit

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "chat_model", "gold")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        model = context.chat_model
        assert model is not None
        expected, _aliases = context.expected_answer()  # type: ignore[misc]
        views = hop_views(trajectory)
        units = node_units(trajectory, views)
        cost = DiagnosisCost()
        needed = len(units) + 2
        if context.max_llm_calls is not None and needed > context.max_llm_calls:
            return Diagnosis(
                method=self.name,
                ran=False,
                reason=f"needs {needed} LLM calls (N+2), budget is {context.max_llm_calls}",
            )
        verdicts: dict[str, tuple[bool | None, bool | None, str]] = {}
        try:
            fence = Fence()
            delta_text = call(
                model,
                fence.system(DELTA_SYSTEM),
                delta_prompt(trajectory, expected, fence),
                cost,
                schema=delta_schema(),
            )
            delta = read_delta(delta_text)
            for unit in reversed(units):
                fence = Fence()
                user = fence.block(
                    "step",
                    f"Question: {fence.inline(question_text(trajectory), 400)}\n"
                    f"Delta: {fence.inline(delta, 600)}\n"
                    f"Step {fence.inline(unit.step_id, 80)}: node {fence.inline(unit.node, 80)}, "
                    f"hop {unit.hop}, role {unit.role}\n"
                    f"INPUT: {fence.inline(unit.input_text, self.text_limit) if unit.input_text.strip() else '(none)'}\n"
                    f"OUTPUT: {fence.inline(unit.output_text, self.text_limit) if unit.output_text.strip() else '(none)'}",
                )
                reply = call(model, fence.system(NODE_SYSTEM), user, cost, schema=node_verdict_schema())
                try:
                    data = parse_object(reply, NODE_VERDICT)
                    verdicts[unit.step_id] = (
                        as_bool(data.get("output_carries")),
                        as_bool(data.get("input_carries")),
                        str(data.get("reason", ""))[:200],
                    )
                except ValueError:
                    verdicts[unit.step_id] = (None, None, "unreadable reply")
            fence = Fence()
            listing = "\n".join(
                f"- step {fence.inline(u.step_id, 80)} (node {fence.inline(u.node, 80)}, hop {u.hop}, "
                f"role {u.role}): output carries={verdicts[u.step_id][0]}, input carries="
                f"{verdicts[u.step_id][1]}; {fence.inline(verdicts[u.step_id][2], 200)}"
                for u in reversed(units)
            )
            final = call(
                model,
                fence.system(FINAL_SYSTEM),
                fence.block("steps", f"Delta: {fence.inline(delta, 600)}\n\nSteps, last first:\n{listing}"),
                cost,
                schema=final_verdict_schema(
                    [u.step_id for u in units], max((v.index for v in views), default=0)
                ),
            )
        except BudgetExceeded as exc:  # pragma: no cover - guarded by the upfront check
            return Diagnosis(method=self.name, ran=False, reason=str(exc), cost=cost)
        scores = {u.step_id: (1.0 if verdicts[u.step_id][0] else 0.0) * 0.5 for u in units}
        details = {"delta": delta, "per_node": {k: list(v) for k, v in verdicts.items()}}
        chosen: NodeUnit | None = None
        why = ""
        try:
            data = parse_object(final, FINAL_VERDICT)
            by_id = {u.step_id: u for u in units}
            step = str(data.get("step", "")).strip()
            chosen = by_id.get(step)
            if chosen is None:
                hop = as_hop(data.get("hop"), max((v.index for v in views), default=0))
                stage = as_stage(data.get("stage"))
                if stage == "answer":
                    chosen = next((u for u in reversed(units) if u.role == "answer"), None)
                elif hop is not None:
                    in_hop = [u for u in units if u.hop == hop]
                    chosen = next((u for u in in_hop if u.role == "retrieve"), in_hop[0] if in_hop else None)
            why = str(data.get("root_cause", ""))[:1000]
        except ValueError as exc:
            details["final_parse_error"] = str(exc)
        if chosen is None:
            chosen = self._fallback(units, verdicts)
            why = (
                why
                or "earliest step whose output carries the delta and whose input does not (per-node verdicts)"
            )
        return _diagnosis_from_unit(self.name, trajectory, views, chosen, scores, why, cost, details)

    @staticmethod
    def _fallback(
        units: list[NodeUnit], verdicts: dict[str, tuple[bool | None, bool | None, str]]
    ) -> NodeUnit | None:
        chosen = None
        for unit in reversed(units):
            out_c, in_c, _ = verdicts[unit.step_id]
            if out_c:
                chosen = unit
                if not in_c:
                    break
        return chosen
