"""Repair benchmark: CausalFlow repair of a world's failed runs, natural and fault-injected.

On a :class:`~causal_middleware.faults.sweep.SweepEnvironment` (the live agent, its fork backend
and adapter, the store; the core never builds a LangGraph agent itself, ``causal-mw bench repair``
wires the reference agent):

1. **natural failures**: every question of ``questions`` is run once (the sweep's base runs);
   the runs whose answer is wrong are repaired;
2. **injected failures**: the fault sweep injects ``families`` at ``depths`` into the correct base
   runs of the first ``inject_questions`` questions; the faulted runs that end wrong are
   repaired (at most ``max_injected``, taken round-robin over families so each is represented).

Each failed run goes through :func:`~causal_middleware.repair.service.repair_run` with the
deterministic :class:`~causal_middleware.counterfactual.proposers.OfflineProposer` and a reference-answer
verifier (the question's gold answer and aliases).

With a remote executor (Ray) the sweep runs there, and so do the repairs: one task per question
(:class:`RepairWorker`) re-makes that question's failed runs on its worker's copy of the agent
(the agent is deterministic, so they are the driver's runs under new run ids) and repairs them
there, where their checkpoints are. Rows come back in the local order; the figures are the same.

Metrics (``results.json``; each at the top level for all failures, and under ``natural`` and
``injected``):

* ``n_failed``: failed runs repaired (attempted);
* ``repair_rate``: validated minimal repairs / failed runs;
* ``post_repair_accuracy``: accuracy of the population once each validated repair replaces its
  failed run: (runs that succeeded + repaired runs) / all runs (base runs for ``natural``;
  for ``injected`` the recovered faulted units plus the failed ones attempted, which is every
  faulted unit unless ``max_injected`` capped them); ``accuracy_before`` is the same without repairs;
* ``minimality_mean``: mean minimality of the validated repairs; ``minimality_by_node`` the same
  per repaired node; ``zero_minimality_repairs``: validated repairs of minimality 0, which leave no token of
  the step's original output in its place (e.g. evidence for an empty retrieval, a search instead
  of a premature answer; also any edit that shifts every token of the output);
* ``crs_precision``: flagged steps (CRS 1) whose repair passed validation / flagged steps;
* ``reexec_per_repaired``: suffix re-executions spent on all failed runs (search + validation) /
  repaired runs; ``naive_reexec_per_repaired``: the exhaustive baseline (candidate steps x K,
  summed over the failed runs) / repaired runs; ``reexec_ratio`` = the two divided;
* ``llm_calls_per_repaired``, ``tokens_per_repaired`` (zero offline);
* ``repaired_by_steps``: validated repairs by the steps they change (``"2"``: two-step repairs,
  searched only with ``RepairConfig.max_steps=2`` when no single-step repair held);
  ``two_step_reexecutions``: the forks the two-step search spent (also in ``reexec_per_repaired``;
  the exhaustive baseline counts single steps only);
* ``validation``: how the flips found held when re-validated (``m`` of ``n`` re-runs, the only
  change before the fork point, the LLM check when on): ``revalidated`` flips re-validated (kept
  repairs + ``rejected``), ``held_rate`` = kept / revalidated, ``rerun_flip_rate`` = re-runs that
  flipped / re-runs, over the kept repairs. At temperature 0 every re-run repeats the search's
  fork; with a sampling model (``--temperature``) each is a fresh draw. With ``holdout_runs``
  N > 0, every kept repair is re-run N more times after the benchmark has kept it (fresh draws
  the validation never saw; a two-step repair re-makes both forks each time) and ``validation``
  adds ``holdout``: ``repairs``, ``runs``, ``flips``, ``flip_rate`` (flips / runs) and ``held``
  (repairs whose held-out re-runs flipped at least as often as the validation requires,
  ``m / n``); rows carry ``holdout_runs`` and ``holdout_flips``. With ``control_runs`` N > 0, the
  run each kept repair changed is also re-run N times from the same step with that step's recorded
  output put back (the repair's own suffix, without the repair; a two-step repair's first step):
  how often the failure goes away by sampling alone. ``validation`` then adds ``control``:
  ``repairs``, ``runs``, ``flips``, ``flip_rate`` and ``beaten`` (repairs whose held-out flip rate,
  or without held-out re-runs their validation's, is above their control's); rows carry
  ``control_runs`` and ``control_flips``. Neither kind of re-run is in ``reexec_per_repaired``:
  they measure the validation, they are not part of the repair.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from causal_middleware.counterfactual.crs import ForkCache
from causal_middleware.counterfactual.proposers import OfflineProposer
from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.faults.distributed import EnvSpec, worker_environment
from causal_middleware.faults.executor import Executor
from causal_middleware.faults.model import FaultFamily
from causal_middleware.faults.sweep import SweepEnvironment, _Sweep, iter_units, run_sweep
from causal_middleware.protocols import Proposal, Proposer
from causal_middleware.repair.chain import validate_chain
from causal_middleware.repair.models import Repair, RepairResult, RepairStep
from causal_middleware.repair.service import RepairConfig, repair_run
from causal_middleware.repair.validate import LLMValidator, validate_offline
from causal_middleware.retrieval.base import Index
from causal_middleware.spans.model import Outcome
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct

__all__ = ["DEFAULT_FAMILIES", "TARGETS", "FailedRun", "format_repair_table", "run_repair_bench", "summarize"]

DEFAULT_FAMILIES: tuple[FaultFamily, ...] = (
    "empty_retrieval",
    "irrelevant_documents",
    "query_drift",
    "false_premise",
    "stale_evidence",
    "content_corruption",
    "early_termination",
)
TARGETS = {"repair_rate": 0.60, "minimality_mean": 0.85}
NATURAL_LABEL = "repair_bench.natural"
METRIC_KEYS = (
    "n_failed",
    "repair_rate",
    "post_repair_accuracy",
    "minimality_mean",
    "crs_precision",
    "reexec_per_repaired",
    "naive_reexec_per_repaired",
)


class FailedRun(BaseModel):
    """One failed run of the benchmark and what repairing it gave."""

    run_id: str
    kind: str  # natural | injected
    question_id: str
    n_hops: int | None = None  # the question's hops
    family: str | None = None
    depth: int | None = None
    status: str
    minimality: float | None = None
    repaired_node: str | None = None
    repaired_hop: int | None = None
    source: str | None = None
    flagged: int = 0
    flagged_validated: int = 0
    reexecutions: int = 0
    naive_reexecutions: int = 0
    llm_calls: int = 0
    tokens: int = 0
    llm_judged: int = 0
    llm_not_retained: int = 0
    llm_confidence: float | None = None
    steps: int | None = None  # steps the repair changed (2: a two-step repair)
    two_step_reexecutions: int = 0  # forks the two-step search spent (validation aside)
    rejected: int = 0  # flips that failed re-validation
    validation_flips: int | None = None  # the kept repair's re-runs that flipped
    validation_runs: int | None = None  # ... of its re-runs
    holdout_runs: int | None = None  # re-runs of the kept repair after the benchmark kept it
    holdout_flips: int | None = None  # ... that flipped
    holdout_held: bool | None = None  # flips / holdout_runs >= the validation's m / n
    control_runs: int | None = None  # re-runs of the repaired run's suffix without the repair
    control_flips: int | None = None  # ... that answered right anyway
    elapsed_s: float = 0.0


def run_repair_bench(
    env: SweepEnvironment,
    *,
    index: Index | None = None,
    proposer: Proposer | None = None,
    questions: Sequence[Question] | None = None,
    inject_questions: int = 20,
    families: Sequence[FaultFamily] = DEFAULT_FAMILIES,
    depths: Sequence[int] = (1, 2),
    max_injected: int | None = 40,
    config: RepairConfig | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    executor: Executor | None = None,
    env_spec: EnvSpec | None = None,
    llm_validator: LLMValidator | None = None,
    holdout_runs: int = 0,
    control_runs: int = 0,
) -> dict[str, Any]:
    """Repair the natural and injected failures of ``env``; returns the JSON-ready results.

    ``index`` feeds the offline proposer's re-retrieval (default: ``env.scoped_index``);
    ``proposer`` replaces the offline proposer altogether. See the module docstring for the keys.
    ``executor`` (default: this thread) runs the sweep and the repairs; a remote one needs
    ``env_spec`` (``env``'s agent, rebuilt in each worker) and the default offline proposer.
    ``llm_validator`` adds CausalFlow's proposer / critic / meta-critic check to every repair that
    passed re-validation (one not retained is dropped and the next candidate tried).
    ``holdout_runs``: fresh re-runs of each kept repair, after it is kept; ``control_runs``: re-runs
    of the same suffix without the repair (module docstring).
    """
    if holdout_runs < 0:
        raise ValueError(f"holdout_runs must be >= 0, got {holdout_runs}")
    if control_runs < 0:
        raise ValueError(f"control_runs must be >= 0, got {control_runs}")
    remote = executor is not None and executor.remote
    if remote and (
        env_spec is None or proposer is not None or index is not None or llm_validator is not None
    ):
        raise ValueError(
            "a remote executor needs env_spec and repairs with the default offline proposer, no LLM validator"
        )
    start = time.perf_counter()
    chosen = list(questions) if questions is not None else list(env.dataset.questions)
    if not chosen:
        raise ValueError("no questions to benchmark")
    if inject_questions < 0:
        raise ValueError(f"inject_questions must be >= 0, got {inject_questions}")
    cfg = config or RepairConfig()
    repairer = proposer or OfflineProposer(env.adapter, index if index is not None else env.scoped_index)
    by_id = {q.id: q for q in chosen}

    say = progress or (lambda _msg: None)
    say(f"running the agent on {len(chosen)} questions")
    natural_runs, natural_ok = _natural(env, chosen)
    inject_pool = chosen[:inject_questions]
    sweep = None
    if inject_pool and families:
        say(f"injecting {len(families)} families at depths {list(depths)} into {len(inject_pool)} questions")
        sweep = run_sweep(
            env,
            inject_pool,
            depths=depths,
            families=families,
            seed=seed,
            workers=1,
            executor=executor if remote else None,
            env_spec=env_spec,
        )
    injected_units = [
        u
        for u in iter_units(env.store, families=families, depths=depths, persistent=False)
        if u.question.id in {q.id for q in inject_pool}
    ]
    injected_failed = _round_robin([u for u in injected_units if not u.recovered], max_injected)

    cache = ForkCache()
    rows: list[FailedRun] = []
    todo: list[tuple[str, str, Question, str | None, int | None]] = [
        (run_id, "natural", by_id[qid], None, None) for run_id, qid in natural_runs
    ]
    todo += [
        (u.faulted.run_id, "injected", u.question, u.label.family, u.label.requested_hop)
        for u in injected_failed
    ]
    if remote:
        assert executor is not None and env_spec is not None
        say(f"repairing {len(todo)} failed runs on {executor!r}")
        rows = _repair_remote(
            executor,
            RepairWorker(
                env_spec, seed=seed, config=cfg, holdout_runs=holdout_runs, control_runs=control_runs
            ),
            todo,
        )
    for i, (run_id, kind, question, family, depth) in enumerate(todo if not remote else [], start=1):
        say(f"repair {i}/{len(todo)} ({kind}{' ' + family if family else ''})")
        began = time.perf_counter()
        result = repair_run(
            run_id,
            backend=env.backend,
            proposer=repairer,
            verifier=ReferenceVerifier(question.answer, question.aliases),
            store=env.store,
            config=cfg,
            llm_validator=llm_validator,
            cache=cache,
        )
        row = _row(result, kind, question, family, depth, time.perf_counter() - began)
        rows.append(_with_holdout(row, env, result, question, cfg, holdout_runs, control_runs))

    natural = [r for r in rows if r.kind == "natural"]
    injected = [r for r in rows if r.kind == "injected"]
    n_injected_done = len(injected_units)
    injected_ok = sum(1 for u in injected_units if u.recovered)
    # capped sampling: scale the population to the failures actually attempted
    injected_population = injected_ok + len(injected) if max_injected is not None else n_injected_done
    results: dict[str, Any] = summarize(
        rows, population=len(chosen) + injected_population, succeeded=natural_ok + injected_ok
    )
    results["natural"] = summarize(natural, population=len(chosen), succeeded=natural_ok)
    results["injected"] = summarize(injected, population=injected_population, succeeded=injected_ok)
    results["injected"]["by_family"] = {
        family: summarize([r for r in injected if r.family == family])
        for family in sorted({r.family for r in injected if r.family})
    }
    results["injected"]["units_done"] = n_injected_done
    results["injected"]["units_failed"] = sum(1 for u in injected_units if not u.recovered)
    results["targets"] = {
        "repair_rate": {
            "target": TARGETS["repair_rate"],
            "met": (results["repair_rate"] or 0) >= TARGETS["repair_rate"],
        },
        "minimality_mean": {
            "target": TARGETS["minimality_mean"],
            "met": (results["minimality_mean"] or 0) >= TARGETS["minimality_mean"],
        },
        "reexec_ratio": {"target": "well under 1", "value": results["reexec_ratio"]},
    }
    results["config"] = {
        "questions": len(chosen),
        "inject_questions": len(inject_pool),
        "families": list(families),
        "depths": list(depths),
        "max_injected": max_injected,
        "seed": seed,
        "k": cfg.k,
        "early_stop": cfg.early_stop,
        "max_reexecutions": cfg.max_reexecutions,
        "max_steps": cfg.max_steps,
        "validation": f"{cfg.validation_min_flips} of {cfg.validation_runs} re-runs",
        "holdout_runs": holdout_runs,
        "control_runs": control_runs,
        "proposer": type(repairer).__name__,
        "llm_validator": type(llm_validator).__name__ if llm_validator is not None else None,
        "retriever": env.retriever,
        "sweep_base_runs": sweep.base_runs if sweep is not None else 0,
    }
    results["runs"] = [r.model_dump(mode="json") for r in rows]
    results["elapsed_s"] = round(time.perf_counter() - start, 2)
    return results


def _natural_run(env: SweepEnvironment, question: Question) -> tuple[str, bool]:
    """Run the question once, annotated; (run id, whether it answered correctly)."""
    run_id = env.run_base(question)
    correct = is_correct(env.store.get_trajectory(run_id).answer, question)
    env.store.annotate(
        run_id,
        outcome=Outcome.SUCCESS if correct else Outcome.FAILURE,
        reference=question.answer,
        labels={NATURAL_LABEL: True, "question_id": question.id},
    )
    return run_id, correct


def _natural(env: SweepEnvironment, questions: Sequence[Question]) -> tuple[list[tuple[str, str]], int]:
    """Run every question once; (failed run ids with their question ids, number of correct runs)."""
    failed: list[tuple[str, str]] = []
    ok = 0
    for question in questions:
        run_id, correct = _natural_run(env, question)
        if correct:
            ok += 1
        else:
            failed.append((run_id, question.id))
    return failed, ok


_RowKey = tuple[str, str, str | None, int | None]  # kind, question id, family, depth


@dataclass(frozen=True)
class RepairJob:
    """One question's failed runs to repair in a worker: its natural run, and injected units."""

    question: Question
    natural: bool
    injected: tuple[tuple[FaultFamily, int], ...]


@dataclass(frozen=True)
class RepairWorker:
    """Re-makes a :class:`RepairJob`'s failed runs on this process's agent and repairs them."""

    spec: EnvSpec
    seed: int
    config: RepairConfig
    holdout_runs: int = 0
    control_runs: int = 0

    def __call__(self, job: RepairJob) -> list[tuple[_RowKey, FailedRun]]:
        env = worker_environment(self.spec)
        question = job.question
        failed: list[tuple[_RowKey, str]] = []
        if job.natural:
            run_id, correct = _natural_run(env, question)
            if not correct:
                failed.append((("natural", question.id, None, None), run_id))
        if job.injected:
            sweep = _Sweep(env, seed=self.seed, persistent=False, on_unit=lambda record: None)
            for record in sweep.run_question(question, list(job.injected)):
                if record.status == "done" and record.outcome != "recovered" and record.fork_run_id:
                    unit_key: _RowKey = ("injected", question.id, record.family, record.requested_hop)
                    failed.append((unit_key, record.fork_run_id))
        repairer = OfflineProposer(env.adapter, env.scoped_index)
        cache = ForkCache()
        out: list[tuple[_RowKey, FailedRun]] = []
        for key, run_id in failed:
            began = time.perf_counter()
            result = repair_run(
                run_id,
                backend=env.backend,
                proposer=repairer,
                verifier=ReferenceVerifier(question.answer, question.aliases),
                store=env.store,
                config=self.config,
                cache=cache,
            )
            row = _row(result, key[0], question, key[2], key[3], time.perf_counter() - began)
            out.append(
                (
                    key,
                    _with_holdout(
                        row, env, result, question, self.config, self.holdout_runs, self.control_runs
                    ),
                )
            )
        return out


def _repair_remote(
    executor: Executor,
    worker: RepairWorker,
    todo: Sequence[tuple[str, str, Question, str | None, int | None]],
) -> list[FailedRun]:
    """Repair ``todo`` as one task per question; rows in ``todo``'s order."""
    jobs: dict[str, RepairJob] = {}
    for _run_id, kind, question, family, depth in todo:
        job = jobs.get(question.id) or RepairJob(question=question, natural=False, injected=())
        if kind == "natural":
            job = RepairJob(question=question, natural=True, injected=job.injected)
        else:
            assert family is not None and depth is not None
            unit = cast(tuple[FaultFamily, int], (family, depth))
            job = RepairJob(question=question, natural=job.natural, injected=(*job.injected, unit))
        jobs[question.id] = job
    rows: dict[_RowKey, FailedRun] = {}
    for batch in executor.map(worker, list(jobs.values())):
        rows.update(batch)
    keys: list[_RowKey] = [(kind, question.id, family, depth) for _run, kind, question, family, depth in todo]
    missing = [key for key in keys if key not in rows]
    if missing:
        raise RuntimeError(
            f"the workers re-made these failed runs as successes (a nondeterministic agent?): {missing}"
        )
    return [rows[key] for key in keys]


def _round_robin(units: list[Any], limit: int | None) -> list[Any]:
    if limit is None or len(units) <= limit:
        return units
    groups: dict[str, list[Any]] = defaultdict(list)
    for unit in units:
        groups[unit.label.family].append(unit)
    picked: list[Any] = []
    while len(picked) < limit:
        for family in sorted(groups):
            if groups[family] and len(picked) < limit:
                picked.append(groups[family].pop(0))
    return picked


def _row(
    result: RepairResult, kind: str, question: Question, family: str | None, depth: int | None, elapsed: float
) -> FailedRun:
    repair = result.repair
    flagged = result.crs.flagged
    validated_steps = {repair.step_id} if repair is not None else set()
    return FailedRun(
        run_id=result.run_id,
        kind=kind,
        question_id=question.id,
        n_hops=question.n_hops,
        family=family,
        depth=depth,
        status=result.status,
        minimality=repair.minimality if repair is not None else None,
        repaired_node=repair.node if repair is not None else None,
        repaired_hop=repair.hop if repair is not None else None,
        source=repair.source if repair is not None else None,
        flagged=len(flagged),
        flagged_validated=sum(1 for s in flagged if s.step_id in validated_steps),
        reexecutions=result.cost.reexecutions,
        naive_reexecutions=result.cost.naive_reexecutions,
        llm_calls=result.cost.llm_calls,
        tokens=result.cost.total_tokens,
        llm_judged=result.llm_judged,
        llm_not_retained=result.llm_not_retained,
        llm_confidence=(
            repair.llm_validation.confidence if repair is not None and repair.llm_validation.ran else None
        ),
        steps=len(repair.prior) + 1 if repair is not None else None,
        two_step_reexecutions=result.two_step.reexecutions if result.two_step is not None else 0,
        rejected=len(result.rejected),
        validation_flips=repair.validation.flips if repair is not None else None,
        validation_runs=repair.validation.n_runs if repair is not None else None,
        elapsed_s=round(elapsed, 3),
    )


def _with_holdout(
    row: FailedRun,
    env: SweepEnvironment,
    result: RepairResult,
    question: Question,
    cfg: RepairConfig,
    n: int,
    controls: int = 0,
) -> FailedRun:
    """``row`` with its kept repair re-run ``n`` more times and its suffix re-run ``controls`` times
    without the repair (unchanged when both are 0 or nothing was kept): whether the validation's
    verdict holds on draws it never saw, and how often sampling alone would have passed it."""
    repair = result.repair
    if repair is None or (n <= 0 and controls <= 0):
        return row
    parent = env.store.get_trajectory(result.run_id)
    verifier = ReferenceVerifier(question.answer, question.aliases)
    update: dict[str, Any] = {}
    if n > 0:
        own = _proposal(repair)
        if repair.prior:
            check = validate_chain(
                parent, _proposal(repair.prior[0]), own, env.backend, verifier, n=n, m=1, alone=None
            )
        else:
            check = validate_offline(parent, own, env.backend, verifier, n=n, m=1)
        held = check.flips * cfg.validation_runs >= cfg.validation_min_flips * n
        update.update(holdout_runs=n, holdout_flips=check.flips, holdout_held=held)
    first = repair.prior[0] if repair.prior else repair
    if controls > 0 and isinstance(first.original, dict):
        unchanged = _proposal(first).model_copy(update={"values": dict(first.original)})
        control = validate_offline(parent, unchanged, env.backend, verifier, n=controls, m=1)
        update.update(control_runs=controls, control_flips=control.flips)
    return row.model_copy(update=update)


def _proposal(step: Repair | RepairStep) -> Proposal:
    """A kept repair's step as the proposal that made it (its values, at its node and step)."""
    return Proposal(
        step_id=step.step_id,
        node=step.node,
        hop=step.hop,
        langgraph_step=step.langgraph_step,
        values=step.repaired,
        source=step.source,
        description=step.description,
    )


def summarize(
    rows: Sequence[FailedRun], *, population: int | None = None, succeeded: int | None = None
) -> dict[str, Any]:
    """The metrics of the module docstring over ``rows``. ``population``/``succeeded`` (runs in
    all, runs that were correct) give the accuracies; without them those keys are None."""
    n = len(rows)
    repaired = [r for r in rows if r.status == "repaired"]
    n_rep = len(repaired)
    reexec = sum(r.reexecutions for r in rows)
    naive = sum(r.naive_reexecutions for r in rows)
    flagged = sum(r.flagged for r in rows)
    judged, not_retained = sum(r.llm_judged for r in rows), sum(r.llm_not_retained for r in rows)
    out: dict[str, Any] = {
        "n_failed": n,
        "n_repaired": n_rep,
        "repair_rate": _round(n_rep / n) if n else None,
        "accuracy_before": _round(succeeded / population) if population and succeeded is not None else None,
        "post_repair_accuracy": _round((succeeded + n_rep) / population)
        if population and succeeded is not None
        else None,
        "minimality_mean": _round(statistics.fmean(r.minimality or 0.0 for r in repaired))
        if repaired
        else None,
        "crs_precision": _round(sum(r.flagged_validated for r in rows) / flagged) if flagged else None,
        "reexec_per_repaired": _round(reexec / n_rep) if n_rep else None,
        "naive_reexec_per_repaired": _round(naive / n_rep) if n_rep else None,
        "reexec_ratio": _round(reexec / naive) if naive else None,
        "reexec_per_failed": _round(reexec / n) if n else None,
        "llm_calls_per_repaired": _round(sum(r.llm_calls for r in rows) / n_rep) if n_rep else None,
        "tokens_per_repaired": _round(sum(r.tokens for r in rows) / n_rep) if n_rep else None,
        "minimality_by_node": {
            node: _round(statistics.fmean(r.minimality or 0.0 for r in repaired if r.repaired_node == node))
            for node in sorted({r.repaired_node for r in repaired if r.repaired_node})
        },
        "zero_minimality_repairs": sum(1 for r in repaired if not r.minimality),
        "llm_validation": {
            "judged": judged,
            "not_retained": not_retained,
            "retained_rate": _round(1 - not_retained / judged) if judged else None,
        },
        "statuses": dict(Counter(r.status for r in rows)),
        "repaired_by_source": dict(Counter(r.source for r in repaired if r.source)),
        "repaired_by_steps": {str(k): v for k, v in sorted(Counter(r.steps or 1 for r in repaired).items())},
        "two_step_reexecutions": sum(r.two_step_reexecutions for r in rows),
        "validation": _validation(repaired, sum(r.rejected for r in rows)),
    }
    return out


def _validation(repaired: Sequence[FailedRun], rejected: int) -> dict[str, Any]:
    revalidated = len(repaired) + rejected
    runs = sum(r.validation_runs or 0 for r in repaired)
    return {
        "revalidated": revalidated,
        "rejected": rejected,
        "held_rate": _round(len(repaired) / revalidated) if revalidated else None,
        "rerun_flip_rate": _round(sum(r.validation_flips or 0 for r in repaired) / runs) if runs else None,
        "holdout": _holdout_summary(repaired),
        "control": _control_summary(repaired),
    }


def _holdout_summary(repaired: Sequence[FailedRun]) -> dict[str, Any] | None:
    """How the kept repairs did on their held-out re-runs; None when none were made."""
    rows = [r for r in repaired if r.holdout_runs]
    if not rows:
        return None
    summary = _reruns(rows, [r.holdout_runs or 0 for r in rows], [r.holdout_flips or 0 for r in rows])
    return {**summary, "held": sum(1 for r in rows if r.holdout_held)}


def _control_summary(repaired: Sequence[FailedRun]) -> dict[str, Any] | None:
    """How often the kept repairs' suffixes passed without them; None when no control was run."""
    rows = [r for r in repaired if r.control_runs]
    if not rows:
        return None
    summary = _reruns(rows, [r.control_runs or 0 for r in rows], [r.control_flips or 0 for r in rows])
    beaten = sum(1 for r in rows if _repair_rate_of(r) > (r.control_flips or 0) / (r.control_runs or 1))
    return {**summary, "beaten": beaten}


def _reruns(rows: Sequence[FailedRun], runs: Sequence[int], flips: Sequence[int]) -> dict[str, Any]:
    """``repairs``, ``runs``, ``flips`` and ``flip_rate`` of one kind of re-run over ``rows``."""
    return {
        "repairs": len(rows),
        "runs": sum(runs),
        "flips": sum(flips),
        "flip_rate": _round(sum(flips) / sum(runs)),
    }


def _repair_rate_of(row: FailedRun) -> float:
    """The kept repair's flip rate on its held-out re-runs, else on its validation re-runs."""
    if row.holdout_runs:
        return (row.holdout_flips or 0) / row.holdout_runs
    return (row.validation_flips or 0) / (row.validation_runs or 1)


def _round(value: float) -> float:
    return round(value, 4)


def format_repair_table(results: dict[str, Any]) -> str:
    """A markdown table of the headline metrics: all, natural, injected."""
    keys = (*METRIC_KEYS, "reexec_ratio")
    lines = ["| metric | all | natural | injected |", "|---|---|---|---|"]
    for key in keys:
        cells = [results.get(key), results.get("natural", {}).get(key), results.get("injected", {}).get(key)]
        lines.append(f"| {key} | " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines)
