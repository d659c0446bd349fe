"""``rule``: the classic heuristic checks, first match wins.

1. **Errors** - a step that raised: its hop (stage ``tool`` for a tool hop, else ``retrieval``),
   or the answer stage when it ran outside every hop.
2. **Empty retrieval** - the earliest hop that retrieved nothing.
3. **Missing actions** - no hop at all (the agent answered without retrieving: hop 1), or a hop
   with no sub-query (the action was never issued).
4. **Empty answer** - no final answer: answer stage.
5. **Grounding overlap** - the answer's content terms overlap the evidence of every hop less than
   ``grounding_threshold``: the answer is not grounded, answer stage.
6. **Incorrect answer** - otherwise the run failed with a grounded answer: answer stage.

Uses no gold information: the run is known to have failed, nothing else.
"""

from __future__ import annotations

from causal_middleware.attribution.base import Diagnoser, Diagnosis, DiagnosisContext
from causal_middleware.attribution.hops import hop_views, question_text
from causal_middleware.attribution.provenance import impact
from causal_middleware.attribution.text import coverage, terms
from causal_middleware.spans.model import Status, Trajectory


class RuleDiagnoser(Diagnoser):
    name = "rule"
    uses_gold = False
    description = (
        "heuristic checks: errors, empty retrieval, missing actions, empty/ungrounded/incorrect answer"
    )

    def __init__(self, grounding_threshold: float = 0.5) -> None:
        if not 0.0 <= grounding_threshold <= 1.0:
            raise ValueError(f"grounding_threshold must be in [0, 1], got {grounding_threshold}")
        self.grounding_threshold = grounding_threshold

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        views = hop_views(trajectory)
        question = question_text(trajectory)
        scores = {f"hop:{v.index}": 0.0 for v in views}

        def blame(hop: int | None, rule: str, why: str) -> Diagnosis:
            stage = "answer"
            if hop is not None:
                view = next((v for v in views if v.index == hop), None)
                stage = view.kind if view is not None else "retrieval"
                scores[f"hop:{hop}"] = 1.0
            sev, propagation = impact(views, question, hop)
            return Diagnosis(
                method=self.name,
                stage=stage,  # type: ignore[arg-type]
                hop=hop,
                propagation=propagation,
                severity=sev,
                root_cause=why,
                step_scores=scores,
                details={"rule": rule},
            )

        for view in views:
            if view.error:
                return blame(view.index, "error", f"a step of hop {view.index} failed: {view.error}")
        outside = [s for s in trajectory.steps if s.hop is None and s.status == Status.ERROR]
        if outside:
            return blame(
                None, "error", f"step {outside[0].name or outside[0].step_id} failed: {outside[0].error}"
            )
        for view in views:
            if view.empty:
                return blame(view.index, "empty_retrieval", f"hop {view.index} retrieved nothing")
        if not views:
            diagnosis = blame(None, "missing_actions", "the agent answered without retrieving anything")
            diagnosis.hop, diagnosis.stage = 1, "retrieval"
            return diagnosis
        for view in views:
            if not view.sub_query.strip():
                return blame(view.index, "missing_actions", f"hop {view.index} issued no sub-query")
        answer = (trajectory.answer or "").strip()
        if not answer or not terms(answer):
            return blame(None, "empty_answer", f"the final answer is empty or says nothing: {answer!r}")
        evidence_terms: set[str] = set()
        for view in views:
            evidence_terms |= view.evidence_terms
        grounded = coverage(terms(answer) - terms(question), evidence_terms)
        if grounded < self.grounding_threshold:
            return blame(
                None,
                "grounding",
                f"only {grounded:.0%} of the answer's content is in the retrieved evidence",
            )
        return blame(None, "incorrect_answer", f"the answer {answer!r} is grounded in the evidence but wrong")
