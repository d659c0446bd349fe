"""``repair_run``: CRS search, minimal repair, validation, explanation, contrastive pair, records.

The orchestration of CausalFlow repair for one failed run:

1. :func:`~causal_middleware.counterfactual.crs.compute_crs` finds the steps whose change flips the run;
2. the successful proposals are ranked by minimality (most minimal first) and the first one that
   passes offline validation (re-run ``m`` of ``n`` times, only change up to the fork point) and,
   when an :class:`~causal_middleware.repair.validate.LLMValidator` is configured, is retained by
   it, becomes the repair;
3. every fork the run made except the repair's is discarded from the agent's checkpointer, when
   the backend can (:class:`~causal_middleware.protocols.DiscardingForkBackend`; see
   :class:`RepairConfig` ``keep_probe_forks``);
4. the result (with an explanation and the contrastive pair) is written to the store as a
   ``repair`` record, and the CRS attribution as a ``diagnosis`` record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.counterfactual.crs import NO_PROPOSALS, ForkCache, compute_crs
from causal_middleware.counterfactual.minimality import describe_change
from causal_middleware.counterfactual.models import CRSResult, Probe, StepScore
from causal_middleware.counterfactual.render import shorten
from causal_middleware.counterfactual.verifiers import as_verifier
from causal_middleware.protocols import DiscardingForkBackend, ForkBackend, Proposer, RepairCost, Verifier
from causal_middleware.repair.chain import (
    ForkKeeper,
    SecondStep,
    search_second_step,
    second_alone,
    validate_chain,
)
from causal_middleware.repair.models import (
    LLMValidation,
    OfflineValidation,
    Repair,
    RepairResult,
    RepairStep,
    TwoStepSearch,
)
from causal_middleware.repair.pairs import build_pair, build_prior_pair
from causal_middleware.repair.validate import LLMValidator, llm_validation_not_run, validate_offline
from causal_middleware.spans.health import health
from causal_middleware.spans.model import NodeStep, Trajectory

DISCARD_SITE = "repair.discard_fork"  # the health counter of forks that could not be discarded


class RepairConfig(BaseModel):
    """Knobs of ``repair_run``. ``max_reexecutions`` caps the CRS search's forks; validation adds
    ``validation_runs`` re-executions per repair candidate it checks (at most ``max_candidates``).
    ``keep_probe_forks``: see :func:`repair_run`."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=3, ge=1, description="proposals per candidate step")
    early_stop: bool = True
    max_reexecutions: int | None = Field(default=None, ge=0)
    candidates: list[str] | None = Field(default=None, description="step ids or node names to probe")
    respect_lineage: bool = Field(
        default=True, description="a fork's steps before its fork point are not probed"
    )
    validation_runs: int = Field(default=3, ge=1, description="n: re-runs of the repair")
    validation_min_flips: int = Field(default=2, ge=1, description="m: re-runs that must succeed")
    max_candidates: int = Field(default=3, ge=1, description="successful proposals to try validating")
    keep_probe_forks: bool = Field(
        default=False,
        description="keep every fork's checkpoints; by default a backend that can discard forks "
        "deletes all but the repair's from the agent's checkpointer",
    )
    max_steps: int = Field(
        default=1,
        ge=1,
        le=2,
        description="steps a repair may change: 1 is CausalFlow's single-step repair; 2 also searches "
        "a second step on the first step's forks when no single-step repair holds",
    )
    chain_bases: int = Field(
        default=12,
        ge=1,
        description="max_steps=2: first-step forks searched at most (chain_max_reexecutions bounds "
        "what their searches cost)",
    )
    chain_max_reexecutions: int = Field(
        default=40,
        ge=0,
        description="max_steps=2: forks the second step's search may spend (validation aside)",
    )


