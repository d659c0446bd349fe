"""The embedded default span store: one SQLite file (WAL mode), safe to share between threads.

Tables: ``spans`` (one row per span, keyed by trace and span id, so re-exporting a span replaces
it), ``runs`` (one row per trace, recomputed from the run's spans after every batch, whatever
order spans arrive in, plus the run's annotations) and ``records`` (derived records such as
interventions, diagnoses and repairs). The schema version lives in ``PRAGMA user_version``;
opening a file written by a newer schema fails with a clear error instead of guessing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from causal_middleware.replay.stitch import stitch_from_store  # forks read back stitched (replayer)
from causal_middleware.spans.builder import (
    SpanFacts,
    build_trajectory,
    choose_root,
    datetime_from_ns,
    span_facts,
    summarize_run,
)
from causal_middleware.spans.model import Lineage, Outcome, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store._common import (
    Annotations,
    StoredRecord,
    check_label,
    check_limit,
    decode_span,
    dumps,
    effective_summary,
    encode_payload,
    encode_span,
    label_matches,
    normalize_outcome,
    overlay,
    to_ns,
)
from causal_middleware.store.base import RunSummary, SpanStore, StoreError, match_run_prefix

SCHEMA_VERSION = 1

_SCHEMA_V1 = """
CREATE TABLE spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_span_id TEXT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_time_ns INTEGER NOT NULL,
    end_time_ns INTEGER,
    status_code TEXT NOT NULL,
    status_message TEXT,
    attributes TEXT NOT NULL,
    events TEXT NOT NULL,
    links TEXT NOT NULL,
    resource TEXT NOT NULL,
    scope TEXT,
    span_type TEXT,
    declared_run INTEGER NOT NULL DEFAULT 0,
    hop_index INTEGER,
    answer_text TEXT,
    PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX spans_by_start ON spans (trace_id, start_time_ns);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT,
    graph TEXT,
    started_at_ns INTEGER,
    ended_at_ns INTEGER,
    status TEXT NOT NULL,
    answer TEXT,
    n_hops INTEGER NOT NULL DEFAULT 0,
    n_spans INTEGER NOT NULL DEFAULT 0,
    has_root INTEGER NOT NULL DEFAULT 0,
    is_run INTEGER NOT NULL DEFAULT 1,
    outcome TEXT,
    reference TEXT,
    labels TEXT NOT NULL DEFAULT '{}',
    lineage TEXT,
    parent_run_id TEXT,
    annotations TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_start ON runs (started_at_ns);
