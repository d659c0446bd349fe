"""The embedded default span store: one SQLite file (WAL mode), safe to share between threads.

Tables: ``spans`` (one row per span, keyed by trace and span id, so re-exporting a span replaces
it), ``runs`` (one row per trace, recomputed from the run's spans after every batch, whatever
order spans arrive in, plus the run's annotations), ``records`` (derived records such as
interventions, diagnoses and repairs) and ``meta`` (counters the background writers keep: spans
written, spans dropped by reason). The schema version lives in ``PRAGMA user_version``; opening a
file written by a newer schema fails with a clear error instead of guessing. The migration runs
under the write lock and re-reads the version there, so processes opening a new file at once
all succeed.

Every SQLite error leaves as a one-line :class:`StoreError` naming the file and the real cause
(:class:`StoreBusyError`, :class:`StoreFullError`, :class:`StoreReadOnlyError`,
:class:`StoreCorruptError`). A file that cannot be written (read-only file, folder or media) is
opened read-only, falling back to SQLite's ``immutable`` mode when even the WAL index cannot be
created; writes then fail with :class:`StoreReadOnlyError`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

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
from causal_middleware.store.base import (
    RunSummary,
    SpanStore,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    match_run_prefix,
)

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_S = 30.0

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
# ``meta`` (writer counters) is created on first use, so files of version 1 without it stay valid
_META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL DEFAULT 0)"
# the oldest layout this code can read without migrating it (read-only stores)
MIN_READABLE_VERSION = 1

# SQLite primary result codes
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_CORRUPT = 5, 6, 8, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def store_error(exc: sqlite3.Error, what: str) -> StoreError:
    """A one-line :class:`StoreError` (of the fitting subclass): ``what`` (which names the store)
    and the real cause."""
    code = _primary_code(exc)
    text = str(exc)
    lowered = text.lower()
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in lowered:
        return StoreBusyError(f"{what}: locked by another writer ({text})")
    if code == _SQLITE_FULL or "disk is full" in lowered:
        return StoreFullError(f"{what}: disk full ({text})")
    if code == _SQLITE_READONLY or "readonly" in lowered or "read-only" in lowered:
        return StoreReadOnlyError(f"{what}: read-only ({text})")
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in lowered or "not a database" in lowered:
        return StoreCorruptError(f"{what}: the file is corrupted or not a span store ({text})")
    if code == _SQLITE_CANTOPEN or "unable to open" in lowered:
        return StoreReadOnlyError(f"{what}: {text} (is its folder or media read-only?)")
    return StoreError(f"{what}: {text}")


_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, start_time_ns, end_time_ns, status_code, status_message, "
    "attributes, events, links, resource, scope"
)


def migrate(conn: sqlite3.Connection, path: str = "<connection>") -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction; returns the version found.

    Raises :class:`StoreError` when the database was written by a newer schema. Safe when several
    processes open a new file at once: the version is read again under the write lock, so only the
    first one migrates.
    """
    found = _check_version(conn, path)
    if found == SCHEMA_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _check_version(conn, path)  # another process may have migrated while we waited
        if found < SCHEMA_VERSION:
            for version in range(found + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](conn)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return found


def _prepare_folder(file: Path, path: str) -> None:
    """Make the new store's folder, or say in one line why it cannot be made or written."""
    folder = file.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreReadOnlyError(
            f"cannot create span store {path}: cannot make its folder {folder} ({exc.strerror or exc})"
        ) from exc
    if not os.access(folder, os.W_OK):
        raise StoreReadOnlyError(
            f"cannot create span store {path}: its folder {folder} is not writable (read-only path or media)"
        )


def _retry_busy(work: Callable[[], Any], attempts: int = 50) -> Any:
    """Some lock waits bypass SQLite's busy handler (journal-mode changes, WAL recovery while
    other processes open the same new file): retry those briefly."""
    for attempt in range(attempts):
        try:
            return work()
        except sqlite3.OperationalError as exc:
            if _primary_code(exc) not in (_SQLITE_BUSY, _SQLITE_LOCKED) and "locked" not in str(exc):
                raise
            if attempt == attempts - 1:
                raise
            time.sleep(min(0.005 * (attempt + 1), 0.1))
    return None