def repair_run(
    run: str | Trajectory,
    *,
    backend: ForkBackend,
    proposer: Proposer,
    verifier: Verifier | Callable[..., bool | None],
    store: Any = None,
    config: RepairConfig | None = None,
    llm_validator: LLMValidator | None = None,
    cache: ForkCache | None = None,
    write: bool = True,
    feedback: str | None = None,
) -> RepairResult:
    """Find, validate and explain the minimal repair of one failed run.

    ``run`` is a run id (read from ``store``) or a trajectory. With ``write`` and a ``store``, the
    result is kept as a ``repair`` record and the attribution as a ``diagnosis`` record.
    ``feedback`` (e.g. the user's correction that got the run judged failed) is handed to the
    proposer as the failure feedback, after the verifier's own.

    When ``backend`` can discard forks (:class:`DiscardingForkBackend`, e.g. the LangGraph
    ``Replayer``) and ``config.keep_probe_forks`` is False, every fork this call made (search
    probes, validation re-runs, rejected candidates) except the repair's own (``Repair.fork_run_id``;
    a two-step repair also keeps its first change's fork, ``Repair.prior[0].fork_run_id``)
    is discarded before the records are written, also when the search raises: its checkpoints
    leave the agent's checkpointer, its spans stay in the store. Counted in
    ``cost.forks_discarded``; a fork that could not be discarded is listed in ``discard_errors``
    and counted in ``health`` (site ``repair.discard_fork``), never failing the repair. Probes
    answered from ``cache`` were made by an earlier call and are left alone; discarded probes are
    dropped from ``cache``.
    """
    cfg = config or RepairConfig()
    if cfg.validation_min_flips > cfg.validation_runs:
        raise ValueError(
            f"validation_min_flips ({cfg.validation_min_flips}) exceeds validation_runs ({cfg.validation_runs})"
        )
    if isinstance(run, Trajectory):
        trajectory = run
    else:
        if store is None:
            raise ValueError("repair_run needs a store to read run ids from (or pass a Trajectory)")
        trajectory = store.get_trajectory(run)
    checker = as_verifier(verifier)
    recorder = _ForkRecorder(backend) if _discards(backend, cfg) else None
    try:
        load = store.get_trajectory if store is not None else None
        result = _search(
            trajectory, recorder or backend, proposer, checker, cfg, llm_validator, cache, feedback, load
        )
    except Exception:
        if recorder is not None:
            _discard(recorder, set(), cache, RepairCost(), [])
        raise
    if recorder is not None:
        repair = result.repair
        keep = {
            f for f in ([repair.fork_run_id, *(p.fork_run_id for p in repair.prior)] if repair else []) if f
        }
        _discard(recorder, keep, cache, result.cost, result.discard_errors)
    if write and store is not None:
        store.put_record("diagnosis", trajectory.run_id, diagnosis_record(result.crs))
        store.put_record("repair", trajectory.run_id, result.model_dump(mode="json"))
    return result


