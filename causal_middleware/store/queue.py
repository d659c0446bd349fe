"""The durable repair queue a shared store may keep beside its runs (the Postgres store does).

One job per run (enqueueing a run twice is one job). A worker *claims* a job for a lease of
``lease_s`` seconds and gets a :class:`Lease` with a fresh token; it *renews* the lease while it
works, and ends the job with *complete* (its records are written in the same transaction) or
*fail* (retried after a backoff until ``max_attempts`` claims, then dead-lettered). Every
ending is fenced by the token: a worker whose lease expired, and whose job another worker may
have claimed since, gets :class:`LeaseLostError` and writes nothing. A job whose lease expires
(a worker killed mid-repair) is claimable again; one that expired at its last attempt is dead.

Stores without a durable queue (SQLite, in-memory) repair in-process instead
(:class:`causal_middleware.repair.trigger.RepairQueue`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from causal_middleware.store.base import StoreError

JobState = Literal["queued", "leased", "done", "dead"]


class Lease(BaseModel):
    """A claimed job: ``attempt`` counts claims of this run, this one included."""

    run_id: str
    token: str
    attempt: int
    owner: str
    lease_s: float


class QueueEntry(BaseModel):
    """One job as the queue holds it (``causal-mw worker --json`` reports these counts)."""

    run_id: str
    state: JobState
    attempts: int
    owner: str | None = None
    lease_until: datetime | None = None
    enqueued_at: datetime | None = None
    updated_at: datetime | None = None
    last_error: str | None = None
    outcome: str | None = None


class LeaseLostError(StoreError):
    """The lease expired (or the job was claimed by another worker): the result was not written."""


@runtime_checkable
class DurableRepairQueue(Protocol):
    def enqueue(self, run_id: str) -> bool:
        """Add a job for ``run_id``; False when the run already has one."""
        ...

    def claim(self, *, owner: str, lease_s: float, max_attempts: int) -> Lease | None:
        """The oldest claimable job, leased to ``owner``; None when there is none."""
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend the lease by ``lease.lease_s``; False when it was already lost."""
        ...

    def complete(self, lease: Lease, records: Sequence[tuple[str, dict[str, Any]]], *, outcome: str) -> None:
        """Write ``records`` (kind, payload) for the run and mark the job done, atomically.
        LeaseLostError (nothing written) when the lease is no longer held."""
        ...

    def fail(self, lease: Lease, error: str, *, max_attempts: int, backoff_s: float) -> JobState:
        """Give the job back after an error: queued again after ``backoff_s``, or dead at the cap.
        LeaseLostError when the lease is no longer held."""
        ...

    def queue_entries(self, state: JobState | None = None) -> list[QueueEntry]:
        """Every job (or those in ``state``), oldest first."""
        ...


def durable_queue_of(store: object) -> DurableRepairQueue | None:
    """``store`` when it keeps a durable repair queue, else None."""
    return store if isinstance(store, DurableRepairQueue) else None
