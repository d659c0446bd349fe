"""The span store contract: an OTel ``SpanExporter`` that also answers questions about runs.

Shaped like langgraph-checkpoint's ``BaseCheckpointSaver``: this small abstract base (sync
methods plus ``a*`` async twins that default to running the sync method in a thread), an
in-memory implementation beside it (``memory.py``) and backends in their own modules
(``sqlite.py``). Instrumentation adds the store to a ``TracerProvider`` like any exporter.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from pydantic import BaseModel, Field

from causal_middleware.spans.model import Lineage, Outcome, Status, Trajectory
from causal_middleware.spans.record import SpanRecord


class RunSummary(BaseModel):
    """One row of ``list_runs``; also the JSON shape of ``causal-mw runs list --json``."""

    run_id: str
    thread_id: str | None = None
    graph: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    status: Status = Status.UNSET
    outcome: Outcome | None = None
    answer: str | None = None
    n_hops: int = 0
    n_spans: int = 0
    labels: dict[str, Any] = Field(default_factory=dict)
    parent_run_id: str | None = None


class StoreError(Exception):
    """A store operation failed; nothing was written."""


class SpanStore(SpanExporter, ABC):
    """Abstract span store. Subclasses implement the storage primitives below."""

    # --- storage primitives -------------------------------------------------------------
    @abstractmethod
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        """Persist spans atomically: all of them or none."""

    @abstractmethod
    def get_spans(self, run_id: str) -> list[SpanRecord]:
        """Every span of one run (trace), in start order. KeyError when the run is unknown."""

    @abstractmethod
    def list_runs(
        self,
        *,
        outcome: Outcome | str | None = None,
        thread_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        label: str | None = None,
        parent_run_id: str | None = None,
        limit: int | None = 100,
    ) -> list[RunSummary]:
        """Runs newest first. ``label`` matches ``key`` or ``key=value`` in the run's labels."""

    @abstractmethod
    def annotate(
        self,
        run_id: str,
        *,
        outcome: Outcome | str | None = None,
        reference: str | None = None,
        labels: dict[str, Any] | None = None,
        lineage: Lineage | None = None,
    ) -> None:
        """Attach run-level facts learned after the run (merged into ``labels``)."""

    @abstractmethod
    def put_record(self, kind: str, run_id: str, payload: dict[str, Any]) -> str:
        """Keep a derived record (intervention, diagnosis, repair, ...) for a run; returns its id."""

    @abstractmethod
    def get_records(self, kind: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """Derived records of one kind, oldest first, optionally for one run."""

    # --- derived -------------------------------------------------------------------------
    @abstractmethod
    def get_trajectory(self, run_id: str) -> Trajectory:
        """The run as a typed trajectory (spans plus annotations). KeyError when unknown."""

    # --- SpanExporter --------------------------------------------------------------------
    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        try:
            self.write_spans([SpanRecord.from_readable(s) for s in spans])
        except Exception as exc:  # the exporter contract: report, never raise into the SDK
            from causal_middleware.spans.health import health

            health.record_error("store.export", exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    # --- async twins ---------------------------------------------------------------------
    async def aget_trajectory(self, run_id: str) -> Trajectory:
        return await asyncio.to_thread(self.get_trajectory, run_id)

    async def alist_runs(self, **kwargs: Any) -> list[RunSummary]:
        return await asyncio.to_thread(lambda: self.list_runs(**kwargs))

    async def aget_spans(self, run_id: str) -> list[SpanRecord]:
        return await asyncio.to_thread(self.get_spans, run_id)

    async def aannotate(self, run_id: str, **kwargs: Any) -> None:
        await asyncio.to_thread(lambda: self.annotate(run_id, **kwargs))
