"""A sweep's questions run in other processes (Ray workers, ...): what travels and what stays.

A remote executor cannot be handed the live agent, so a sweep run remotely ships an
:class:`EnvSpec` instead: a small, hashable, picklable description of the environment
(dataset, retriever, seeds) whose :meth:`EnvSpec.build` makes the agent. Each worker process
builds it once (:func:`worker_environment`, a per-process cache keyed by the spec) and runs every
question it is given on it, into its own in-memory store. A :class:`SweepWorker` call runs one
question's units there exactly as the local sweep does, then exports the runs the records name
(base and forks: spans and annotations, with their run ids) so the driver imports them into its
own store and writes the records itself. ``follow_up`` runs in the worker after the units, on the
same environment (the forks' checkpoints live there), and returns further records to keep (the
attribution benchmark diagnoses its failed forks this way).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from causal_middleware.faults.model import FaultFamily, FaultSite, UnitRecord
from causal_middleware.spans.model import Lineage, Outcome
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import SpanStore
from causal_middleware.tasks.model import Question

__all__ = [
    "EnvSpec",
    "ExtraRecord",
    "FollowUp",
    "PortableRun",
    "QuestionOutcome",
    "SweepWorker",
    "export_run",
    "import_run",
    "worker_environment",
]


class EnvSpec(Hashable, Protocol):
    """How a worker process builds the sweep's environment (hashable and picklable)."""

    def build(self) -> Any:  # a SweepEnvironment (typed Any to keep this module below sweep.py)
        ...


@dataclass(frozen=True)
class ExtraRecord:
    """A derived record a follow-up asks the driver to keep: ``store.put_record(kind, run_id, payload)``."""

    kind: str
    run_id: str
    payload: dict[str, Any]


FollowUp = Callable[[Any, Sequence[UnitRecord]], list[ExtraRecord]]


@dataclass(frozen=True)
class PortableRun:
    """One stored run as it travels between stores: its spans and its run-level annotations."""

    run_id: str
    spans: list[SpanRecord]
    outcome: Outcome | None
    reference: str | None
    labels: dict[str, Any]
    lineage: Lineage | None


@dataclass
class QuestionOutcome:
    """What one question's units produced in a worker (records not yet stored)."""

    records: list[UnitRecord]
    runs: list[PortableRun]
    extra: list[ExtraRecord] = field(default_factory=list)
    base_made: int = 0


def export_run(store: SpanStore, run_id: str) -> PortableRun:
    trajectory = store.get_trajectory(run_id)
    return PortableRun(
        run_id=run_id,
        spans=store.get_spans(run_id),
        outcome=trajectory.outcome,
        reference=trajectory.reference,
        labels=dict(trajectory.labels),
        lineage=trajectory.lineage,
    )


def import_run(store: SpanStore, run: PortableRun) -> None:
    store.write_spans(run.spans)
    store.annotate(
        run.run_id, outcome=run.outcome, reference=run.reference, labels=run.labels, lineage=run.lineage
    )


_envs: dict[Hashable, Any] = {}
_envs_lock = threading.Lock()


def worker_environment(spec: EnvSpec) -> Any:
    """This process's environment for ``spec``, built on first use (closed at interpreter exit)."""
    with _envs_lock:
        env = _envs.get(spec)
        if env is None:
            env = _envs[spec] = spec.build()
            atexit.register(env.close)
        return env


@dataclass(frozen=True)
class SweepWorker:
    """Runs one question's units on this process's environment for ``spec`` (see the module doc)."""

    spec: EnvSpec
    seed: int
    persistent: bool
    follow_up: FollowUp | None = None
    site: FaultSite = "trace"

    def __call__(self, item: tuple[Question, Sequence[tuple[FaultFamily, int]]]) -> QuestionOutcome:
        from causal_middleware.faults.sweep import _Sweep

        question, units = item
        env = worker_environment(self.spec)
        sweep = _Sweep(
            env, seed=self.seed, persistent=self.persistent, on_unit=lambda record: None, site=self.site
        )
        records = sweep.run_question(question, units)
        run_ids = dict.fromkeys(
            run_id for r in records for run_id in (r.base_run_id, r.fork_run_id) if run_id is not None
        )
        extra = self.follow_up(env, records) if self.follow_up is not None else []
        return QuestionOutcome(
            records=records,
            runs=[export_run(env.store, run_id) for run_id in run_ids],
            extra=extra,
            base_made=sweep.base_made,
        )
