"""The span store contract: an OTel ``SpanExporter`` that also answers questions about runs.

Shaped like langgraph-checkpoint's ``BaseCheckpointSaver``: this small abstract base (sync
methods plus ``a*`` async twins that default to running the sync method in a thread), an
in-memory implementation beside it (``memory.py``) and backends in their own modules
(``sqlite.py``). Instrumentation adds the store to a ``TracerProvider`` like any exporter.
"""

from __future__ import annotations

import asyncio
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from pydantic import BaseModel, Field

from causal_middleware.spans.model import Lineage, Outcome, Status, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.spans.writer import RetryableWriteError, await_pending


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


class StoreError(ValueError):
    """A store operation failed; nothing was written.

    A ``ValueError`` so that callers (and the CLI, which maps ``ValueError`` to exit code 2)
    treat a bad file or a bad batch like any other bad input.
    """


class StoreBusyError(StoreError, RetryableWriteError):
    """Another connection (often another process) holds the store's write lock; worth retrying."""


class StoreFullError(StoreError):
    """The disk (or the database's size limit) is full."""


class StoreReadOnlyError(StoreError):
    """The store was opened read-only (read-only file, folder or media), or cannot be created."""


class StoreCorruptError(StoreError):
    """The store file is not a SQLite database, or its pages are damaged."""


class SpanStore(SpanExporter, ABC):
    """Abstract span store. Subclasses implement the storage primitives below.

    ``background_writes``: whether instrumentation may hand this store's writes to a background
    writer (:mod:`causal_middleware.spans.writer`). A store that says yes must call
    :meth:`_await_pending` at the start of its reads, so a run is readable as soon as the
    ``invoke`` that made it returned, for whoever asks.
    """

    background_writes: ClassVar[bool] = False
    #: how long a read waits for runs still queued for this store (seconds)
    read_wait_s: float = 5.0

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
        after: str | None = None,
    ) -> list[RunSummary]:
        """Runs newest first (runs without a start last, ties by run id). ``label`` matches ``key``
        or ``key=value`` in the run's labels. ``after`` (a run id) pages by keyset: only the runs
        after that one in this order, so the last ``run_id`` of a page asks for the next page;
        KeyError when the store has no such run."""

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

    # --- background writes -----------------------------------------------------------------
    def pending_key(self) -> str:
        """Where background writers of this store register (same key: same storage)."""
        return f"{type(self).__name__}:{id(self)}"

    def write_batch(
        self,
        records: Sequence[SpanRecord],
        *,
        busy_timeout_s: float | None = None,
        counters: Mapping[str, int] | None = None,
    ) -> None:
        """What a background writer calls: :meth:`write_spans` with a short lock wait (raising
        :class:`StoreBusyError` when the store stays locked) and counters (drop counts) to add to
        the store's own health record in the same transaction. Backends without either ignore them."""
        if records:
            self.write_spans(records)

    def _await_pending(self, run_id: str | None = None) -> None:
        """Wait (bounded by :attr:`read_wait_s`) for the runs background writers still hold for
        this store: ``run_id``'s, or all when None."""
        await_pending(self.pending_key(), run_id, self.read_wait_s)

    def read_health(self) -> dict[str, int]:
        """Counters persisted in the store by the writers of every process that wrote to it
        (spans written, spans dropped by reason). Empty for stores that keep none."""
        return {}

    # --- derived -------------------------------------------------------------------------
    @abstractmethod
    def get_trajectory(self, run_id: str) -> Trajectory:
        """The run as a typed trajectory (spans plus annotations). KeyError when unknown."""

    # --- conveniences (concrete; backends may override with faster versions) ------------
    def resolve_run_id(self, run_id_or_prefix: str) -> str:
        """The full run id for an exact id or an unambiguous prefix of at least 6 hex digits.

        KeyError (naming what was asked) when nothing matches; ValueError when the prefix matches
        several runs.
        """
        wanted = run_id_or_prefix.strip().lower()
        known = [r.run_id for r in self.list_runs(limit=None)]
        if wanted in known:
            return wanted
        return match_run_prefix(wanted, known)

    def export_otlp_json(
        self, path: str | os.PathLike[str], run_ids: Sequence[str] | None = None
    ) -> list[str]:
        """Write runs (default: all) to one OTLP/JSON file; returns the run ids written."""
        from causal_middleware.store.otlp_json import export_otlp_json

        return export_otlp_json(self, path, run_ids)

    def import_otlp_json(self, path: str | os.PathLike[str]) -> list[str]:
        """Load an OTLP/JSON (or JSON-lines) file in one transaction; returns the run ids it held."""
        from causal_middleware.store.otlp_json import import_otlp_json

        return import_otlp_json(self, path)

    def import_trail_trace(self, path: str | os.PathLike[str]) -> str:
        """Load one TRAIL benchmark trace file; returns its run id."""
        from causal_middleware.store.trail import import_trail_trace

        return import_trail_trace(self, path)

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


_HEX_PREFIX = re.compile(r"^[0-9a-f]{6,32}$")


def match_run_prefix(prefix: str, known: Sequence[str]) -> str:
    """The one run id in ``known`` starting with ``prefix`` (>= 6 hex digits); KeyError/ValueError otherwise."""
    if not _HEX_PREFIX.match(prefix):
        raise KeyError(f"unknown run {prefix!r} (a run id prefix needs at least 6 hex digits)")
    matches = [run_id for run_id in known if run_id.startswith(prefix)]
    if not matches:
        raise KeyError(f"unknown run {prefix!r}: no run id starts with it")
    if len(matches) > 1:
        shown = ", ".join(sorted(matches)[:5]) + (", ..." if len(matches) > 5 else "")
        raise ValueError(f"run id prefix {prefix!r} is ambiguous: it matches {len(matches)} runs ({shown})")
    return matches[0]
