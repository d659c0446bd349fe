"""Probing candidate hops in causal order: the shared loop of ``frozen_hop`` and ``suffix_regen``.

With an agent adapter: for hops 1..H in order, repair the hop (:mod:`~causal_middleware.attribution.repair_op`), fork in
the diagnoser's mode and judge the fork. The first hop whose repair restores a correct answer is
the diagnosis (stage of that hop). When no repair restores one, the failure is blamed on answer
generation. Probing stops at the first restoring hop, at the re-execution budget, or at the end.

Without one (any LangGraph agent): every step, planners outside the hops included, with the
intervention space derived from the trace (:mod:`~causal_middleware.attribution.step_probe`).
"""

from __future__ import annotations

from typing import ClassVar

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    ProbeMode,
    missing_parts,
)
from causal_middleware.attribution.hops import hop_views, question_text
from causal_middleware.attribution.provenance import impact
from causal_middleware.attribution.repair_op import ProbeBudgetExhausted, ProbeRunner
from causal_middleware.attribution.step_probe import probe_steps
from causal_middleware.spans.model import Trajectory


class CausalOrderProbe(Diagnoser):
    """Repair each hop in causal order until one restores the answer (see the module docstring)."""

    mode: ClassVar[ProbeMode] = "regenerate"
    needs_live_agent = True

    def requirements(self, context: DiagnosisContext) -> str | None:
        if context.adapter is None:
            return missing_parts(context, "backend", "verdict")
        return missing_parts(context, "backend", "adapter", "index", "verdict")

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        if context.adapter is None:
            # no adapter: every step, with the intervention space derived from the trace
            return probe_steps(self.name, trajectory, context, mode=self.mode)
        views = hop_views(trajectory)
        cost = DiagnosisCost()
        runner = ProbeRunner(trajectory, context, cost, views)
        scores: dict[str, float] = {}
        found = None
        exhausted = None
        for view in views:
            try:
                record = runner.probe(view.index, self.mode)
            except ProbeBudgetExhausted as exc:
                exhausted = str(exc)
                break
            scores[f"hop:{view.index}"] = 1.0 if record.restored else 0.0
            if record.restored:
                found = view
                break
        question = question_text(trajectory)
        if found is None:
            why = "no single-hop repair restored a correct answer: the answer generation failed"
            if exhausted:
                why = f"{exhausted} before any repair restored a correct answer"
            return Diagnosis(
                method=self.name,
                stage="answer",
                root_cause=why,
                step_scores=scores,
                uncertain=exhausted is not None,
                uses_gold=runner.used_gold,
                cost=cost,
                probes=runner.records,
                details={"mode": self.mode, "budget_exhausted": exhausted is not None},
            )
        sev, propagation = impact(views, question, found.index)
        return Diagnosis(
            method=self.name,
            stage=found.kind,
            hop=found.index,
            propagation=propagation,
            severity=sev,
            root_cause=(
                f"repairing hop {found.index}'s evidence ({self.mode} suffix) restored a correct answer; "
                f"no earlier hop's repair did"
            ),
            step_scores=scores,
            uses_gold=runner.used_gold,
            cost=cost,
            probes=runner.records,
            details={"mode": self.mode},
        )
