"""Repair workers over a store's durable queue (:mod:`causal_middleware.store.queue`): any process
that reaches the database and the agent's checkpointer can judge and repair queued runs.

A worker claims one job at a time for a lease, renews the lease from a heartbeat thread while it
works, judges the run (default: its recorded outcome), repairs a failed one on forks of the agent
(the repair callable; forks only, the user's thread is never written) and ends the job by
committing the ``diagnosis`` and ``repair`` records in the same transaction that marks the job
done, fenced by the lease token. So a run is repaired once however many workers race on the
queue, and a worker killed mid-repair leaves the job to expire and be claimed again; a job that
keeps failing is retried after a backoff, then dead-lettered at ``max_attempts``. A worker whose
lease was lost writes nothing (the forks it made stay as forks of the run).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from causal_middleware.counterfactual.verifiers import OutcomeVerifier, as_verifier
from causal_middleware.protocols import Verdict, Verifier
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.service import diagnosis_record
from causal_middleware.spans.health import health
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.store.base import SpanStore, StoreBusyError, StoreError
from causal_middleware.store.queue import (
    DurableRepairQueue,
    JobState,
    Lease,
    LeaseLostError,
    durable_queue_of,
)

#: ``repair(trajectory, feedback)``: the run's validated repair, made on forks only
RepairFn = Callable[[Trajectory, str | None], RepairResult]


class JobReport(BaseModel):
    """What one claimed job came to. ``outcome``: the repair's status (repaired, no_flip,
    unvalidated, ...), ``not_failed``, ``skipped_fork``, ``error`` or ``lease_lost``; ``state``:
    the job's state afterwards (done, queued for a retry, dead) or ``lost``."""

    run_id: str
    attempt: int
    outcome: str
    state: JobState | str
    error: str | None = None
    seconds: float = 0.0


