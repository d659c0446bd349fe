"""Diagnoses and repairs as evaluation results: span annotations for a collector, OTel events.

One verdict, three forms that say the same thing (name, label, score, explanation):

* a span annotation on the **blamed span** of the failed run (:func:`diagnosis_annotation`,
  :func:`repair_annotation`), which :class:`~causal_middleware.store.phoenix.PhoenixSpanSource`
  writes to Phoenix, where it shows on that span beside the user's own evals;
* the attributes of a ``gen_ai.evaluation.result`` event (OTel GenAI semantic conventions) on the
  diagnosis and repair spans the library exports (:func:`evaluation_event`);
* :func:`phoenix_write_back`: a ``RepairQueue`` ``on_result`` callback writing both verdicts of
  every background repair to Phoenix.

Names: ``root_cause`` (a diagnosis; ``identifier`` = the method, so every diagnoser keeps its own
annotation on a span and re-running one replaces it) and ``repair``. Label: the blamed stage
(``retrieval``, ``tool``, ``planning``, ``answer``) for a diagnosis, the repair status
(``repaired``, ``no_flip``, ``unvalidated``, ``not_failed``) for a repair. Score: the blamed step's
blame score (diagnosis) or its Causal Responsibility Score (repair).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from causal_middleware.attribution.base import Diagnosis
from causal_middleware.repair.models import RepairResult
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.phoenix import PhoenixSpanSource, SpanAnnotation

__all__ = [
    "DIAGNOSIS_ANNOTATION",
    "EVALUATION_EVENT",
    "REPAIR_ANNOTATION",
    "blamed_span_id",
    "crs_diagnosis_annotation",
    "diagnosis_annotation",
    "evaluation_event",
    "phoenix_write_back",
    "repair_annotation",
    "write_back_diagnosis",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
DIAGNOSIS_ANNOTATION = "root_cause"
REPAIR_ANNOTATION = "repair"


def blamed_span_id(
    trajectory: Trajectory | None, step_id: str | None, hop: int | None, root_span_id: str | None
) -> str | None:
    """The span a verdict lands on: the blamed step's span, else the blamed hop's, else the run's
    root. Without the trajectory, ``step_id`` is taken as it is."""
    if trajectory is None:
        return step_id or root_span_id
    if step_id is not None and step_id in {s.step_id for s in trajectory.steps}:
        return step_id
    if hop is not None:
        for h in trajectory.hops:
            if h.index == hop and h.span_id:
                return h.span_id
    return root_span_id


def _score(diagnosis: Diagnosis) -> float | None:
    scores = diagnosis.step_scores
    for key in (diagnosis.step_id, f"hop:{diagnosis.hop}" if diagnosis.hop is not None else None):
        if key is not None and key in scores:
            return float(scores[key])
    return None


def _kind(llm_calls: int) -> Literal["LLM", "CODE"]:
    return "LLM" if llm_calls > 0 else "CODE"


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != [] and v != {}}


def diagnosis_annotation(
    diagnosis: Diagnosis, trajectory: Trajectory | None, *, root_span_id: str | None = None
) -> SpanAnnotation | None:
    """The annotation a diagnosis writes on its blamed span; None when it did not run or blames no span."""
    if not diagnosis.ran:
        return None
    span_id = blamed_span_id(trajectory, diagnosis.step_id, diagnosis.hop, root_span_id)
    if span_id is None:
        return None
    evidence = diagnosis.details.get("evidence") if isinstance(diagnosis.details, dict) else None
    return SpanAnnotation(
        span_id=span_id,
        name=DIAGNOSIS_ANNOTATION,
        identifier=diagnosis.method,
        annotator_kind=_kind(diagnosis.cost.llm_calls),
        label=diagnosis.stage or "unknown",
        score=_score(diagnosis),
        explanation=diagnosis.root_cause or None,
        metadata=_plain(
            {
                "method": diagnosis.method,
                "run_id": diagnosis.run_id or (trajectory.run_id if trajectory is not None else None),
                "hop": diagnosis.hop,
                "node": diagnosis.node,
                "step_id": diagnosis.step_id,
                "step_from": diagnosis.step_from,
                "agent": diagnosis.agent,
                "uncertain": diagnosis.uncertain,
                "candidates": diagnosis.candidates,
                "propagation": diagnosis.propagation,
                "severity": diagnosis.severity,
                "uses_gold": diagnosis.uses_gold,
                "reexecutions": diagnosis.cost.reexecutions,
                "llm_calls": diagnosis.cost.llm_calls,
                "evidence": evidence if isinstance(evidence, dict) else None,
            }
        ),
    )


def repair_annotation(
    result: RepairResult, trajectory: Trajectory | None, *, root_span_id: str | None = None
) -> SpanAnnotation | None:
    """The annotation a repair writes on the step it changed (or the step CRS flagged first); a
    two-step repair's on its first change, the step of this run (its second is a fork's step)."""
    repair = result.repair
    flagged = result.crs.flagged
    step_id: str | None
    if repair is not None:
        step_id, _, hop = repair.first_change
    else:
        step_id = flagged[0].step_id if flagged else None
        hop = flagged[0].hop if flagged else None
    span_id = blamed_span_id(trajectory, step_id, hop, root_span_id)
    if span_id is None:
        return None
    meta: dict[str, Any] = {"run_id": result.run_id, "reexecutions": result.cost.reexecutions}
    if repair is not None:
        meta.update(
            node=repair.node,
            hop=repair.hop,
            step_id=repair.step_id,
            target=repair.target,
            change=repair.description,
            evidence=repair.evidence,
            minimality=repair.minimality,
            validated=repair.validation.passed,
            fork_run_id=repair.fork_run_id,
            answer_before=repair.answer_before,
            answer_after=repair.answer_after,
        )
        if repair.prior:  # the annotated step is the first change; the fields above the second's
            first = repair.prior[0]
            meta.update(
                steps=len(repair.prior) + 1,
                first_change={
                    "node": first.node,
                    "hop": first.hop,
                    "step_id": first.step_id,
                    "change": first.description,
                    "evidence": first.evidence,
                    "fork_run_id": first.fork_run_id,
                },
            )
    return SpanAnnotation(
        span_id=span_id,
        name=REPAIR_ANNOTATION,
        annotator_kind=_kind(result.cost.llm_calls),
        label=result.status,
        score=repair.crs if repair is not None else (flagged[0].crs if flagged else None),
        explanation=result.explanation or None,
        metadata=_plain(meta),
    )


def crs_diagnosis_annotation(
    result: RepairResult, trajectory: Trajectory | None, *, root_span_id: str | None = None
) -> SpanAnnotation | None:
    """The ``root_cause`` annotation of the CRS search a repair ran (what its ``diagnosis`` record
    says). Without the trajectory: the earliest flagged step, its CRS, no stage."""
    from causal_middleware.attribution.step_probe import crs_diagnosis

    if trajectory is None:
        flagged = result.crs.flagged
        span_id = flagged[0].step_id if flagged else root_span_id
        if span_id is None:
            return None
        return SpanAnnotation(
            span_id=span_id,
            name=DIAGNOSIS_ANNOTATION,
            identifier="crs",
            annotator_kind=_kind(result.crs.cost.llm_calls),
            score=flagged[0].crs if flagged else None,
            explanation=(
                f"changing the output of node {flagged[0].node!r} restored a correct answer"
                if flagged
                else "no single-step intervention restored a correct answer"
            ),
            metadata={"method": "crs", "run_id": result.run_id},
        )
    diagnosis = crs_diagnosis("crs", trajectory, result.crs)
    if diagnosis.run_id is None:
        diagnosis = diagnosis.model_copy(update={"run_id": result.run_id})
    return diagnosis_annotation(diagnosis, trajectory, root_span_id=root_span_id)


def evaluation_event(annotation: SpanAnnotation) -> dict[str, Any]:
    """Attributes of the ``gen_ai.evaluation.result`` event saying what ``annotation`` says."""
    attrs: dict[str, Any] = {A.GEN_AI_EVALUATION_NAME: annotation.name}
    if annotation.score is not None:
        attrs[A.GEN_AI_EVALUATION_SCORE_VALUE] = float(annotation.score)
    if annotation.label is not None:
        attrs[A.GEN_AI_EVALUATION_SCORE_LABEL] = annotation.label
    if annotation.explanation:
        attrs[A.GEN_AI_EVALUATION_EXPLANATION] = annotation.explanation
    attrs[A.CAUSAL_REPAIR_STEP_ID] = annotation.span_id
    return attrs


def phoenix_write_back(
    source: PhoenixSpanSource, store: Any, *, on_error: Callable[[Exception], None] | None = None
) -> Callable[[str, Any, RepairResult | None], None]:
    """A ``RepairQueue`` ``on_result`` callback writing each repair (and its CRS diagnosis) to Phoenix.

    ``store``: the span store the queue reads (for the trajectory and its root span). Failures go
    to ``on_error`` (default: counted in ``health.errors["phoenix.write_back"]``), never raised:
    the queue's worker must survive a collector that is down.
    """
    from causal_middleware.repair.trigger import root_span_id
    from causal_middleware.spans.health import health

    def write(run_id: str, judgement: Any, result: RepairResult | None) -> None:
        if result is None:
            return
        try:
            trajectory = store.get_trajectory(run_id)
            root = root_span_id(store, run_id)
            notes = [
                n
                for n in (
                    crs_diagnosis_annotation(result, trajectory, root_span_id=root),
                    repair_annotation(result, trajectory, root_span_id=root),
                )
                if n is not None
            ]
            source.annotate(notes)
        except Exception as exc:  # fail open: a verdict that cannot be written is counted, not raised
            if on_error is not None:
                on_error(exc)
            else:
                health.record_error("phoenix.write_back", exc)

    return write


def write_back_diagnosis(
    source: PhoenixSpanSource, store: Any, diagnosis: Diagnosis, trajectory: Trajectory
) -> dict[str, Any] | None:
    """Write ``diagnosis`` to Phoenix on its blamed span; what was written (the ``written_back``
    JSON of ``causal-mw diagnose --write-back phoenix``), or None when it did not run."""
    from causal_middleware.repair.trigger import root_span_id

    note = diagnosis_annotation(diagnosis, trajectory, root_span_id=root_span_id(store, trajectory.run_id))
    if note is None:
        return None
    [annotation_id] = source.annotate([note])
    return {
        "phoenix": source.url,
        "annotation_id": annotation_id,
        "span_id": note.span_id,
        "name": note.name,
        "identifier": note.identifier,
        "label": note.label,
        "score": note.score,
        "explanation": note.explanation,
    }