CREATE INDEX runs_by_thread ON runs (thread_id);
CREATE INDEX runs_by_parent ON runs (parent_run_id);
CREATE TABLE records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX records_by_kind ON records (kind, run_id, seq);
"""


def _migrate_to_v1(conn: sqlite3.Connection) -> None:
    # statement by statement: executescript() would COMMIT the migration's transaction first
    for statement in _SCHEMA_V1.split(";"):
        if statement.strip():
            conn.execute(statement)


# MIGRATIONS[n] upgrades a database at version n-1 to version n.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_to_v1}

_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, start_time_ns, end_time_ns, status_code, status_message, "
    "attributes, events, links, resource, scope"
)


def migrate(conn: sqlite3.Connection, path: str = "<connection>") -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction; returns the version found.

    Raises :class:`StoreError` when the database was written by a newer schema.
    """
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"span store {path} has schema version {found}, newer than this causal-middleware "
            f"supports ({SCHEMA_VERSION}); upgrade causal-middleware to open it"
        )
    if found == SCHEMA_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        for version in range(found + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[version](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


class SqliteSpanStore(SpanStore):
    """Span store in one SQLite file. ``path=":memory:"`` keeps it in memory.

    ``create=False`` opens an existing store only (FileNotFoundError otherwise), which is what
    readers such as the CLI want: reading never creates an empty database by accident.
    """

    def __init__(
        self, path: str | os.PathLike[str] = "causal_runs.db", *, create: bool = True, cache_size: int = 64
    ):
        self.path = str(path)
        self._lock = threading.RLock()
        self._cache: OrderedDict[str, tuple[int, Trajectory]] = OrderedDict()
        self._cache_size = cache_size
        in_memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        if not in_memory:
            file = Path(self.path)
            if file.is_dir():
                raise StoreError(f"span store path {self.path} is a directory, not a SQLite file")
            if not file.exists():
                if not create:
                    raise FileNotFoundError(f"span store not found: {self.path}")
                file.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        try:
            if not in_memory:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            migrate(self._conn, self.path)
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise StoreError(f"cannot open span store {self.path}: {exc}") from exc
            raise

    # --- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteSpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _transaction(self, work: Callable[[], Any], what: str) -> Any:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work()
                self._conn.execute("COMMIT")
                return result
            except BaseException as exc:
                self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(
                        f"{what} failed in span store {self.path}; nothing was written: {exc}"
                    ) from exc
                raise

    # --- spans ---------------------------------------------------------------------------
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        rows = []
        for r in records:  # encode everything first: a bad span aborts before any write
            encoded = encode_span(r)
            facts = span_facts(r)
            rows.append(
                (
                    r.trace_id,
                    r.span_id,
                    r.parent_span_id,
                    r.name,
                    r.kind,
                    r.start_time_ns,
                    r.end_time_ns,
                    r.status_code,
                    r.status_message,
                    encoded["attributes"],
                    encoded["events"],
                    encoded["links"],
                    encoded["resource"],
                    r.scope,
                    facts.type,
                    int(facts.declared_run),
                    facts.hop_index,
                    facts.answer_text,
                )
            )
        if not rows:
            return
        run_ids = list(dict.fromkeys(r.trace_id for r in records))

        def work() -> None:
            self._conn.executemany(
                f"INSERT OR REPLACE INTO spans ({_SPAN_COLUMNS}, span_type, declared_run, hop_index, answer_text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            for run_id in run_ids:
                self._refresh_run(run_id)

        self._transaction(work, f"writing {len(rows)} spans")

    def _refresh_run(self, run_id: str) -> None:
        """Recompute the runs row of ``run_id`` from its spans and annotations (inside a transaction)."""
        facts = [
            SpanFacts(
                span_id=row["span_id"],
                parent_span_id=row["parent_span_id"],
                start_time_ns=row["start_time_ns"],
                end_time_ns=row["end_time_ns"],
                type=row["span_type"],
                declared_run=bool(row["declared_run"]),
                hop_index=row["hop_index"],
                answer_text=row["answer_text"],
            )
            for row in self._conn.execute(
                "SELECT span_id, parent_span_id, start_time_ns, end_time_ns, span_type, declared_run, hop_index, "
                "answer_text FROM spans WHERE trace_id = ?",
                (run_id,),
            )
        ]
        root_facts = choose_root(facts)
        root = None
        if root_facts is not None:
            row = self._conn.execute(
                f"SELECT {_SPAN_COLUMNS} FROM spans WHERE trace_id = ? AND span_id = ?",
                (run_id, root_facts.span_id),
            ).fetchone()
            root = decode_span(row)
        existing = self._conn.execute("SELECT annotations FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        annotations = Annotations.model_validate_json(existing["annotations"]) if existing else Annotations()
        run_facts = summarize_run(run_id, facts, root)
        summary = effective_summary(run_facts, annotations)
        lineage = annotations.lineage or run_facts.lineage
        self._conn.execute(
            """INSERT INTO runs (run_id, thread_id, graph, started_at_ns, ended_at_ns, status, answer, n_hops,
                   n_spans, has_root, is_run, outcome, reference, labels, lineage, parent_run_id, annotations,
                   version)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
               ON CONFLICT (run_id) DO UPDATE SET
                   thread_id = excluded.thread_id, graph = excluded.graph,
                   started_at_ns = excluded.started_at_ns, ended_at_ns = excluded.ended_at_ns,
                   status = excluded.status, answer = excluded.answer, n_hops = excluded.n_hops,
                   n_spans = excluded.n_spans, has_root = excluded.has_root, is_run = excluded.is_run,
                   outcome = excluded.outcome,
                   reference = excluded.reference, labels = excluded.labels, lineage = excluded.lineage,
                   parent_run_id = excluded.parent_run_id, annotations = excluded.annotations,
                   version = runs.version + 1""",
            (
                run_id,
                summary.thread_id,
                summary.graph,
                run_facts.started_at_ns,
                run_facts.ended_at_ns,
                summary.status.value,
                summary.answer,
                summary.n_hops,
                summary.n_spans,
                int(run_facts.has_root),
                int(run_facts.is_run),
                summary.outcome.value if summary.outcome is not None else None,
                annotations.reference if annotations.reference is not None else run_facts.reference,
                dumps(summary.labels, f"labels of run {run_id}"),
                lineage.model_dump_json() if lineage is not None else None,
                summary.parent_run_id,
                annotations.model_dump_json(),
            ),
        )

    def get_spans(self, run_id: str) -> list[SpanRecord]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_SPAN_COLUMNS} FROM spans WHERE trace_id = ? ORDER BY start_time_ns, span_id",
                (run_id,),
            ).fetchall()
        if not rows:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        return [decode_span(row) for row in rows]

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
    ) -> list[RunSummary]:
        wanted = normalize_outcome(outcome)
        check_limit(limit)
        check_label(label)
        where: list[str] = ["is_run = 1"]
        params: list[Any] = []
        if wanted is Outcome.UNKNOWN:
            where.append("(outcome = 'unknown' OR outcome IS NULL)")
        elif wanted is not None:
            where.append("outcome = ?")
            params.append(wanted.value)
        for column, op, value in (
            ("thread_id", "=", thread_id),
            ("started_at_ns", ">=", to_ns(since)),
            ("started_at_ns", "<=", to_ns(until)),
            ("parent_run_id", "=", parent_run_id),
        ):
            if value is not None:
                where.append(f"{column} {op} ?")
                params.append(value)
        sql = "SELECT * FROM runs WHERE " + " AND ".join(where)
        sql += " ORDER BY started_at_ns IS NULL, started_at_ns DESC, run_id"
        if limit is not None and label is None:
            sql += f" LIMIT {int(limit)}"
        out = []
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        for row in rows:
            summary = _summary(row)
            if label is not None and not label_matches(summary.labels, label):
                continue
            out.append(summary)
            if limit is not None and len(out) >= limit:
                break
        return out

    def resolve_run_id(self, run_id_or_prefix: str) -> str:
        wanted = run_id_or_prefix.strip().lower()
        with self._lock:
            if self._conn.execute("SELECT 1 FROM runs WHERE run_id = ? AND is_run = 1", (wanted,)).fetchone():
                return wanted
            known = [
                row["run_id"]
                for row in self._conn.execute(
                    "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? AND is_run = 1 LIMIT 6",
                    (len(wanted), wanted),
                )
            ]
        return match_run_prefix(wanted, known)

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
        if labels is not None:
            dumps(labels, f"labels for run {run_id}")

        def work() -> None:
            row = self._conn.execute("SELECT annotations FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
            current = Annotations.model_validate_json(row["annotations"])
            merged = current.merged(
                outcome=merged_outcome, reference=reference, labels=labels, lineage=lineage
            )
            self._conn.execute(
                "UPDATE runs SET annotations = ? WHERE run_id = ?", (merged.model_dump_json(), run_id)
            )
            self._refresh_run(run_id)

        self._transaction(work, f"annotating run {run_id}")

    def get_trajectory(self, run_id: str) -> Trajectory:
        with self._lock:
            row = self._conn.execute(
                "SELECT version, annotations FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
            cached = self._cache.get(run_id)
            if cached is not None and cached[0] == row["version"]:
                self._cache.move_to_end(run_id)
                return stitch_from_store(self.get_trajectory, cached[1].model_copy(deep=True))
            spans = self.get_spans(run_id)
        annotations = Annotations.model_validate_json(row["annotations"])
        trajectory = overlay(build_trajectory(spans, run_id=run_id), annotations)
        with self._lock:
            self._cache[run_id] = (row["version"], trajectory)
            self._cache.move_to_end(run_id)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return stitch_from_store(self.get_trajectory, trajectory.model_copy(deep=True))

    # --- derived records -----------------------------------------------------------------
    def put_record(self, kind: str, run_id: str, payload: dict[str, Any]) -> str:
        encoded = encode_payload(kind, run_id, payload)
        record_id = uuid.uuid4().hex
        created = datetime.fromtimestamp(time.time()).astimezone().isoformat()
        self._transaction(
            lambda: self._conn.execute(
                "INSERT INTO records (id, kind, run_id, created, payload) VALUES (?, ?, ?, ?, ?)",
                (record_id, kind, run_id, created, encoded),
            ),
            f"storing a {kind!r} record",
        )
        return record_id

    def get_records(self, kind: str, run_id: str | None = None) -> list[dict[str, Any]]:
        return [r.payload for r in self.list_records(kind, run_id)]

    def list_records(self, kind: str | None = None, run_id: str | None = None) -> list[StoredRecord]:
        """Derived records with their ids and creation times, oldest first."""
        where, params = [], []
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        sql = "SELECT * FROM records" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY seq"
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [
            StoredRecord(
                id=row["id"],
                kind=row["kind"],
                run_id=row["run_id"],
                created=datetime.fromisoformat(row["created"]),
                payload=json.loads(row["payload"]),
            )
            for row in rows
        ]


def _summary(row: sqlite3.Row) -> RunSummary:
    return RunSummary(
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        graph=row["graph"],
        started_at=datetime_from_ns(row["started_at_ns"]),
        ended_at=datetime_from_ns(row["ended_at_ns"]),
        status=row["status"],
        outcome=row["outcome"],
        answer=row["answer"],
        n_hops=row["n_hops"],
        n_spans=row["n_spans"],
        labels=json.loads(row["labels"]),
        parent_run_id=row["parent_run_id"],
    )