class WorkerStats(BaseModel):
    """``causal-mw worker --json`` prints these (plus ``jobs``: the reports)."""

    owner: str
    claimed: int = 0
    repaired: int = 0
    not_repaired: int = 0
    not_failed: int = 0
    skipped: int = 0
    errors: int = 0
    dead: int = 0
    lost: int = 0
    jobs: list[JobReport] = []


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Heartbeat:
    """Renews a lease every ``interval`` seconds until stopped; notes when it was lost."""

    def __init__(self, queue: DurableRepairQueue, lease: Lease, interval: float) -> None:
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._queue, self._lease, self._interval = queue, lease, interval
        self._thread = threading.Thread(target=self._beat, name="causal-lease-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._queue.renew(self._lease):
                    self.lost.set()
                    return
            except Exception as exc:  # the database may be back before the lease runs out
                health.record_error("repair.worker.renew", exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self._interval + 5.0)


class RepairWorker:
    """Claims jobs from ``store``'s durable queue and repairs their runs with ``repair``.

    ``judge`` is the :class:`~causal_middleware.protocols.Verifier` deciding which runs failed
    (default :class:`~causal_middleware.counterfactual.verifiers.OutcomeVerifier`: the recorded outcome; a
    plain ``callable(answer) -> bool | None`` is wrapped by ``as_verifier``);
    ``lease_s`` is the visibility timeout (renewed every third of it while a job runs);
    ``max_attempts`` claims per run before it is dead-lettered; ``backoff_s`` before a failed
    job is claimable again.
    """

    def __init__(
        self,
        store: SpanStore,
        repair: RepairFn,
        *,
        judge: Verifier | Callable[..., bool | None] | None = None,
        owner: str | None = None,
        lease_s: float = 60.0,
        max_attempts: int = 3,
        backoff_s: float = 5.0,
    ) -> None:
        queue = durable_queue_of(store)
        if queue is None:
            raise ValueError(
                f"repair workers need a store with a durable queue (a postgresql:// store), got "
                f"{type(store).__name__}; SQLite and in-memory stores repair in-process (repair_on_failure())"
            )
        if lease_s <= 0 or max_attempts < 1 or backoff_s < 0:
            raise ValueError(
                f"lease_s must be > 0, max_attempts >= 1 and backoff_s >= 0, got {lease_s}, {max_attempts}, {backoff_s}"
            )
        self.store, self.queue, self.repair = store, queue, repair
        self.judge: Verifier = as_verifier(judge) if judge is not None else OutcomeVerifier()
        self.owner = owner or default_owner()
        self.lease_s, self.max_attempts, self.backoff_s = float(lease_s), int(max_attempts), float(backoff_s)
        self.stats = WorkerStats(owner=self.owner)

    # --- one job -------------------------------------------------------------------------
    def run_one(self) -> JobReport | None:
        """Claim and handle one job; None when none is claimable now."""
        lease = self.queue.claim(owner=self.owner, lease_s=self.lease_s, max_attempts=self.max_attempts)
        if lease is None:
            return None
        self.stats.claimed += 1
        started = time.monotonic()
        heartbeat = _Heartbeat(self.queue, lease, max(self.lease_s / 3.0, 0.05))
        try:
            report = self._handle(lease)
        finally:
            heartbeat.stop()
        report.seconds = round(time.monotonic() - started, 3)
        self._count(report)
        return report

    def _handle(self, lease: Lease) -> JobReport:
        try:
            outcome, records = self._work(lease.run_id)
        except LeaseLostError as exc:
            return JobReport(
                run_id=lease.run_id, attempt=lease.attempt, outcome="lease_lost", state="lost", error=str(exc)
            )
        except Exception as exc:
            error = _one_line(exc)
            health.record_error("repair.worker", exc)
            state: JobState | str
            try:
                state = self.queue.fail(
                    lease, error, max_attempts=self.max_attempts, backoff_s=self.backoff_s
                )
            except LeaseLostError:
                state = "lost"
            return JobReport(
                run_id=lease.run_id, attempt=lease.attempt, outcome="error", state=state, error=error
            )
        try:
            self.queue.complete(lease, records, outcome=outcome)
        except LeaseLostError as exc:
            return JobReport(
                run_id=lease.run_id, attempt=lease.attempt, outcome="lease_lost", state="lost", error=str(exc)
            )
        except StoreError as exc:  # nothing was written; the lease expires and the job is retried
            health.record_error("repair.worker.complete", exc)
            return JobReport(
                run_id=lease.run_id,
                attempt=lease.attempt,
                outcome="error",
                state="leased",
                error=_one_line(exc),
            )
        return JobReport(run_id=lease.run_id, attempt=lease.attempt, outcome=outcome, state="done")

    def _work(self, run_id: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        """(outcome, records to commit with the job) for one run."""
        trajectory = self.store.get_trajectory(run_id)
        if trajectory.is_counterfactual:  # forks (repairs' own probes included) are not judged
            return "skipped_fork", []
        verdict = self.judge.verify(trajectory)
        if not verdict.failed:
            return "not_failed", []
        trajectory = self._annotate_failure(trajectory, verdict)
        result = self.repair(trajectory, verdict.feedback or None)
        return result.status, [
            ("diagnosis", diagnosis_record(result.crs)),
            ("repair", result.model_dump(mode="json")),
        ]

    def _annotate_failure(self, trajectory: Trajectory, verdict: Verdict) -> Trajectory:
        """The failed run's outcome (and the judged right answer when it has no reference), kept
        in the store as the in-process queue does; idempotent, so a retried job repeats it harmlessly."""
        facts: dict[str, Any] = {}
        if trajectory.outcome in (None, Outcome.UNKNOWN):
            facts["outcome"] = Outcome.FAILURE
        if verdict.expected and trajectory.reference is None:
            facts["reference"] = verdict.expected
        if not facts:
            return trajectory
        self.store.annotate(trajectory.run_id, **facts)
        return trajectory.model_copy(update=facts)

    def _count(self, report: JobReport) -> None:
        s = self.stats
        s.jobs.append(report)
        if report.state == "lost":
            s.lost += 1
        elif report.outcome == "error":
            s.errors += 1
            s.dead += int(report.state == "dead")
        elif report.outcome == "repaired":
            s.repaired += 1
        elif report.outcome == "not_failed":
            s.not_failed += 1
        elif report.outcome == "skipped_fork":
            s.skipped += 1
        else:
            s.not_repaired += 1

    # --- the loop ------------------------------------------------------------------------
    def run(
        self,
        *,
        once: bool = False,
        max_runs: int | None = None,
        poll_s: float = 1.0,
        stop: threading.Event | None = None,
    ) -> WorkerStats:
        """Handle jobs until ``stop`` is set, ``max_runs`` jobs were handled, or (``once``) no job
        is claimable; polls every ``poll_s`` seconds while the queue is empty."""
        if max_runs is not None and max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {max_runs}")
        stop = stop or threading.Event()
        handled = 0
        while not stop.is_set() and (max_runs is None or handled < max_runs):
            try:
                report = self.run_one()
            except StoreBusyError as exc:  # the database is away: wait for it, as when idle
                health.record_error("repair.worker.claim", exc)
                stop.wait(poll_s)
                continue
            if report is None:
                if once:
                    break
                stop.wait(poll_s)
                continue
            handled += 1
        return self.stats
