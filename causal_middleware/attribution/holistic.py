"""``holistic`` / ``holistic_llm`` (Trace): the delta between expected and actual answer, then a
single reverse-order pass over the whole run to find where the delta entered.

* ``holistic`` - deterministic delta tracing at hop level
  (:func:`~causal_middleware.attribution.delta.hop_delta_trace`), no model calls.
* ``holistic_llm`` - two calls to the context's chat model: one states the delta, one reads the
  hop-level rendering of the run in reverse order (last hop first) with the delta and names the
  hop where it entered.

Both use gold information (the expected answer).
"""

from __future__ import annotations

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    missing_parts,
)
from causal_middleware.attribution.delta import compute_delta, hop_delta_trace
from causal_middleware.attribution.hops import hop_views, question_text, render_hops
from causal_middleware.attribution.llm import DELTA, call, delta_schema, parse_object, verdict_schema
from causal_middleware.attribution.provenance import impact
from causal_middleware.attribution.verdict import verdict_from_reply
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import BudgetExceeded
from causal_middleware.spans.model import Trajectory

DELTA_SYSTEM = (
    "You compare an AI agent's final answer with the expected answer to a question. State the delta "
    "between them. Reply with JSON only: "
    '{"delta": "one sentence", "wrong": "content the actual answer has but should not", '
    '"missing": "content of the expected answer the actual answer lacks"}'
)

HOLISTIC_SYSTEM = (
    "You trace where a failure entered a multi-hop retrieval agent's run. You get the delta between "
    "the expected and the actual answer, then the run from its final answer backwards, last hop first. "
    "In one pass backwards, find the earliest hop whose output (evidence or extracted fact) carries the "
    "delta while its input (sub-query) does not: that hop is the root cause. If no hop carries it, the "
    "final answer generation is the root cause. Reply with JSON only: "
    '{"hop": <hop number or null>, "stage": "retrieval" | "tool" | "answer", '
    '"propagation": true | false, "severity": <0..1>, "root_cause": "one sentence"}'
)


def delta_prompt(trajectory: Trajectory, expected: str, fence: Fence | None = None) -> str:
    """The delta call's user prompt; the question and both answers are fenced data."""
    fence = fence or Fence()
    return fence.block(
        "answers",
        f"Question: {fence.inline(question_text(trajectory), 1200)}\n"
        f"Expected answer: {fence.inline(expected, 1200)}\n"
        f"Actual answer: {fence.inline(trajectory.answer, 1200)}",
    )


def read_delta(reply: str) -> str:
    """The ``delta`` sentence of a delta reply (its last object with a delta key), else the reply."""
    try:
        return str(parse_object(reply, DELTA).get("delta") or reply.strip())
    except ValueError:
        return reply.strip()


class HolisticDiagnoser(Diagnoser):
    name = "holistic"
    uses_gold = True
    description = "Trace, offline: delta between expected and actual answer traced back over the hops"

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "gold")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        expected, aliases = context.expected_answer()  # type: ignore[misc]
        views = hop_views(trajectory)
        delta = compute_delta(trajectory, expected, aliases)
        result = hop_delta_trace(views, delta)
        scores = {f"hop:{v.index}": 0.0 for v in views}
        for key in result.visited:
            scores[key] = 0.5
        by_index = {v.index: v for v in views}
        if result.hop is not None:
            scores[f"hop:{result.hop}"] = 1.0
        sev, propagation = impact(views, question_text(trajectory), result.hop)
        return Diagnosis(
            method=self.name,
            stage=by_index[result.hop].kind if result.hop in by_index else "answer",
            hop=result.hop,
            propagation=propagation,
            severity=sev,
            root_cause=f"{delta.describe()}; {result.explanation}",
            step_scores=scores,
            details={"delta": delta.model_dump(), "part": result.part},
        )


class HolisticLLMDiagnoser(Diagnoser):
    name = "holistic_llm"
    uses_gold = True
    description = "Trace with a chat model: delta call + one reverse-order pass over the hops (2 calls)"

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "chat_model", "gold")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        model = context.chat_model
        assert model is not None
        expected, _aliases = context.expected_answer()  # type: ignore[misc]
        views = hop_views(trajectory)
        cost = DiagnosisCost()
        try:
            fence = Fence()
            delta_text = call(
                model,
                fence.system(DELTA_SYSTEM),
                delta_prompt(trajectory, expected, fence),
                cost,
                max_calls=context.max_llm_calls,
                schema=delta_schema(),
            )
            delta = read_delta(delta_text)
            fence = Fence()
            user = fence.block(
                "run",
                f"Delta: {fence.inline(delta, 600)}\n{render_hops(trajectory, views, reverse=True, fence=fence)}",
            )
            reply = call(
                model,
                fence.system(HOLISTIC_SYSTEM),
                user,
                cost,
                max_calls=context.max_llm_calls,
                schema=verdict_schema(max((v.index for v in views), default=0), hop_first=True),
            )
        except BudgetExceeded as exc:
            return Diagnosis(method=self.name, ran=False, reason=str(exc), cost=cost)
        return verdict_from_reply(self.name, reply, trajectory, views, cost, {"delta": delta})
