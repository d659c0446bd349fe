"""Repair on failure: a bounded background queue that judges finished runs and repairs failed ones.

The user's thread only ever calls :meth:`RepairQueue.submit`, which never blocks: when the queue
is full the run is dropped and counted. A daemon worker thread reads the run from the store, asks
a :class:`~causal_middleware.protocols.Verifier` whether it failed (one on its answer, its recorded
outcome, or e.g. :class:`~causal_middleware.context.judges.DissatisfactionVerifier`, the context
package's dissatisfaction detector), and for a failed run (or the run the verdict blames) runs
the bound :class:`~causal_middleware.repair.service.RepairService` (which writes ``diagnosis`` and
``repair`` records to the store). It then emits a ``repair`` span and a ``diagnosis`` child span
in a new trace, each with an OTel Link to the failed run's root span. Errors in the worker are
swallowed and counted (``causal_middleware.spans.health``), never raised into the agent.
"""

from __future__ import annotations

import collections
import inspect
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext, TraceFlags
from pydantic import BaseModel

from causal_middleware.counterfactual.verifiers import as_verifier
from causal_middleware.protocols import Verdict, Verifier
from causal_middleware.repair.handoff import RunHandoff
from causal_middleware.repair.models import RepairResult
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Outcome, Trajectory

TRACER_NAME = "causal_middleware.repair"


class QueueStats(BaseModel):
    submitted: int = 0
    dropped: int = 0
    processed: int = 0
    judged_failed: int = 0
    judged_ok: int = 0
    undecided: int = 0
    repaired: int = 0
    skipped_forks: int = 0
    skipped_unknown: int = 0
    skipped_repeats: int = 0
    errors: int = 0


_REMEMBER_REPAIRED = 10_000