def _check_version(conn: sqlite3.Connection, path: str) -> int:
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"span store {path} has schema version {found}, newer than this causal-middleware "
            f"supports ({SCHEMA_VERSION}); upgrade causal-middleware to open it"
        )
    return found


class SqliteSpanStore(SpanStore):
    """Span store in one SQLite file. ``path=":memory:"`` keeps it in memory.

    ``create=False`` opens an existing store only (FileNotFoundError otherwise), which is what
    readers such as the CLI want: reading never creates an empty database by accident.
    ``read_only``: True opens the file read-only; None (default) does so only when the file, its
    folder or its media cannot be written. Instrumentation writes to it from a background writer
    (``background_writes``); its reads wait for the runs still queued for this file.
    """

    background_writes: ClassVar[bool] = True

    def __init__(
        self,
        path: str | os.PathLike[str] = "causal_runs.db",
        *,
        create: bool = True,
        cache_size: int = 64,
        read_only: bool | None = None,
    ):
        self.path = str(path)
        self._lock = threading.RLock()
        self._cache: OrderedDict[str, tuple[int, Trajectory]] = OrderedDict()
        self._cache_size = cache_size
        self._in_memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        self._key = f"sqlite-memory:{id(self)}"
        self.read_only = bool(read_only)
        self.open_mode = "memory" if self._in_memory else "rw"
        may_fall_back = False
        if not self._in_memory:
            file = Path(self.path)
            if file.is_dir():
                raise StoreError(f"span store path {self.path} is a directory, not a SQLite file")
            if not file.exists():
                if not create:
                    raise FileNotFoundError(f"span store not found: {self.path}")
                if read_only:
                    raise StoreReadOnlyError(
                        f"cannot create span store {self.path}: asked to open it read-only"
                    )
                _prepare_folder(file, self.path)
            elif read_only is None:
                self.read_only = not os.access(file, os.W_OK)
                may_fall_back = True
            self._key = "sqlite:" + os.path.realpath(self.path)
        self._conn = self._connect(may_fall_back)

    def _connect(self, may_fall_back: bool) -> sqlite3.Connection:
        modes = (
            ["ro", "immutable"] if self.read_only else ["rw", *(["ro", "immutable"] if may_fall_back else [])]
        )
        last: sqlite3.Error | None = None
        for mode in modes:
            try:
                conn = self._open_as(mode)
            except sqlite3.Error as exc:
                last = exc
                if not isinstance(store_error(exc, ""), StoreReadOnlyError):
                    break  # only a file we may not write is worth opening read-only
                continue
            except StoreError:
                raise
            self.open_mode = mode
            self.read_only = mode != "rw"
            return conn
        assert last is not None
        verb = "open" if Path(self.path).exists() else "create"
        raise store_error(last, f"cannot {verb} span store {self.path}") from last

    def _open_as(self, mode: str) -> sqlite3.Connection:
        if mode == "rw":
            target, uri = self.path, False
        else:
            target = (
                "file:"
                + quote(os.path.abspath(self.path))
                + "?mode=ro"
                + ("&immutable=1" if mode == "immutable" else "")
            )
            uri = True
        conn = sqlite3.connect(
            target, timeout=DEFAULT_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False, uri=uri
        )
        conn.row_factory = sqlite3.Row
        try:
            if mode == "rw":
                if not self._in_memory:
                    _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
                    conn.execute("PRAGMA synchronous=NORMAL")
                _retry_busy(lambda: migrate(conn, self.path))
            else:
                found = _check_version(conn, self.path)
                if found < MIN_READABLE_VERSION:
                    raise StoreReadOnlyError(
                        f"cannot open span store {self.path}: it is read-only and holds no span store "
                        f"(schema version {found})"
                    )
                conn.execute("SELECT count(*) FROM runs").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

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
        with self._lock, self._reading("reading the schema version"):
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def pending_key(self) -> str:
        return self._key

    @contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(exc, f"{what} in span store {self.path}") from exc

    def _transaction(self, work: Callable[[], Any], what: str) -> Any:
        with self._lock:
            if self.read_only:
                raise StoreReadOnlyError(
                    f"{what} failed: span store {self.path} is opened read-only "
                    f"({self.open_mode}: the file, its folder or its media cannot be written); nothing was written"
                )
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                result = work()
                self._conn.execute("COMMIT")
                return result
            except BaseException as exc:
                if self._conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # the original error is the one worth reporting
                if isinstance(exc, sqlite3.Error):
                    raise store_error(
                        exc, f"{what} failed in span store {self.path}; nothing was written"
                    ) from exc
                raise

    # --- spans ---------------------------------------------------------------------------
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        self._write(records, None)

    def write_batch(
        self,
        records: Sequence[SpanRecord],
        *,
        busy_timeout_s: float | None = None,
        counters: Mapping[str, int] | None = None,
    ) -> None:
        if not records and not counters:
            return
        with self._lock:
            if busy_timeout_s is None:
                self._write(records, counters)
                return
            self._conn.execute(f"PRAGMA busy_timeout = {max(0, int(busy_timeout_s * 1000))}")
            try:
                self._write(records, counters)
            finally:
                try:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(DEFAULT_BUSY_TIMEOUT_S * 1000)}")
                except sqlite3.Error:
                    pass

    def _write(self, records: Sequence[SpanRecord], counters: Mapping[str, int] | None) -> None:
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
        increments = [(k, int(v)) for k, v in (counters or {}).items() if v]
        if not rows and not increments:
            return
        run_ids = list(dict.fromkeys(r.trace_id for r in records))

        def work() -> None:
            if rows:
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO spans ({_SPAN_COLUMNS}, span_type, declared_run, hop_index, answer_text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                for run_id in run_ids:
                    self._refresh_run(run_id)
            if increments:
                self._conn.execute(_META_TABLE)
                self._conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = meta.value + excluded.value",
                    increments,
                )

        self._transaction(work, f"writing {len(rows)} spans" if rows else "writing health counters")

    def read_health(self) -> dict[str, int]:
        with self._lock, self._reading("reading health counters"):
            if not self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone():
                return {}
            return {
                row["key"]: int(row["value"])
                for row in self._conn.execute("SELECT key, value FROM meta ORDER BY key")
            }

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
        self._await_pending(run_id)
        return self._read_spans(run_id)

    def _read_spans(self, run_id: str) -> list[SpanRecord]:
        with self._lock, self._reading(f"reading the spans of run {run_id}"):
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
        self._await_pending()
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
        with self._lock, self._reading("listing runs"):
            rows = self._conn.execute(sql, params).fetchall()
        for row in rows:
            with self._reading("listing runs"):
                summary = _summary(row)
            if label is not None and not label_matches(summary.labels, label):
                continue
            out.append(summary)
            if limit is not None and len(out) >= limit:
                break
        return out

    def resolve_run_id(self, run_id_or_prefix: str) -> str:
        wanted = run_id_or_prefix.strip().lower()
        self._await_pending(wanted if len(wanted) == 32 else None)
        with self._lock, self._reading(f"looking up run {wanted}"):
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
        self._await_pending(run_id)

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

    def get_annotations(self, run_id: str) -> Annotations:
        """What ``annotate`` set for the run (empty when nothing was); KeyError when unknown."""
        self._await_pending(run_id)
        with self._lock, self._reading(f"reading run {run_id}"):
            row = self._conn.execute("SELECT annotations FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        return Annotations.model_validate_json(row["annotations"])

    def get_trajectory(self, run_id: str) -> Trajectory:
        self._await_pending(run_id)
        with self._lock:
            with self._reading(f"reading run {run_id}"):
                row = self._conn.execute(
                    "SELECT version, annotations FROM runs WHERE run_id = ?", (run_id,)
                ).fetchone()
            if row is None:
                raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
            cached = self._cache.get(run_id)
            hit = cached[1] if cached is not None and cached[0] == row["version"] else None
            if hit is not None:
                self._cache.move_to_end(run_id)
            else:
                spans = self._read_spans(run_id)
        if hit is not None:  # stitched outside the lock: stitching reads the parent run
            return stitch_from_store(self.get_trajectory, hit.model_copy(deep=True))
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
        with self._lock, self._reading("reading records"):
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
