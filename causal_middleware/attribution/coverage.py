"""``coverage`` (Doctor-RAG): the earliest hop whose evidence does not cover the gold answer.

A hop's coverage is the share of the gold answer's content terms found in its retrieved evidence
(the best of the answer and its aliases; a whole-span match counts as 1.0). The diagnosis is the
earliest hop with coverage below ``threshold`` (stage of that hop); when every hop covers the
answer, the failure is blamed on answer generation.

Uses gold information (the gold answer). On multi-hop questions the final answer only appears in
the last hop's evidence, so the earliest hop below threshold is almost always hop 1: the method
is right for hop-1 faults and blind to deeper ones - the pattern AgenticRAG-FP reports.
"""

from __future__ import annotations

from causal_middleware.attribution.base import Diagnoser, Diagnosis, DiagnosisContext, missing_parts
from causal_middleware.attribution.hops import hop_views, question_text
from causal_middleware.attribution.provenance import impact
from causal_middleware.attribution.text import coverage, terms
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.scoring import contains_answer


class CoverageDiagnoser(Diagnoser):
    name = "coverage"
    uses_gold = True
    description = "Doctor-RAG: earliest hop with insufficient gold-answer coverage, else answer generation"

    def __init__(self, threshold: float = 0.5) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold

    def requirements(self, context: DiagnosisContext) -> str | None:
        return missing_parts(context, "gold")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        gold = context.expected_answer()
        assert gold is not None
        answer, aliases = gold
        golds = [answer, *aliases]
        views = hop_views(trajectory)
        scores: dict[str, float] = {}
        blamed = None
        for view in views:
            if contains_answer(view.evidence, answer, aliases):
                cov = 1.0
            else:
                cov = max((coverage(terms(g), view.evidence_terms) if terms(g) else 0.0) for g in golds)
            scores[f"hop:{view.index}"] = round(cov, 4)
            if blamed is None and cov < self.threshold:
                blamed = view
        question = question_text(trajectory)
        if blamed is None:
            return Diagnosis(
                method=self.name,
                stage="answer",
                root_cause="every hop's evidence covers the gold answer: the answer generation failed",
                step_scores={k: 1.0 - v for k, v in scores.items()},
                details={"coverage": scores, "threshold": self.threshold},
            )
        sev, propagation = impact(views, question, blamed.index)
        return Diagnosis(
            method=self.name,
            stage=blamed.kind,
            hop=blamed.index,
            propagation=propagation,
            severity=sev,
            root_cause=(
                f"hop {blamed.index}'s evidence covers {scores[f'hop:{blamed.index}']:.0%} of the gold answer "
                f"(threshold {self.threshold:.0%})"
            ),
            step_scores={k: round(1.0 - v, 4) for k, v in scores.items()},
            details={"coverage": scores, "threshold": self.threshold},
        )