class RepairQueue(RunHandoff):
    """A bounded queue of finished runs and the daemon worker that judges and repairs them.

    ``repairer`` is a :class:`~causal_middleware.repair.service.RepairService` (or any object
    with ``repair(trajectory) -> RepairResult``, or a plain callable doing the same). ``store``
    is where runs are read (default: the repairer's ``store``). ``tracer_provider`` receives the
    repair spans (default: the global provider). ``on_result(run_id, verdict, result)`` is
    called in the worker after each run (``result`` is None for runs judged not failed).
    ``judge`` is the :class:`~causal_middleware.protocols.Verifier` deciding which runs failed (a
    plain ``callable(answer) -> bool | None``, True meaning success, is wrapped by
    :func:`~causal_middleware.counterfactual.verifiers.as_verifier`).

    When the verdict names another run (``Verdict.run_id``, e.g. the previous turn the user
    rejected), that run is the one annotated, repaired, linked from the spans and passed to
    ``on_result``; it is skipped (counted in ``stats.skipped_forks`` / ``stats.skipped_unknown``,
    no ``on_result``) when it is a fork or not in the store. A run this queue already repaired is
    not repaired again (``stats.skipped_repeats``, no ``on_result``); a repair that raised may be
    retried when the run is blamed again. The verdict's ``feedback`` (e.g. the user's correction)
    reaches a repairer whose ``repair`` takes ``feedback=`` (``RepairService`` does) as failure
    feedback for its proposer.

    The run to repair is annotated ``outcome=failure`` when it has no outcome yet, and, when the
    verdict states the right answer (``Verdict.expected``, e.g. the value of the user's
    correction) and the run has no stored reference, ``reference=expected``; an existing
    reference is never overwritten. The repairer gets the trajectory with both, so a
    ``RepairService(verifier=ReferenceVerifier())`` judges its forks against what the user said
    (forks inherit the parent's reference).
    """

    def __init__(
        self,
        repairer: Any,
        *,
        judge: Verifier | Callable[..., bool | None],
        store: Any = None,
        maxsize: int = 16,
        tracer_provider: Any = None,
        on_result: Callable[[str, Verdict, RepairResult | None], None] | None = None,
        fetch_attempts: int = 5,
        keep_results: int = 100,
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self._repair = _repair_callable(repairer)
        self.judge = as_verifier(judge)
        found = store if store is not None else getattr(repairer, "store", None)
        if found is None:
            raise ValueError("RepairQueue needs a store to read finished runs from")
        self.store: Any = found
        self.tracer_provider = tracer_provider
        self.on_result = on_result
        self.fetch_attempts = max(1, fetch_attempts)
        self.stats: QueueStats
        self.results: collections.deque[RepairResult] = collections.deque(maxlen=keep_results)
        # runs already repaired (worker thread only): a run blamed twice, e.g. for its own tool
        # error and then by the next turn's correction, is repaired once
        self._repaired: collections.OrderedDict[str, None] = collections.OrderedDict()
        super().__init__(
            maxsize=maxsize, stats=QueueStats(), thread_name="causal-repair-worker", health_key="repair.queue"
        )

    # --- the user's side (submit, wait_idle, pending: RunHandoff) ------------------------------
    def close(self, timeout: float | None = 5.0) -> None:
        """Stop accepting runs, let the worker finish what is queued, and stop it."""
        if self._close() and self._stop_thread(timeout):
            self._thread.join(timeout)

    # --- the worker's side ---------------------------------------------------------------------
    def _handle(self, run_id: str) -> None:
        trajectory = self._fetch(run_id)
        if trajectory.is_counterfactual:  # forks (repairs' own probes included) are not judged
            with self._lock:
                self.stats.skipped_forks += 1
            return
        verdict = self.judge.verify(trajectory)
        with self._lock:
            self.stats.processed += 1
            if verdict.failed is None:
                self.stats.undecided += 1
            elif verdict.failed:
                self.stats.judged_failed += 1
            else:
                self.stats.judged_ok += 1
        if not verdict.failed:
            if self.on_result is not None:
                self.on_result(run_id, verdict, None)
            return
        if verdict.run_id is not None and verdict.run_id != run_id:
            # the verdict blamed another run (e.g. the previous turn, which the user rejected)
            run_id = verdict.run_id
            try:
                trajectory = self.store.get_trajectory(run_id)
            except KeyError:
                with self._lock:
                    self.stats.skipped_unknown += 1
                return
            if trajectory.is_counterfactual:
                with self._lock:
                    self.stats.skipped_forks += 1
                return
        if run_id in self._repaired:
            with self._lock:
                self.stats.skipped_repeats += 1
            return
        trajectory = self._annotate_failure(run_id, trajectory, verdict)
        result = self._repair(trajectory, verdict.feedback or None)
        self._repaired[run_id] = None  # only once it returned: a repair that raised may be retried
        if len(self._repaired) > _REMEMBER_REPAIRED:
            self._repaired.popitem(last=False)
        self.results.append(result)
        with self._lock:
            self.stats.repaired += int(result.status == "repaired")
        emit_repair_spans(self._tracer(), result, root_span_id(self.store, run_id), trajectory=trajectory)
        if self.on_result is not None:
            self.on_result(run_id, verdict, result)

    def _annotate_failure(self, run_id: str, trajectory: Trajectory, verdict: Verdict) -> Trajectory:
        """Record in the store what the verdict established about the failed run (its outcome,
        and the answer it should have given when the run has no reference); the updated run."""
        facts: dict[str, Any] = {}
        if trajectory.outcome in (None, Outcome.UNKNOWN):
            facts["outcome"] = Outcome.FAILURE
        if verdict.expected and trajectory.reference is None:
            facts["reference"] = verdict.expected
        if not facts:
            return trajectory
        self.store.annotate(run_id, **facts)
        return trajectory.model_copy(update=facts)

    def _fetch(self, run_id: str) -> Trajectory:
        provider = self.tracer_provider
        if provider is not None and hasattr(provider, "force_flush"):
            provider.force_flush()
        delay = 0.02
        for attempt in range(self.fetch_attempts):
            try:
                trajectory: Trajectory = self.store.get_trajectory(run_id)
                return trajectory
            except KeyError:
                if attempt == self.fetch_attempts - 1:
                    raise
                time.sleep(delay)  # spans of a just-finished run may still be in an exporter batch
                delay *= 2
        raise KeyError(run_id)  # unreachable; keeps type checkers content

    def _tracer(self) -> trace.Tracer:
        if self.tracer_provider is not None:
            tracer: trace.Tracer = self.tracer_provider.get_tracer(TRACER_NAME)
            return tracer
        return trace.get_tracer(TRACER_NAME)


def _repair_callable(repairer: Any) -> Callable[[Trajectory, str | None], RepairResult]:
    """``fn(trajectory, feedback)``: the repairer's ``repair`` method or the repairer itself, given
    the verdict's feedback as ``feedback=`` when it takes that keyword (``RepairService`` does)."""
    if hasattr(repairer, "repair") and callable(repairer.repair):
        fn = repairer.repair
    elif callable(repairer):
        fn = repairer
    else:
        raise TypeError(
            f"repairer must have a repair(trajectory) method or be callable, got {type(repairer).__name__}"
        )
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a callable without a signature: call it the plain way
        params = []
    takes_feedback = any(p.name == "feedback" or p.kind is p.VAR_KEYWORD for p in params)

    def call(trajectory: Trajectory, feedback: str | None) -> RepairResult:
        result: RepairResult = fn(trajectory, feedback=feedback) if takes_feedback else fn(trajectory)
        return result

    return call


def root_span_id(store: Any, run_id: str) -> str | None:
    """The span id of a stored run's root span (the run span, else the first span without parent)."""
    try:
        spans = store.get_spans(run_id)
    except KeyError:
        return None
    runs = [s for s in spans if s.attributes.get(A.CAUSAL_SPAN_TYPE) == "run"]
    roots = runs or [s for s in spans if s.parent_span_id is None]
    return roots[0].span_id if roots else None


def emit_repair_spans(
    tracer: trace.Tracer, result: RepairResult, root: str | None, *, trajectory: Trajectory | None = None
) -> None:
    """A ``repair`` span (and a ``diagnosis`` child) in a new trace, linked to the failed run. Each
    carries a ``gen_ai.evaluation.result`` event saying what its span annotation says
    (:mod:`causal_middleware.repair.verdicts`); ``trajectory`` (the failed run) names the blamed span."""
    from causal_middleware.repair.verdicts import (
        EVALUATION_EVENT,
        crs_diagnosis_annotation,
        evaluation_event,
        repair_annotation,
    )

    links = []
    if root is not None:
        context = SpanContext(
            trace_id=int(result.run_id, 16),
            span_id=int(root, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        links.append(Link(context, {A.CAUSAL_REPAIR_RUN_ID: result.run_id}))
    repair = result.repair
    attrs: dict[str, Any] = {
        A.CAUSAL_SPAN_TYPE: "repair",
        A.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
        A.CAUSAL_REPAIR_RUN_ID: result.run_id,
        A.CAUSAL_REPAIR_STATUS: result.status,
        A.CAUSAL_REPAIR_REEXECUTIONS: result.cost.reexecutions,
        A.CAUSAL_REPAIR_NAIVE_REEXECUTIONS: result.cost.naive_reexecutions,
        A.CAUSAL_REPAIR_LLM_CALLS: result.cost.llm_calls,
        A.CAUSAL_REPAIR_EXPLANATION: result.explanation,
    }
    if repair is not None:
        step_id, node, hop = repair.first_change  # a two-step repair: its first change, this run's step
        attrs.update(
            {
                A.CAUSAL_REPAIR_STEP_ID: step_id,
                A.CAUSAL_NODE: node,
                A.CAUSAL_REPAIR_MINIMALITY: repair.minimality,
                A.CAUSAL_REPAIR_CRS: repair.crs,
                A.CAUSAL_REPAIR_VALIDATED: repair.validation.passed,
            }
        )
        if hop is not None:
            attrs[A.CAUSAL_HOP_INDEX] = hop
        if repair.fork_run_id is not None:
            attrs[A.CAUSAL_REPAIR_FORK_RUN_ID] = repair.fork_run_id
    with tracer.start_as_current_span(
        f"repair {result.run_id[:8]}", context=otel_context.Context(), links=links, attributes=attrs
    ) as repair_span:
        verdict = repair_annotation(result, trajectory, root_span_id=root)
        if verdict is not None:
            repair_span.add_event(EVALUATION_EVENT, evaluation_event(verdict))
        flagged = result.crs.flagged
        diag: dict[str, Any] = {
            A.CAUSAL_SPAN_TYPE: "diagnosis",
            A.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
            A.CAUSAL_REPAIR_RUN_ID: result.run_id,
            A.CAUSAL_DIAGNOSIS_METHOD: "crs",
        }
        if flagged:
            diag[A.CAUSAL_REPAIR_STEP_ID] = flagged[0].step_id
            diag[A.CAUSAL_NODE] = flagged[0].node
            diag[A.CAUSAL_REPAIR_CRS] = flagged[0].crs or 0.0
            if flagged[0].hop is not None:
                diag[A.CAUSAL_HOP_INDEX] = flagged[0].hop
        with tracer.start_as_current_span("diagnosis", links=links, attributes=diag) as diagnosis_span:
            blame = crs_diagnosis_annotation(result, trajectory, root_span_id=root)
            if blame is not None:
                diagnosis_span.add_event(EVALUATION_EVENT, evaluation_event(blame))