def _search(
    trajectory: Trajectory,
    backend: ForkBackend,
    proposer: Proposer,
    checker: Verifier,
    cfg: RepairConfig,
    llm_validator: LLMValidator | None,
    cache: ForkCache | None,
    feedback: str | None,
    load: Callable[[str], Trajectory] | None = None,
) -> RepairResult:
    """CRS search, then validation of the successful proposals, most minimal first; with
    ``cfg.max_steps=2`` and no single-step repair, the two-step search (:mod:`.chain`; ``load``
    reads a probe fork an earlier call made)."""
    keeper = ForkKeeper(backend, load) if cfg.max_steps > 1 else None
    crs = compute_crs(
        trajectory,
        keeper or backend,
        proposer,
        checker,
        k=cfg.k,
        candidates=cfg.candidates,
        early_stop=cfg.early_stop,
        max_reexecutions=cfg.max_reexecutions,
        cache=cache,
        respect_lineage=cfg.respect_lineage,
        extra_feedback=feedback,
    )
    cost = crs.cost.model_copy()
    result = RepairResult(run_id=trajectory.run_id, status="no_flip", crs=crs, cost=cost)
    if crs.baseline_success is True:
        result.status = "not_failed"
        result.explanation = f"Run {trajectory.run_id} did not fail: {crs.baseline_feedback}"
        return result
    ranked = sorted(crs.successful_probes(), key=lambda p: -(p.proposal.minimality or 0.0))
    rejections: list[str] = []
    for probe in ranked[: cfg.max_candidates]:
        validation = validate_offline(
            trajectory,
            probe.proposal,
            backend,
            checker,
            n=cfg.validation_runs,
            m=cfg.validation_min_flips,
            cost=cost,
        )
        llm = _kept(validation, llm_validator, trajectory, probe, result, rejections)
        if llm is None:
            continue
        result.repair = _repair(trajectory, crs, probe, validation, llm)
        result.status = "repaired"
        break
    else:
        result.status = "unvalidated" if ranked else "no_flip"
    second = None
    if result.repair is None and keeper is not None:
        second = _two_step(
            trajectory, keeper, proposer, checker, cfg, llm_validator, cache, feedback, result, rejections
        )
    result.explanation = explain(trajectory, result, rejections=rejections)
    if result.repair is not None:
        result.repair.explanation = result.explanation
        if second is not None:
            first = result.repair.prior[0]
            crs_first = result.crs.score_of(first.step_id).crs or 0.0
            result.prior_pairs = [build_prior_pair(trajectory, result.repair, first, crs=crs_first)]
            result.pair = build_pair(second.base, result.repair)
        else:
            result.pair = build_pair(trajectory, result.repair)
    return result


def _kept(
    validation: OfflineValidation,
    llm_validator: LLMValidator | None,
    trajectory: Trajectory,
    probe: Probe,
    result: RepairResult,
    rejections: list[str],
    context: str = "",
) -> LLMValidation | None:
    """The LLM validation of a candidate that passed re-validation and is kept; None (the
    candidate added to ``result.rejected``, why to ``rejections``) when it is not. No model call
    for a candidate that failed re-validation."""
    if not validation.passed:
        result.rejected.append(probe)
        rejections.append(f"failed re-validation{context} ({validation.reason})")
        return None
    llm = llm_validator.validate(trajectory, probe) if llm_validator is not None else llm_validation_not_run()
    result.cost.absorb(llm.cost)
    result.llm_judged += int(llm.ran)
    if llm.ran and not llm.retained:
        result.llm_not_retained += 1
        result.rejected.append(probe)
        rejections.append(
            f"was not retained by multi-agent validation{context} (confidence {llm.confidence} "
            f"< {llm.threshold}; {llm.reason})"
        )
        return None
    return llm


def _two_step(
    trajectory: Trajectory,
    keeper: ForkKeeper,
    proposer: Proposer,
    checker: Verifier,
    cfg: RepairConfig,
    llm_validator: LLMValidator | None,
    cache: ForkCache | None,
    feedback: str | None,
    result: RepairResult,
    rejections: list[str],
) -> SecondStep | None:
    """The first two-step flip that passes validation becomes ``result.repair``; returns it.
    Flips that fail validation are added to ``result.rejected`` (why: ``rejections``), and make
    the status ``unvalidated``."""
    cost = result.cost
    tried = 0
    result.two_step = TwoStepSearch()
    for found in search_second_step(
        result.crs,
        keeper.get,
        keeper.backend,
        proposer,
        checker,
        k=cfg.k,
        max_bases=cfg.chain_bases,
        max_reexecutions=cfg.chain_max_reexecutions,
        cost=cost,
        stats=result.two_step,
        cache=cache,
        feedback=feedback,
        reference=trajectory.reference,
    ):
        tried += 1
        alone = second_alone(
            trajectory, found.probe.proposal, keeper.backend, checker, cost, found_on=found.base.run_id
        )
        result.status = "unvalidated"  # a two-step flip was found, whether or not it holds
        if alone is not None and alone.success is True:
            result.two_step.alone_flips += 1
            if _single_from_second(
                trajectory, alone, keeper.backend, checker, cfg, llm_validator, result, rejections
            ):
                return None
            alone = None  # its flip did not hold, so it does not show the first change is unneeded
        validation = validate_chain(
            trajectory,
            found.first.proposal,
            found.probe.proposal,
            keeper.backend,
            checker,
            n=cfg.validation_runs,
            m=cfg.validation_min_flips,
            cost=cost,
            alone=alone,
        )
        llm = _kept(
            validation, llm_validator, found.base, found.probe, result, rejections, " with the first change"
        )
        if llm is None:
            if tried >= cfg.max_candidates:
                break
            continue
        repair = _repair(found.base, found.crs, found.probe, validation, llm)
        first = found.first.proposal
        step = next(s for s in trajectory.steps if s.step_id == first.step_id)
        prior = RepairStep(
            run_id=trajectory.run_id,
            step_id=first.step_id,
            node=first.node,
            hop=first.hop,
            langgraph_step=first.langgraph_step,
            original=step.output if isinstance(step, NodeStep) else None,
            repaired=first.values,
            source=first.source,
            description=first.description,
            target=first.target,
            evidence=list(first.evidence),
            minimality=first.minimality or 0.0,
            fork_run_id=found.base.run_id,
            answer_after=found.first.answer,
        )
        result.repair = repair.model_copy(
            update={
                "run_id": trajectory.run_id,
                "prior": [prior],
                "minimality": round(prior.minimality * repair.minimality, 6),
                "step_minimality": repair.minimality,
                "answer_before": trajectory.answer,
            }
        )
        result.status = "repaired"
        return found
    return None


