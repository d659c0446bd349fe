"""An in-memory span store: for tests and short-lived scripts. Same answers as the SQLite store
(spans are kept JSON-encoded, trajectories cached the same way), nothing survives the process."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from causal_middleware.spans.builder import (
    SpanFacts,
    build_trajectory,
    choose_root,
    span_facts,
    summarize_run,
)
from causal_middleware.spans.model import Lineage, Outcome, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store._common import (
    Annotations,
    StoredRecord,
    TrajectoryCache,
    check_label,
    check_limit,
    decode_span,
    effective_summary,
    encode_payload,
    encode_span,
    label_matches,
    normalize_outcome,
    outcome_matches,
    overlay,
    read_trajectory,
    to_ns,
)
from causal_middleware.store.base import RunSummary, SpanStore


class InMemorySpanStore(SpanStore):
    """A thread-safe span store held in process memory."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._spans: dict[str, dict[str, dict[str, Any]]] = {}  # run id -> span id -> encoded row
        self._facts: dict[str, dict[str, SpanFacts]] = {}
        self._annotations: dict[str, Annotations] = {}
        self._summaries: dict[str, RunSummary] = {}
        self._versions: dict[str, int] = {}
        self._cache = TrajectoryCache(1024)
        self._records: list[tuple[StoredRecord, str]] = []
        self._hidden: set[str] = set()  # traces that are not agent runs (repair, diagnosis, ...)

    # --- spans ---------------------------------------------------------------------------
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        rows = [
            (r, {**r.model_dump(exclude={"attributes", "events", "links", "resource"}), **encode_span(r)})
            for r in records
        ]
        with self._lock:
            touched = set()
            for record, row in rows:
                self._spans.setdefault(record.trace_id, {})[record.span_id] = row
                self._facts.setdefault(record.trace_id, {})[record.span_id] = span_facts(record)
                touched.add(record.trace_id)
            for run_id in touched:
                self._refresh(run_id)

    def _refresh(self, run_id: str) -> None:
        facts = self._facts[run_id]
        root_facts = choose_root(facts.values())
        root = decode_span(self._spans[run_id][root_facts.span_id]) if root_facts is not None else None
        summary = summarize_run(run_id, list(facts.values()), root)
        self._summaries[run_id] = effective_summary(summary, self._annotations.get(run_id, Annotations()))
        if summary.is_run:
            self._hidden.discard(run_id)
        else:
            self._hidden.add(run_id)
        self._versions[run_id] = self._versions.get(run_id, 0) + 1

    def get_spans(self, run_id: str) -> list[SpanRecord]:
        with self._lock:
            rows = list(self._require(run_id).values())
        return [decode_span(row) for row in sorted(rows, key=lambda r: (r["start_time_ns"], r["span_id"]))]

    def _require(self, run_id: str) -> dict[str, dict[str, Any]]:
        spans = self._spans.get(run_id)
        if spans is None:
            raise KeyError(f"unknown run {run_id!r}: the in-memory store has no spans of it")
        return spans

    # --- runs ----------------------------------------------------------------------------
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
        wanted = normalize_outcome(outcome)
        check_limit(limit)
        check_label(label)
        since_ns, until_ns = to_ns(since), to_ns(until)
        with self._lock:
            summaries = [s for run_id, s in self._summaries.items() if run_id not in self._hidden]
            cursor = self._summaries.get(after) if after is not None else None
        if after is not None and cursor is None:
            raise KeyError(f"unknown run {after!r} (the 'after' of a listing): the in-memory store has none")
        ordered = sorted(summaries, key=_newest_first)
        if cursor is not None:  # keyset: the runs after the cursor in listing order
            position = _newest_first(cursor)
            ordered = [s for s in ordered if _newest_first(s) > position]
        out = []
        for s in ordered:
            started = to_ns(s.started_at)
            if wanted is not None and not outcome_matches(s.outcome, wanted):
                continue
            if thread_id is not None and s.thread_id != thread_id:
                continue
            if since_ns is not None and (started is None or started < since_ns):
                continue
            if until_ns is not None and (started is None or started > until_ns):
                continue
            if parent_run_id is not None and s.parent_run_id != parent_run_id:
                continue
            if label is not None and not label_matches(s.labels, label):
                continue
            out.append(s.model_copy(deep=True))
            if limit is not None and len(out) >= limit:
                break
        return out

    def annotate(
        self,
        run_id: str,
        *,
        outcome: Outcome | str | None = None,
        reference: str | None = None,
        labels: dict[str, Any] | None = None,
        lineage: Lineage | None = None,
    ) -> None:
        merged_outcome = normalize_outcome(outcome)
        with self._lock:
            self._require(run_id)
            current = self._annotations.get(run_id, Annotations())
            self._annotations[run_id] = current.merged(
                outcome=merged_outcome, reference=reference, labels=labels, lineage=lineage
            )
            self._refresh(run_id)

    def get_annotations(self, run_id: str) -> Annotations:
        """What ``annotate`` set for the run (empty when nothing was); KeyError when unknown."""
        with self._lock:
            self._require(run_id)
            return self._annotations.get(run_id, Annotations()).model_copy(deep=True)

    def get_trajectory(self, run_id: str) -> Trajectory:
        with self._lock:
            self._require(run_id)
            version = self._versions[run_id]
            annotations = self._annotations.get(run_id, Annotations())

        def build() -> Trajectory:
            return overlay(build_trajectory(self.get_spans(run_id), run_id=run_id), annotations)

        return read_trajectory(
            self._cache, run_id, version, build, self._ancestor_versions, self.get_trajectory
        )

    def _ancestor_versions(self, run_id: str, parent_run_id: str) -> tuple[int | None, ...]:
        versions: list[int | None] = []
        cursor: str | None = parent_run_id
        with self._lock:
            while cursor is not None and len(versions) < 64:
                versions.append(self._versions.get(cursor))
                summary = self._summaries.get(cursor)
                cursor = summary.parent_run_id if summary is not None else None
        return tuple(versions)

    # --- derived records -----------------------------------------------------------------
    def put_record(self, kind: str, run_id: str, payload: dict[str, Any]) -> str:
        encoded = encode_payload(kind, run_id, payload)
        record = StoredRecord(
            id=uuid.uuid4().hex,
            kind=kind,
            run_id=run_id,
            created=datetime.fromtimestamp(time.time()).astimezone(),
        )
        with self._lock:
            self._records.append((record, encoded))
        return record.id

    def get_records(self, kind: str, run_id: str | None = None) -> list[dict[str, Any]]:
        return [r.payload for r in self.list_records(kind, run_id)]

    def list_records(self, kind: str | None = None, run_id: str | None = None) -> list[StoredRecord]:
        """Derived records with their ids and creation times, oldest first."""
        with self._lock:
            rows = list(self._records)
        return [
            record.model_copy(update={"payload": json.loads(encoded)})
            for record, encoded in rows
            if (kind is None or record.kind == kind) and (run_id is None or record.run_id == run_id)
        ]


def _newest_first(summary: RunSummary) -> tuple[int, int, str]:
    started = to_ns(summary.started_at)
    return (started is None, -(started or 0), summary.run_id)
