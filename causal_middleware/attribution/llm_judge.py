"""``llm_judge``: a chat model reads the hop-level trace of a failed run and names the stage and hop.

The judge model is whatever :class:`~langchain_core.language_models.BaseChatModel` the context
carries (or the one given to the constructor), so one model family can judge another's traces.
One call; the reply's JSON (``stage``, ``hop``, ``propagation``, ``severity``, ``root_cause``) is
parsed robustly (:func:`~causal_middleware.attribution.llm.parse_object`). With no model the
diagnoser is reported as not run, never faked. By default the judge does not see the expected
answer (``show_reference=True`` shows it, and then the diagnosis uses gold information).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    missing_parts,
)
from causal_middleware.attribution.hops import hop_views, render_hops
from causal_middleware.attribution.llm import call, verdict_schema
from causal_middleware.attribution.verdict import verdict_from_reply
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import BudgetExceeded
from causal_middleware.spans.model import Trajectory

JUDGE_SYSTEM = (
    "You are an expert judge of multi-hop retrieval agents. The run below FAILED: its final answer is "
    "wrong. Each hop issued a sub-query, retrieved evidence and extracted a fact; later hops build on "
    "earlier facts (bridge entities), so one bad hop can derail everything after it. Find the root "
    "cause: the earliest hop whose evidence or extracted fact went wrong (stage 'retrieval', or "
    "'tool' for a tool call), or stage 'answer' if every hop was fine and the final answer generation "
    "failed. Reply with JSON only: "
    '{"stage": "retrieval" | "tool" | "answer", "hop": <hop number or null>, '
    '"propagation": true | false, "severity": <0..1>, "root_cause": "one sentence"}'
)


def judge_requirements(
    model: BaseChatModel | None, context: DiagnosisContext, *, show_reference: bool
) -> str | None:
    """What a chat-model judge still lacks: a model (its own or the context's), and the expected
    answer when it is shown the reference."""
    if model is None and context.chat_model is None:
        return "a judge chat model (none configured)"
    return missing_parts(context, "gold") if show_reference else None


def model_name(model: BaseChatModel) -> str:
    """A chat model's name as its provider reports it, else its class name."""
    return str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)


class LLMJudgeDiagnoser(Diagnoser):
    name = "llm_judge"
    uses_gold = False
    description = "a chat model reads the hop-level trace and predicts stage and hop (1 call)"

    def __init__(self, model: BaseChatModel | None = None, *, show_reference: bool = False) -> None:
        self.model = model
        self.show_reference = show_reference

    def requirements(self, context: DiagnosisContext) -> str | None:
        return judge_requirements(self.model, context, show_reference=self.show_reference)

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        model = self.model or context.chat_model
        assert model is not None
        views = hop_views(trajectory)
        fence = Fence()
        user = fence.block("run", render_hops(trajectory, views, fence=fence))
        if self.show_reference:
            expected, _ = context.expected_answer()  # type: ignore[misc]
            user += f"\nExpected answer: {fence.inline(expected)}"
        cost = DiagnosisCost()
        try:
            reply = call(
                model,
                fence.system(JUDGE_SYSTEM),
                user,
                cost,
                max_calls=context.max_llm_calls,
                schema=verdict_schema(max((v.index for v in views), default=0)),
            )
        except BudgetExceeded as exc:
            return Diagnosis(method=self.name, ran=False, reason=str(exc), cost=cost)
        diagnosis = verdict_from_reply(
            self.name, reply, trajectory, views, cost, {"judge_model": model_name(model)}
        )
        diagnosis.uses_gold = self.show_reference
        return diagnosis