def _single_from_second(
    trajectory: Trajectory,
    alone: Probe,
    backend: ForkBackend,
    checker: Verifier,
    cfg: RepairConfig,
    llm_validator: LLMValidator | None,
    result: RepairResult,
    rejections: list[str],
) -> bool:
    """A second change that flips the run alone is a single-step repair the first search's
    proposals missed: validated as one (``n`` re-runs) and, when kept, ``result.repair``, with its
    step scored as the flip it is (the probe joins ``result.crs``). Whether it was kept."""
    validation = validate_offline(
        trajectory,
        alone.proposal,
        backend,
        checker,
        n=cfg.validation_runs,
        m=cfg.validation_min_flips,
        cost=result.cost,
    )
    llm = _kept(validation, llm_validator, trajectory, alone, result, rejections, " as a single step")
    if llm is None:
        return False
    _score_flip(result.crs, alone)
    result.repair = _repair(trajectory, result.crs, alone, validation, llm)
    result.status = "repaired"
    return True


def _score_flip(crs: CRSResult, probe: Probe) -> None:
    """Add a flipping probe found after the search to ``crs``: its step now has CRS 1 (a step the
    search did not score, e.g. outside ``RepairConfig.candidates``, gets its score, in step order)."""
    crs.probes.append(probe)
    proposal = probe.proposal
    score = next((s for s in crs.scores if s.step_id == proposal.step_id), None)
    if score is None:
        score = StepScore(
            step_id=proposal.step_id,
            node=proposal.node,
            hop=proposal.hop,
            langgraph_step=proposal.langgraph_step,
        )
        later = [
            i
            for i, s in enumerate(crs.scores)
            if s.langgraph_step is not None
            and proposal.langgraph_step is not None
            and s.langgraph_step > proposal.langgraph_step
        ]
        crs.scores.insert(later[0] if later else len(crs.scores), score)
    score.n_tested += 1
    score.n_flips += 1
    score.n_proposals = max(score.n_proposals, score.n_tested)
    score.crs = 1.0
    score.flip_rate = score.n_flips / score.n_tested
    score.skipped = None


class _ForkRecorder:
    """A fork backend that passes every fork on to ``backend`` and notes the run id of each fork
    made, so ``repair_run`` knows exactly which forks it made (reused cache entries make none)."""

    def __init__(self, backend: ForkBackend) -> None:
        self.backend = backend
        self.made: list[str] = []
        self._lock = threading.Lock()

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        fork = self.backend.fork(run_id, **kwargs)
        with self._lock:
            self.made.append(fork.run_id)
        return fork


