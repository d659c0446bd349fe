"""Two-step repair: a second step searched on the forks of the first step's proposals.

A natural failure often has two wrong steps (a reader that misread hop 1 and, given hop 1's right
answer, misreads hop 2 as well). No single-step change flips such a run, so the CRS search finds
nothing, yet one of its probes already made the first fix: its fork is the run with step 1
corrected. :func:`search_second_step` runs the same CRS search on those forks, over the steps after
each fork's intervened step; a flip there is a two-step repair (step 1 on the run, step 2 on the
fork). :func:`validate_chain` re-runs both changes ``n`` times (fork the run with the first, fork
that fork with the second) and checks that each is the only change before its fork point.

The forks searched are the first step's non-flipping probes, taken round-robin over the candidate
steps, so one step's proposals do not use up the budget before a later step is tried. Each step's
forks go in the proposer's order, not the search's: the single-step search tries the most minimal
change first, but a base is worth searching when its first change is the right one, which is what
the proposer ranked (a value the recorded fact states comes before a smaller edit to another name).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from causal_middleware.counterfactual.candidates import candidate_steps, fork_point
from causal_middleware.counterfactual.crs import ForkCache, compute_crs, fork_with, judge_fork, run_probe
from causal_middleware.counterfactual.minimality import minimality
from causal_middleware.counterfactual.models import CRSResult, Probe
from causal_middleware.counterfactual.render import to_jsonable
from causal_middleware.interventions.edit import EditError
from causal_middleware.protocols import ForkBackend, Proposal, Proposer, RepairCost, Verifier
from causal_middleware.repair.models import OfflineValidation, TwoStepSearch
from causal_middleware.repair.validate import offline_validation, prefix_differences
from causal_middleware.spans.model import NodeStep, Trajectory


class ForkKeeper:
    """A fork backend that passes every fork on to ``backend`` and keeps the trajectories it got
    back, so the second step's search reads a first-step fork without a store round trip.
    ``load`` (e.g. ``store.get_trajectory``) reads a fork this call did not make: a probe an
    earlier call made, answered from a shared ``ForkCache``."""

    def __init__(self, backend: ForkBackend, load: Callable[[str], Trajectory] | None = None) -> None:
        self.backend = backend
        self.forks: dict[str, Trajectory] = {}
        self._load = load
        self._lock = threading.Lock()

    def get(self, run_id: str) -> Trajectory | None:
        """The fork ``run_id``: kept, else loaded; None when neither works (fail-open)."""
        with self._lock:
            fork = self.forks.get(run_id)
        if fork is not None or self._load is None or not run_id:
            return fork
        try:
            return self._load(run_id)
        except Exception:  # a fork that cannot be read back is not searched, never a crash
            return None

    def fork(self, run_id: str, **kwargs: Any) -> Trajectory:
        fork = self.backend.fork(run_id, **kwargs)
        with self._lock:
            self.forks[fork.run_id] = fork
        return fork


@dataclass
class SecondStep:
    """One two-step flip: ``first`` applied to the run made ``base``; ``probe`` (on ``base``) flipped it."""

    first: Probe
    base: Trajectory
    probe: Probe
    crs: CRSResult


def bases(crs: CRSResult, lookup: Callable[[str], Trajectory | None]) -> Iterator[tuple[Probe, Trajectory]]:
    """The first step's probes that made a fork which did not flip, round-robin over the steps
    (each step's probes in the proposer's order, ``Proposal.rank``; unranked ones after, in the
    order the search tried them); a fork ``lookup`` cannot find is left out."""
    by_step: dict[str, list[Probe]] = {}
    for probe in crs.probes:
        if probe.fork_run_id and probe.success is False and probe.error is None:
            by_step.setdefault(probe.proposal.step_id, []).append(probe)
    queues = [sorted(q, key=_proposer_order) for q in by_step.values()]
    for rank in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if rank < len(queue):
                fork = lookup(queue[rank].fork_run_id or "")
                if fork is not None:
                    yield queue[rank], fork


def _proposer_order(probe: Probe) -> tuple[bool, int]:
    rank = probe.proposal.rank
    return (rank is None, rank or 0)


def search_second_step(
    crs: CRSResult,
    lookup: Callable[[str], Trajectory | None],
    backend: ForkBackend,
    proposer: Proposer,
    checker: Verifier,
    *,
    k: int,
    max_bases: int,
    max_reexecutions: int,
    cost: RepairCost,
    stats: TwoStepSearch,
    cache: ForkCache | None = None,
    feedback: str | None = None,
    reference: str | None = None,
) -> Iterator[SecondStep]:
    """Yield each two-step flip found, searching at most ``max_bases`` first-step forks and spending
    at most ``max_reexecutions`` forks in all (added to ``cost`` and ``stats``). Each base's search
    stops at its first flipping step; the caller validates and stops when one holds. ``reference``
    (the run's) judges a fork that carries none, as the first step's probes were judged."""
    for first, base in bases(crs, lookup):
        if stats.bases >= max_bases or stats.reexecutions >= max_reexecutions:
            return
        if base.reference is None and reference is not None:
            base = base.model_copy(update={"reference": reference})
        later = _after_fork_point(base)
        if not later:
            continue
        result = compute_crs(
            base,
            backend,
            proposer,
            checker,
            k=k,
            candidates=[s.step_id for s in later],
            early_stop=True,
            max_reexecutions=max_reexecutions - stats.reexecutions,
            cache=cache,
            extra_feedback=feedback,
        )
        stats.bases += 1
        stats.reexecutions += result.cost.reexecutions
        stats.flips += len(result.successful_probes())
        cost.absorb(result.cost.model_copy(update={"naive_reexecutions": 0}))
        for probe in sorted(result.successful_probes(), key=lambda p: -(p.proposal.minimality or 0.0)):
            yield SecondStep(first=first, base=base, probe=probe, crs=result)


def _after_fork_point(base: Trajectory) -> list[NodeStep]:
    """``base``'s candidate steps after its intervened step (that step itself is the first change)."""
    start = fork_point(base)
    steps = candidate_steps(base)
    if start is None:
        return []
    return [s for s in steps if s.step_id != start.step_id]


def validate_chain(
    parent: Trajectory,
    first: Proposal,
    second: Proposal,
    backend: ForkBackend,
    verifier: Verifier,
    *,
    n: int = 3,
    m: int = 2,
    cost: RepairCost | None = None,
    alone: Probe | None | Literal[True] = True,
) -> OfflineValidation:
    """Re-run the two-step repair ``n`` times (two re-executions each: the run forked with
    ``first``, that fork forked with ``second`` at the same node and LangGraph step); pass when
    ``>= m`` flip and each change is the only one before its fork point.

    First, when the run has the second change's step, the second change alone is applied to the
    run once (one re-execution, :func:`second_alone`): if that flips it, the first change is not
    needed and the repair fails (``second_alone_flips``), with no re-runs. (The first alone never
    flipped: it is a probe the single-step search judged.) ``alone``: that probe when the caller
    already made it (None: the run has no such step), True to make it here."""
    if n < 1 or not 1 <= m <= n:
        raise ValueError(f"need n >= 1 and 1 <= m <= n, got n={n}, m={m}")
    spent = cost if cost is not None else RepairCost()
    probe = second_alone(parent, second, backend, verifier, spent) if alone is True else alone
    alone_flips = None if probe is None else probe.success is True
    if alone_flips:
        return OfflineValidation(
            passed=False,
            n_runs=n,
            min_flips=m,
            flips=0,
            only_change=False,
            second_alone_flips=True,
            reason="the second change alone flips the run: the first is not needed",
        )
    flips = 0
    fork_ids: list[str] = []
    differences: list[str] = []
    errors: list[str] = []
    for _ in range(n):
        try:
            spent.reexecutions += 1
            base = fork_with(backend, parent, first, labels={"repair_validation": True})
            step = _same_step(base, second)
            if step is None:
                raise LookupError(
                    f"the first change's re-run has no {second.node}@{second.langgraph_step} to change"
                )
            again = second.model_copy(update={"step_id": step.step_id})
            spent.reexecutions += 1
            fork = fork_with(backend, base, again, labels={"repair_validation": True})
        except Exception as exc:  # a re-run that fails counts against the repair, never crashes it
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        fork_ids.append(fork.run_id)
        verdict = judge_fork(verifier, parent, fork)
        spent.absorb(verdict.cost)
        flips += int(verdict.success is True)
        for diff in [*prefix_differences(parent, base, first), *prefix_differences(base, fork, again)]:
            if diff not in differences:
                differences.append(diff)
    return offline_validation(n, m, flips, fork_ids, differences, errors).model_copy(
        update={"second_alone_flips": alone_flips}
    )


def second_alone(
    parent: Trajectory,
    second: Proposal,
    backend: ForkBackend,
    verifier: Verifier,
    cost: RepairCost,
    *,
    found_on: str | None = None,
) -> Probe | None:
    """``second`` applied to ``parent`` alone (one re-execution, :func:`run_probe`), as a probe of
    ``parent``'s own step at the same node, hop and LangGraph step; None when ``parent`` has no
    such step. The probe's proposal describes the change as made on ``parent``: an edit's values
    are the edit applied to that step's recorded output, its minimality is taken against that
    output, and its description says which fork (``found_on``) it was proposed on. A change the
    run cannot take is a probe that did not flip (the first change is needed for it)."""
    step = _same_step(parent, second)
    if step is None:
        return None
    where = f" (proposed on fork {found_on}, applied to this run alone)" if found_on else ""
    change = second.model_copy(
        update={"step_id": step.step_id, "rank": None, "description": f"{second.description}{where}"}
    )
    recorded = to_jsonable(step.output)
    if second.edit is not None:
        try:
            change.values = to_jsonable(second.edit.apply(recorded))
        except EditError as exc:
            return Probe(proposal=change, success=None, error=f"{type(exc).__name__}: {exc}")
    change.minimality = round(minimality(recorded, change.values), 6)
    return run_probe(backend, verifier, parent, change, cost, labels={"repair_validation": True})


def _same_step(trajectory: Trajectory, proposal: Proposal) -> NodeStep | None:
    for step in trajectory.steps:
        if (
            isinstance(step, NodeStep)
            and step.node == proposal.node
            and step.langgraph_step == proposal.langgraph_step
            and step.hop == proposal.hop
        ):
            return step
    return None


__all__ = ["ForkKeeper", "SecondStep", "bases", "search_second_step", "second_alone", "validate_chain"]