def _discards(backend: ForkBackend, cfg: RepairConfig) -> bool:
    return (
        not cfg.keep_probe_forks
        and isinstance(backend, ForkBackend)
        and isinstance(backend, DiscardingForkBackend)
    )


def _discard(
    recorder: _ForkRecorder,
    keep: set[str],
    cache: ForkCache | None,
    cost: RepairCost,
    errors: list[str],
) -> None:
    """Discard the forks ``recorder`` saw except ``keep`` (fail-open), and drop them from ``cache``.
    A fork the backend could not delete (False: its checkpointer cannot) stays in the cache."""
    backend: Any = recorder.backend
    for fork_id in dict.fromkeys(recorder.made):
        if fork_id in keep:
            continue
        try:
            forget = bool(backend.discard_fork(fork_id))
        except Exception as exc:  # cleanup must never fail the repair it follows
            health.record_error(DISCARD_SITE, exc)
            errors.append(f"{fork_id}: {type(exc).__name__}: {exc}")
            forget = True  # its state is unknown: a re-run is cheaper than a dangling cache entry
        else:
            cost.forks_discarded += int(forget)
        if forget and cache is not None:
            cache.forget_fork(fork_id)


def _repair(
    trajectory: Trajectory, crs: CRSResult, probe: Probe, validation: Any, llm: LLMValidation
) -> Repair:
    proposal = probe.proposal
    step = next(s for s in trajectory.steps if s.step_id == proposal.step_id)
    original = step.output if isinstance(step, NodeStep) else None
    return Repair(
        run_id=trajectory.run_id,
        step_id=proposal.step_id,
        node=proposal.node,
        hop=proposal.hop,
        langgraph_step=proposal.langgraph_step,
        original=original,
        repaired=proposal.values,
        source=proposal.source,
        description=proposal.description,
        target=proposal.target,
        evidence=list(proposal.evidence),
        minimality=proposal.minimality or 0.0,
        crs=crs.score_of(proposal.step_id).crs or 0.0,
        fork_run_id=probe.fork_run_id,
        answer_before=trajectory.answer,
        answer_after=probe.answer,
        validation=validation,
        llm_validation=llm,
    )


def diagnosis_record(crs: CRSResult) -> dict[str, Any]:
    """The ``diagnosis`` record of a CRS search: the blamed step (earliest flagged) and all scores."""
    flagged = crs.flagged
    top = flagged[0] if flagged else None
    return {
        "method": "crs",
        "run_id": crs.run_id,
        "step_id": top.step_id if top else None,
        "node": top.node if top else None,
        "hop": top.hop if top else None,
        "langgraph_step": top.langgraph_step if top else None,
        "scores": [s.model_dump(mode="json") for s in crs.scores],
        "cost": crs.cost.model_dump(mode="json"),
        "stopped_early": crs.stopped_early,
        "capped": crs.capped,
    }


_EMPTY = f"{NO_PROPOSALS}: "


def explain(trajectory: Trajectory, result: RepairResult, *, rejections: list[str] | None = None) -> str:
    """A few sentences on what failed, which step is to blame, what the repair changes and why it
    is trusted (or why there is no repair). ``rejections``: why each of ``result.rejected`` was
    turned down, in the same order."""
    crs = result.crs
    cost = result.cost
    spent = (
        f"Search cost: {crs.cost.reexecutions} re-executions (exhaustive: {cost.naive_reexecutions}), "
        f"{cost.reexecutions} in all with validation, {cost.llm_calls} LLM calls, {cost.total_tokens} tokens."
    )
    if result.two_step is not None:
        spent += (
            f" The two-step search tried {result.two_step.bases} first-step fork(s) with "
            f"{result.two_step.reexecutions} re-executions."
        )
    head = f"Run {trajectory.run_id} failed: {crs.baseline_feedback or 'judged a failure'}."
    repair = result.repair
    if repair is None:
        tested = sum(s.n_tested for s in crs.scores)
        if result.status == "unvalidated":
            first = result.rejected[0].proposal if result.rejected else None
            why = (
                f"{len(result.rejected)} proposal(s) flipped the outcome once but were not kept; the first "
                f"({first.node} at hop {first.hop}) {rejections[0] if rejections else 'failed re-validation'}."
                if first is not None
                else "No flipping proposal could be validated."
            )
        else:
            why = f"None of the {tested} proposals tested on {len(crs.scores)} candidate steps flipped the outcome."
            skipped = [s.skipped or "" for s in crs.scores]
            notes = [reason.removeprefix(_EMPTY) for reason in skipped if reason.startswith(_EMPTY)]
            if notes:
                why += f" {len(notes)} step(s) got no usable proposal, the first because: {shorten(notes[0], 240)}."
        if crs.capped:
            why += " The re-execution cap stopped the search."
        return f"{head} {why} {spent}"
    where = f"hop {repair.hop}" if repair.hop is not None else "outside any hop"
    validation = repair.validation
    llm = repair.llm_validation
    llm_text = (
        f" Multi-agent validation: confidence {llm.confidence} ({llm.reason})."
        if llm.ran
        else f" Multi-agent validation {llm.reason}."
    )
    if repair.prior:
        earlier = repair.prior[0]
        earlier_where = f"hop {earlier.hop}" if earlier.hop is not None else "outside any hop"
        return (
            f"{head} No single step's change held. Two steps are responsible: {earlier.node!r} ({earlier_where}, "
            f"langgraph step {earlier.langgraph_step}): {earlier.description or earlier.source} "
            f"[{describe_change(earlier.original, earlier.repaired)}], after which the agent answered "
            f"{earlier.answer_after!r}; then {repair.node!r} ({where}, langgraph step {repair.langgraph_step}): "
            f"{repair.description or repair.source} [{describe_change(repair.original, repair.repaired)}]. "
            f"Together they make the agent answer {repair.answer_after!r} instead of {repair.answer_before!r}. "
            f"The two changes flipped the outcome in {validation.flips} of {validation.n_runs} re-runs, each "
            f"the only change before its fork point; minimality {repair.minimality:.3f}.{llm_text} {spent}"
        )
    return (
        f"{head} Step {repair.node!r} ({where}, langgraph step {repair.langgraph_step}) is responsible "
        f"(CRS {repair.crs:g}): {repair.description or repair.source} "
        f"[{describe_change(repair.original, repair.repaired)}] makes the agent answer "
        f"{repair.answer_after!r} instead of {repair.answer_before!r}. The repair flipped the outcome in "
        f"{validation.flips} of {validation.n_runs} re-runs and is the only change before the fork point; "
        f"minimality {repair.minimality:.3f}.{llm_text} {spent}"
    )


class RepairService:
    """``repair_run`` with its collaborators bound: what the CLI and the on-failure queue call."""

    def __init__(
        self,
        *,
        backend: ForkBackend,
        proposer: Proposer,
        verifier: Verifier | Callable[..., bool | None],
        store: Any = None,
        config: RepairConfig | None = None,
        llm_validator: LLMValidator | None = None,
        cache: ForkCache | None = None,
    ) -> None:
        self.backend = backend
        self.proposer = proposer
        self.verifier = as_verifier(verifier)
        self.store = store
        self.config = config or RepairConfig()
        self.llm_validator = llm_validator
        self.cache = cache if cache is not None else ForkCache()

    def repair(
        self, run: str | Trajectory, *, write: bool = True, feedback: str | None = None
    ) -> RepairResult:
        """:func:`repair_run` with the bound collaborators (``feedback``: see there)."""
        return repair_run(
            run,
            backend=self.backend,
            proposer=self.proposer,
            verifier=self.verifier,
            store=self.store,
            config=self.config,
            llm_validator=self.llm_validator,
            cache=self.cache,
            write=write,
            feedback=feedback,
        )


__all__ = ["RepairConfig", "RepairCost", "RepairService", "diagnosis_record", "explain", "repair_run"]
