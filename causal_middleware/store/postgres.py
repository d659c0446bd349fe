"""The shared span store: PostgreSQL, written by many agent processes at once, read by anyone.

Opened from a URL (``postgresql://user@host:5432/db``); its tables live in their own schema
(default ``causal_mw``; ``?causal_schema=NAME`` in the URL picks another), so it sits beside
LangGraph's ``PostgresSaver`` tables in the same database. Needs psycopg 3 and psycopg_pool
(``pip install 'causal-middleware[postgres]'``), imported only when a Postgres store is opened.

Tables (same meaning as the SQLite store's): ``spans``, ``runs`` (recomputed from the run's spans
after every batch, plus its annotations and ``sort_key``, the listing order's key), ``run_labels``
(one row per label: key, the value text a filter compares, the run's sort key), ``records``
(derived records), ``meta`` (writer counters) and ``repair_queue`` (the durable repair queue,
:mod:`causal_middleware.store.queue`). ``schema_migrations`` holds the versions applied: opening
runs the missing migrations under a transaction-scoped advisory lock, re-reading the version
under it, so processes starting at once all succeed and only the first migrates; a schema
written by a newer version fails with a clear error.

Writes: one transaction per batch, the spans upserted with ``executemany`` (pipelined), the runs
touched recomputed in a few set-based queries; writers of the same run serialise on a per-run
advisory lock taken in run-id order (no deadlocks), writers of different runs never wait for
each other. Reads go through indexes in the listing order (newest first, runs without a start
last, ties by run id), label filters through ``run_labels``, summary columns only, keyset paging
with ``after``. Connections come from a psycopg pool (``max_size`` per process).

Errors leave as one-line :class:`StoreError`\\ s naming the store (its URL without password):
:class:`StoreBusyError` for lock timeouts, deadlocks and an unreachable server (retryable: the
background writer retries them), :class:`StoreFullError`, :class:`StoreReadOnlyError`.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
    SUMMARY_COLUMNS,
    Annotations,
    StoredRecord,
    check_label,
    check_limit,
    decode_span,
    dumps,
    effective_summary,
    encode_payload,
    encode_span,
    normalize_outcome,
    overlay,
    summary_from_row,
    summary_label_check,
    to_ns,
)
from causal_middleware.store._labels import label_rows, label_texts
from causal_middleware.store.base import (
    RunSummary,
    SpanStore,
    StoreBusyError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    match_run_prefix,
)
from causal_middleware.store.queue import JobState, Lease, LeaseLostError, QueueEntry
from causal_middleware.store.stitch import stitch_from_store

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresSpanStore", "StoreUnreachableError", "is_postgres_url", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
DEFAULT_SCHEMA = "causal_mw"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_MIN_NS = -(2**63) + 1  # the sort key of runs without a start: last in a descending order
_URL_SCHEMES = ("postgresql://", "postgres://")
_INSTALL_HINT = "pip install 'causal-middleware[postgres]' (psycopg 3 and psycopg_pool)"

_MIGRATION_V1 = """
CREATE TABLE {s}.spans (
    trace_id text COLLATE "C" NOT NULL,
    span_id text COLLATE "C" NOT NULL,
    parent_span_id text,
    name text NOT NULL,
    kind text NOT NULL,
    start_time_ns bigint NOT NULL,
    end_time_ns bigint,
    status_code text NOT NULL,
    status_message text,
    attributes text NOT NULL,
    events text NOT NULL,
    links text NOT NULL,
    resource text NOT NULL,
    scope text,
    span_type text,
    declared_run boolean NOT NULL DEFAULT false,
    hop_index integer,
    answer_text text,
    PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX spans_by_start ON {s}.spans (trace_id, start_time_ns, span_id);
CREATE TABLE {s}.runs (
    run_id text COLLATE "C" PRIMARY KEY,
    thread_id text,
    graph text,
    started_at_ns bigint,
    ended_at_ns bigint,
    sort_key bigint NOT NULL,
    status text NOT NULL,
    answer text,
    n_hops integer NOT NULL DEFAULT 0,
    n_spans integer NOT NULL DEFAULT 0,
    has_root boolean NOT NULL DEFAULT false,
    is_run boolean NOT NULL DEFAULT true,
    outcome text,
    reference text,
    labels text NOT NULL DEFAULT '{{}}',
    lineage text,
    parent_run_id text COLLATE "C",
    annotations text NOT NULL DEFAULT '{{}}',
    version bigint NOT NULL DEFAULT 1
);
CREATE INDEX runs_listing ON {s}.runs (sort_key DESC, run_id) WHERE is_run;
CREATE INDEX runs_by_thread ON {s}.runs (thread_id, sort_key DESC, run_id) WHERE is_run;
CREATE INDEX runs_by_parent ON {s}.runs (parent_run_id, sort_key DESC, run_id) WHERE is_run;
CREATE INDEX runs_by_outcome ON {s}.runs (outcome, sort_key DESC, run_id) WHERE is_run;
CREATE TABLE {s}.run_labels (
    run_id text COLLATE "C" NOT NULL,
    key text NOT NULL,
    value text,
    sort_key bigint NOT NULL
);
CREATE INDEX run_labels_by_run ON {s}.run_labels (run_id);
CREATE INDEX run_labels_by_value ON {s}.run_labels (key, value, sort_key DESC, run_id);
CREATE TABLE {s}.records (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    kind text NOT NULL,
    run_id text NOT NULL,
    created timestamptz NOT NULL DEFAULT now(),
    payload text NOT NULL
);
CREATE INDEX records_by_kind ON {s}.records (kind, run_id, seq);
CREATE TABLE {s}.meta (key text PRIMARY KEY, value bigint NOT NULL DEFAULT 0);
CREATE TABLE {s}.repair_queue (
    run_id text COLLATE "C" PRIMARY KEY,
    state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done', 'dead')),
    attempts integer NOT NULL DEFAULT 0,
    lease_token text,
    lease_owner text,
    lease_until timestamptz,
    available_at timestamptz NOT NULL DEFAULT now(),
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    outcome text
);
CREATE INDEX repair_queue_ready ON {s}.repair_queue (available_at) WHERE state = 'queued';
CREATE INDEX repair_queue_leases ON {s}.repair_queue (lease_until) WHERE state = 'leased'
"""

# MIGRATIONS[n] brings a schema at version n-1 to version n (statements, ``{s}`` = the schema).
MIGRATIONS: dict[int, str] = {1: _MIGRATION_V1}

_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, start_time_ns, end_time_ns, status_code, status_message, "
    "attributes, events, links, resource, scope"
)
_SPAN_KEYS = tuple(c.strip() for c in _SPAN_COLUMNS.split(","))
_STAGE_KEYS = (*_SPAN_KEYS, "span_type", "declared_run", "hop_index", "answer_text")
_STAGE_COLUMNS = ", ".join(_STAGE_KEYS)
_STAGE = "pg_temp.causal_mw_span_stage"
_RUN_COLUMNS = (
    "run_id, thread_id, graph, started_at_ns, ended_at_ns, sort_key, status, answer, n_hops, n_spans, "
    "has_root, is_run, outcome, reference, labels, lineage, parent_run_id, annotations"
)


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a Postgres store (a ``postgresql://`` or ``postgres://`` URL)."""
    return isinstance(target, str) and target.strip().lower().startswith(_URL_SCHEMES)


def split_store_url(url: str) -> tuple[str, str, str]:
    """(libpq URL, schema, URL shown in messages): ``causal_schema`` is taken out of the query,
    the password out of the shown URL."""
    parts = urlsplit(url.strip())
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept = []
    for key, value in query:
        if key == "causal_schema":
            schema = value
        else:
            kept.append((key, value))
    if not _SCHEMA_NAME.match(schema):
        raise StoreError(
            f"causal_schema {schema!r} in the store URL must be a lower-case SQL name "
            "(letters, digits, underscores; at most 63 characters)"
        )
    conninfo = urlunsplit(parts._replace(query=urlencode(kept)))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        netloc = userinfo.partition(":")[0] + "@" + host
    shown = urlunsplit(parts._replace(netloc=netloc, query=""))
    return conninfo, schema, f"{shown}#{schema}"


def _import_psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(f"a postgresql:// store needs psycopg 3 and psycopg_pool: {_INSTALL_HINT}") from exc
    return psycopg, psycopg_pool


class StoreUnreachableError(StoreBusyError):
    """The database server cannot be reached (down, restarting, refusing): worth retrying."""


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def store_error(exc: BaseException, what: str) -> StoreError:
    """A one-line :class:`StoreError` of the fitting subclass for a psycopg (or pool) error."""
    psycopg, psycopg_pool = _import_psycopg()
    errors = psycopg.errors
    text = _first_line(exc)
    if isinstance(exc, errors.LockNotAvailable | errors.DeadlockDetected | errors.SerializationFailure):
        return StoreBusyError(f"{what}: locked by another writer ({text})")
    if isinstance(exc, errors.DiskFull | errors.OutOfMemory | errors.ProgramLimitExceeded):
        return StoreFullError(f"{what}: the database is full ({text})")
    if isinstance(exc, errors.ReadOnlySqlTransaction | errors.InsufficientPrivilege):
        return StoreReadOnlyError(f"{what}: not writable ({text})")
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.OperationalError):
        return StoreUnreachableError(f"{what}: cannot reach the database ({text})")
    return StoreError(f"{what}: {text}")


class PostgresSpanStore(SpanStore):
    """Span store in a PostgreSQL schema (see the module docstring).

    ``create=False`` opens an existing store only (FileNotFoundError when the schema holds none),
    as readers such as the CLI want. ``max_size``: connections this process keeps at most.
    Instrumentation writes to it from a background writer; its reads wait for the runs still
    queued for it in this process.
    """

    background_writes: ClassVar[bool] = True

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout_s: float = 10.0,
        cache_size: int = 64,
    ) -> None:
        if not is_postgres_url(url):
            raise StoreError(f"not a PostgreSQL URL: {url!r} (expected postgresql://user@host:port/database)")
        self._psycopg, pool_module = _import_psycopg()
        self.conninfo, self.schema, self.path = split_store_url(url)
        self._s = self.schema  # validated: a plain SQL name
        self._connect_timeout = max(1, int(connect_timeout_s))
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[int, Trajectory]] = OrderedDict()
        self._cache_size = cache_size
        self._staged: weakref.WeakSet[Any] = weakref.WeakSet()  # connections with the staging table
        self._migrate(create)
        self._pool: ConnectionPool = pool_module.ConnectionPool(
            self.conninfo,
            min_size=min(min_size, max_size),
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": self._connect_timeout},
            timeout=connect_timeout_s + 20.0,
            name=f"causal-mw:{self.schema}",
            open=True,
        )
        self._closed = False

    # --- lifecycle -----------------------------------------------------------------------
    def _migrate(self, create: bool) -> None:
        """Bring the schema to :data:`SCHEMA_VERSION` (see the module docstring)."""
        what = f"cannot open span store {self.path}"
        try:
            with self._psycopg.connect(
                self.conninfo, autocommit=True, connect_timeout=self._connect_timeout
            ) as conn:
                found = self._applied_version(conn)
                if found is None and not create:
                    raise FileNotFoundError(
                        f"span store not found: {self.path} (the database has no schema {self.schema!r} "
                        "with a span store; record a run first)"
                    )
                self._check_version(found)
                if found == SCHEMA_VERSION:
                    return
                with conn.transaction():
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.schema}/migrate",)
                    )
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._s}")
                    conn.execute(
                        f"CREATE TABLE IF NOT EXISTS {self._s}.schema_migrations "
                        "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                    )
                    found = self._applied_version(conn) or 0  # re-read under the lock
                    self._check_version(found)
                    for version in range(found + 1, SCHEMA_VERSION + 1):
                        for statement in MIGRATIONS[version].format(s=self._s).split(";"):
                            if statement.strip():
                                conn.execute(statement)
                        conn.execute(
                            f"INSERT INTO {self._s}.schema_migrations (version) VALUES (%s)", (version,)
                        )
        except self._psycopg.Error as exc:
            raise store_error(exc, what) from exc

    def _applied_version(self, conn: psycopg.Connection[Any]) -> int | None:
        row = conn.execute("SELECT to_regclass(%s)", (f"{self.schema}.schema_migrations",)).fetchone()
        if row is None or row[0] is None:
            return None
        found = conn.execute(f"SELECT coalesce(max(version), 0) FROM {self._s}.schema_migrations").fetchone()
        return int(found[0]) if found is not None else 0

    def _check_version(self, found: int | None) -> None:
        if found is not None and found > SCHEMA_VERSION:
            raise StoreError(
                f"span store {self.path} has schema version {found}, newer than this causal-middleware "
                f"supports ({SCHEMA_VERSION}); upgrade causal-middleware to open it"
            )

    @property
    def schema_version(self) -> int:
        with self._reading("reading the schema version") as conn:
            return self._applied_version(conn) or 0

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresSpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pending_key(self) -> str:
        return f"postgres:{self.path}"

    @contextmanager
    def _reading(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except (self._psycopg.Error, _pool_timeout()) as exc:
            raise store_error(exc, f"{what} in span store {self.path}") from exc

    @contextmanager
    def _transaction(
        self, what: str, lock_timeout_s: float | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                if lock_timeout_s is not None:
                    conn.execute(f"SET LOCAL lock_timeout = '{max(1, int(lock_timeout_s * 1000))}ms'")
                yield conn
        except (self._psycopg.Error, _pool_timeout()) as exc:
            raise store_error(exc, f"{what} failed in span store {self.path}; nothing was written") from exc

    # --- spans ---------------------------------------------------------------------------
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        self._write(records, None, None)

    def write_batch(
        self,
        records: Sequence[SpanRecord],
        *,
        busy_timeout_s: float | None = None,
        counters: Mapping[str, int] | None = None,
    ) -> None:
        self._write(records, counters, busy_timeout_s)

    def _write(
        self, records: Sequence[SpanRecord], counters: Mapping[str, int] | None, lock_timeout_s: float | None
    ) -> None:
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
                    facts.declared_run,
                    facts.hop_index,
                    facts.answer_text,
                )
            )
        increments = sorted((k, int(v)) for k, v in (counters or {}).items() if v)
        if not rows and not increments:
            return
        # the last copy of a span wins (an upsert may not touch one row twice in a statement)
        rows = sorted({(row[0], row[1]): row for row in rows}.values(), key=lambda row: (row[0], row[1]))
        run_ids = sorted({row[0] for row in rows})
        what = f"writing {len(rows)} spans" if rows else "writing health counters"
        staged = None
        with self._transaction(what, lock_timeout_s) as conn:
            cur = conn.cursor()
            if rows:
                self._lock_runs(cur, run_ids)
                self._copy_spans(conn, cur, rows)
                self._refresh_runs(cur, run_ids)
                staged = conn
            if increments:
                cur.executemany(
                    f"INSERT INTO {self._s}.meta (key, value) VALUES (%s, %s) "
                    f"ON CONFLICT (key) DO UPDATE SET value = {self._s}.meta.value + excluded.value",
                    increments,
                )
        if staged is not None:  # committed: the connection keeps its staging table
            self._staged.add(staged)

    def _copy_spans(
        self, conn: psycopg.Connection[Any], cur: psycopg.Cursor[Any], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Upsert span rows: COPY into a per-connection staging table (one round trip for the
        batch), then one INSERT ... ON CONFLICT from it."""
        if conn not in self._staged:  # (re)created in this transaction: kept only if it commits
            cur.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (LIKE {self._s}.spans) ON COMMIT DELETE ROWS"
            )
        with cur.copy(f"COPY {_STAGE} ({_STAGE_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cur.execute(
            f"INSERT INTO {self._s}.spans ({_STAGE_COLUMNS}) SELECT {_STAGE_COLUMNS} FROM {_STAGE} "
            "ON CONFLICT (trace_id, span_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in _STAGE_KEYS[2:])
        )
        cur.execute(f"DELETE FROM {_STAGE}")  # a later batch in this transaction starts empty

    def _lock_runs(self, cur: psycopg.Cursor[Any], run_ids: Sequence[str]) -> None:
        """Serialise writers of the same runs (taken in run-id order: no deadlocks)."""
        cur.executemany(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [(f"{self.schema}/run/{run_id}",) for run_id in run_ids],
        )

    def _refresh_runs(self, cur: psycopg.Cursor[Any], run_ids: Sequence[str]) -> None:
        """Recompute the runs rows (and label rows) of ``run_ids`` from their spans and annotations."""
        facts: dict[str, list[SpanFacts]] = defaultdict(list)
        cur.execute(
            "SELECT trace_id, span_id, parent_span_id, start_time_ns, end_time_ns, span_type, declared_run, "
            f"hop_index, answer_text FROM {self._s}.spans WHERE trace_id = ANY(%s)",
            (list(run_ids),),
        )
        for row in cur.fetchall():
            facts[row[0]].append(
                SpanFacts(
                    span_id=row[1],
                    parent_span_id=row[2],
                    start_time_ns=row[3],
                    end_time_ns=row[4],
                    type=row[5],
                    declared_run=bool(row[6]),
                    hop_index=row[7],
                    answer_text=row[8],
                )
            )
        roots = {run_id: choose_root(facts[run_id]) for run_id in run_ids}
        wanted = [(run_id, root.span_id) for run_id, root in roots.items() if root is not None]
        root_spans: dict[str, SpanRecord] = {}
        if wanted:
            cur.execute(
                f"SELECT {_SPAN_COLUMNS} FROM {self._s}.spans WHERE (trace_id, span_id) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([w[0] for w in wanted], [w[1] for w in wanted]),
            )
            for row in cur.fetchall():
                root_spans[row[0]] = decode_span(dict(zip(_SPAN_KEYS, row, strict=True)))
        cur.execute(
            f"SELECT run_id, annotations FROM {self._s}.runs WHERE run_id = ANY(%s)", (list(run_ids),)
        )
        existing = {row[0]: Annotations.model_validate_json(row[1]) for row in cur.fetchall()}
        run_rows: list[tuple[Any, ...]] = []
        label_values: list[tuple[str, str, str | None, int]] = []
        for run_id in run_ids:
            annotations = existing.get(run_id, Annotations())
            run_facts = summarize_run(run_id, facts[run_id], root_spans.get(run_id))
            summary = effective_summary(run_facts, annotations)
            lineage = annotations.lineage or run_facts.lineage
            sort_key = run_facts.started_at_ns if run_facts.started_at_ns is not None else _MIN_NS
            run_rows.append(
                (
                    run_id,
                    summary.thread_id,
                    summary.graph,
                    run_facts.started_at_ns,
                    run_facts.ended_at_ns,
                    sort_key,
                    summary.status.value,
                    summary.answer,
                    summary.n_hops,
                    summary.n_spans,
                    run_facts.has_root,
                    run_facts.is_run,
                    summary.outcome.value if summary.outcome is not None else None,
                    annotations.reference if annotations.reference is not None else run_facts.reference,
                    dumps(summary.labels, f"labels of run {run_id}"),
                    lineage.model_dump_json() if lineage is not None else None,
                    summary.parent_run_id,
                    annotations.model_dump_json(),
                )
            )
            label_values.extend((run_id, key, value, sort_key) for key, value in label_rows(summary.labels))
        marks = ", ".join(["%s"] * 18)
        updates = ", ".join(f"{c.strip()} = excluded.{c.strip()}" for c in _RUN_COLUMNS.split(",")[1:])
        cur.executemany(
            f"INSERT INTO {self._s}.runs ({_RUN_COLUMNS}) VALUES ({marks}) ON CONFLICT (run_id) DO UPDATE SET "
            f"{updates}, version = {self._s}.runs.version + 1",
            run_rows,
        )
        cur.execute(f"DELETE FROM {self._s}.run_labels WHERE run_id = ANY(%s)", (list(run_ids),))
        if label_values:
            cur.executemany(
                f"INSERT INTO {self._s}.run_labels (run_id, key, value, sort_key) VALUES (%s, %s, %s, %s)",
                label_values,
            )

    def read_health(self) -> dict[str, int]:
        self._await_pending()  # the counters ride with the runs still queued
        with self._reading("reading health counters") as conn:
            rows = conn.execute(f"SELECT key, value FROM {self._s}.meta ORDER BY key").fetchall()
        return {row[0]: int(row[1]) for row in rows}

    def get_spans(self, run_id: str) -> list[SpanRecord]:
        self._await_pending(run_id)
        return self._read_spans(run_id)

    def _read_spans(self, run_id: str) -> list[SpanRecord]:
        with self._reading(f"reading the spans of run {run_id}") as conn:
            rows = conn.execute(
                f"SELECT {_SPAN_COLUMNS} FROM {self._s}.spans WHERE trace_id = %s ORDER BY start_time_ns, span_id",
                (run_id,),
            ).fetchall()
        if not rows:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        return [decode_span(dict(zip(_SPAN_KEYS, row, strict=True))) for row in rows]

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
        self._await_pending()
        with self._reading("listing runs") as conn:
            return self._list_runs(conn, wanted, thread_id, since, until, label, parent_run_id, limit, after)

    def _list_runs(
        self,
        conn: psycopg.Connection[Any],
        wanted: Outcome | None,
        thread_id: str | None,
        since: datetime | None,
        until: datetime | None,
        label: str | None,
        parent_run_id: str | None,
        limit: int | None,
        after: str | None,
    ) -> list[RunSummary]:
        """One ordered, LIMITed query in the listing order (the label table driving it for a label
        filter); pages after ``after`` by keyset."""
        where: list[str] = ["r.is_run"]
        params: list[Any] = []
        if wanted is Outcome.UNKNOWN:
            where.append("(r.outcome = 'unknown' OR r.outcome IS NULL)")
        elif wanted is not None:
            where.append("r.outcome = %s")
            params.append(wanted.value)
        for condition, value in (
            ("r.thread_id = %s", thread_id),
            ("r.sort_key >= %s", to_ns(since)),
            ("r.started_at_ns IS NOT NULL AND r.sort_key <= %s", to_ns(until)),
            ("r.parent_run_id = %s", parent_run_id),
        ):
            if value is not None:
                where.append(condition)
                params.append(value)
        cursor: tuple[int, str] | None = None
        if after is not None:
            row = conn.execute(f"SELECT sort_key FROM {self._s}.runs WHERE run_id = %s", (after,)).fetchone()
            if row is None:
                raise KeyError(
                    f"unknown run {after!r} (the 'after' of a listing): span store {self.path} has none"
                )
            cursor = (int(row[0]), after)
        source, order, id_column = f"{self._s}.runs AS r", "r.sort_key", "r.run_id"
        check: Callable[[Sequence[Any]], bool] | None = None
        exact = True
        if label is not None:
            condition, label_params, exact = self._label_plan(conn, label)
            check = None if exact else summary_label_check(label)
            if thread_id is None and parent_run_id is None:
                source = f"{self._s}.run_labels AS l JOIN {self._s}.runs AS r ON r.run_id = l.run_id"
                order, id_column = "l.sort_key", "l.run_id"
                where.insert(0, condition)
                params[:0] = label_params
            else:  # the thread's or parent's index drives, labels probed per run
                where.append(
                    f"EXISTS (SELECT 1 FROM {self._s}.run_labels AS l WHERE l.run_id = r.run_id AND {condition})"
                )
                params.extend(label_params)
        head = f"SELECT {SUMMARY_COLUMNS}, {order} FROM {source} WHERE " + " AND ".join(where)
        tail = f" ORDER BY {order} DESC, {id_column}"
        out: list[RunSummary] = []
        while True:
            sql, page_params = head, list(params)
            if cursor is not None:
                sql += f" AND {order} <= %s AND ({order} < %s OR {id_column} > %s)"
                page_params += [cursor[0], cursor[0], cursor[1]]
            chunk = None if limit is None else max(limit - len(out), 1 if exact else 32)
            sql += tail + (f" LIMIT {chunk}" if chunk is not None else "")
            rows = conn.execute(sql, page_params).fetchall()
            for row in rows:
                if check is not None and not check(row):
                    continue
                out.append(summary_from_row(row))
                if limit is not None and len(out) >= limit:
                    return out
            if chunk is None or len(rows) < chunk:
                return out
            cursor = (int(rows[-1][12]), rows[-1][0])

    def _label_plan(self, conn: psycopg.Connection[Any], label: str) -> tuple[str, list[Any], bool]:
        """SQL over ``run_labels AS l`` selecting every run the filter may match, its parameters,
        and whether it selects exactly the matches (one key, one value text, no label of that key
        whose value only Python can compare)."""
        key, sep, wanted = label.partition("=")
        key = key.strip()
        if not sep:
            return "l.key = %s", [key], True
        values = label_texts(wanted)
        inexact = conn.execute(
            f"SELECT 1 FROM {self._s}.run_labels WHERE key = %s AND value IS NULL LIMIT 1", (key,)
        ).fetchone()
        if len(values) == 1 and inexact is None:
            return "l.key = %s AND l.value = %s", [key, values[0]], True
        return "l.key = %s AND (l.value = ANY(%s) OR l.value IS NULL)", [key, values], False

    def resolve_run_id(self, run_id_or_prefix: str) -> str:
        wanted = run_id_or_prefix.strip().lower()
        self._await_pending(wanted if len(wanted) == 32 else None)
        with self._reading(f"looking up run {wanted}") as conn:
            if conn.execute(
                f"SELECT 1 FROM {self._s}.runs WHERE run_id = %s AND is_run", (wanted,)
            ).fetchone():
                return wanted
            known = [
                row[0]
                for row in conn.execute(
                    # a range of the primary key (run ids are lower-case hex: 'g' sorts after them)
                    f"SELECT run_id FROM {self._s}.runs WHERE run_id >= %s AND run_id < %s AND is_run LIMIT 6",
                    (wanted, wanted + "g"),
                )
            ]
        return match_run_prefix(wanted, [k for k in known if k.startswith(wanted)])

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
        with self._transaction(f"annotating run {run_id}") as conn:
            cur = conn.cursor()
            self._lock_runs(cur, [run_id])
            row = cur.execute(
                f"SELECT annotations FROM {self._s}.runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
            merged = Annotations.model_validate_json(row[0]).merged(
                outcome=merged_outcome, reference=reference, labels=labels, lineage=lineage
            )
            cur.execute(
                f"UPDATE {self._s}.runs SET annotations = %s WHERE run_id = %s",
                (merged.model_dump_json(), run_id),
            )
            self._refresh_runs(cur, [run_id])

    def get_annotations(self, run_id: str) -> Annotations:
        """What ``annotate`` set for the run (empty when nothing was); KeyError when unknown."""
        self._await_pending(run_id)
        with self._reading(f"reading run {run_id}") as conn:
            row = conn.execute(
                f"SELECT annotations FROM {self._s}.runs WHERE run_id = %s", (run_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        return Annotations.model_validate_json(row[0])

    def get_trajectory(self, run_id: str) -> Trajectory:
        self._await_pending(run_id)
        with self._reading(f"reading run {run_id}") as conn:
            row = conn.execute(
                f"SELECT version, annotations FROM {self._s}.runs WHERE run_id = %s", (run_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        version = int(row[0])
        with self._lock:
            cached = self._cache.get(run_id)
            hit = cached[1] if cached is not None and cached[0] == version else None
            if hit is not None:
                self._cache.move_to_end(run_id)
        if hit is None:
            annotations = Annotations.model_validate_json(row[1])
            hit = overlay(build_trajectory(self._read_spans(run_id), run_id=run_id), annotations)
            with self._lock:
                self._cache[run_id] = (version, hit)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return stitch_from_store(self.get_trajectory, hit.model_copy(deep=True))

    # --- derived records -----------------------------------------------------------------
    def put_record(self, kind: str, run_id: str, payload: dict[str, Any]) -> str:
        encoded = encode_payload(kind, run_id, payload)
        record_id = uuid.uuid4().hex
        with self._transaction(f"storing a {kind!r} record") as conn:
            self._insert_records(conn.cursor(), [(record_id, kind, run_id, encoded)])
        return record_id

    def _insert_records(self, cur: psycopg.Cursor[Any], rows: Sequence[tuple[str, str, str, str]]) -> None:
        cur.executemany(
            f"INSERT INTO {self._s}.records (id, kind, run_id, created, payload) "
            "VALUES (%s, %s, %s, clock_timestamp(), %s)",
            rows,
        )

    def get_records(self, kind: str, run_id: str | None = None) -> list[dict[str, Any]]:
        return [r.payload for r in self.list_records(kind, run_id)]

    def list_records(self, kind: str | None = None, run_id: str | None = None) -> list[StoredRecord]:
        """Derived records with their ids and creation times, oldest first."""
        where, params = [], []
        if kind is not None:
            where.append("kind = %s")
            params.append(kind)
        if run_id is not None:
            where.append("run_id = %s")
            params.append(run_id)
        sql = (
            f"SELECT id, kind, run_id, created, payload FROM {self._s}.records"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY seq"
        )
        with self._reading("reading records") as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            StoredRecord(id=row[0], kind=row[1], run_id=row[2], created=row[3], payload=json.loads(row[4]))
            for row in rows
        ]

    # --- the durable repair queue (causal_middleware.store.queue) ----------------------------
    def enqueue(self, run_id: str) -> bool:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
        with self._transaction(f"enqueueing run {run_id}") as conn:
            row = conn.execute(
                f"INSERT INTO {self._s}.repair_queue (run_id) VALUES (%s) ON CONFLICT (run_id) DO NOTHING "
                "RETURNING run_id",
                (run_id,),
            ).fetchone()
        return row is not None

    def claim(self, *, owner: str, lease_s: float, max_attempts: int) -> Lease | None:
        _check_positive(lease_s, "lease_s")
        _check_positive(max_attempts, "max_attempts")
        token = uuid.uuid4().hex
        q = f"{self._s}.repair_queue"
        with self._transaction("claiming a repair job") as conn:
            # a lease that expired on its last attempt (a worker killed each time) is dead
            conn.execute(
                f"UPDATE {q} SET state = 'dead', lease_token = NULL, updated_at = now(), "
                "last_error = coalesce(last_error || '; ', '') || 'lease expired on attempt ' || attempts "
                "WHERE state = 'leased' AND lease_until < now() AND attempts >= %s",
                (max_attempts,),
            )
            row = conn.execute(
                f"WITH job AS (SELECT run_id FROM {q} WHERE (state = 'queued' AND available_at <= now()) "
                "OR (state = 'leased' AND lease_until < now()) "
                "ORDER BY available_at, run_id LIMIT 1 FOR UPDATE SKIP LOCKED) "
                f"UPDATE {q} AS q SET state = 'leased', attempts = q.attempts + 1, lease_token = %s, "
                "lease_owner = %s, lease_until = now() + make_interval(secs => %s), updated_at = now() "
                "FROM job WHERE q.run_id = job.run_id RETURNING q.run_id, q.attempts",
                (token, owner, float(lease_s)),
            ).fetchone()
        if row is None:
            return None
        return Lease(run_id=row[0], token=token, attempt=int(row[1]), owner=owner, lease_s=float(lease_s))

    def renew(self, lease: Lease) -> bool:
        with self._transaction(f"renewing the lease on run {lease.run_id}") as conn:
            row = conn.execute(
                f"UPDATE {self._s}.repair_queue SET lease_until = clock_timestamp() + make_interval(secs => %s), "
                "updated_at = now() WHERE run_id = %s AND lease_token = %s AND state = 'leased' "
                "AND lease_until > clock_timestamp() RETURNING 1",
                (lease.lease_s, lease.run_id, lease.token),
            ).fetchone()
        return row is not None

    def _hold(self, cur: psycopg.Cursor[Any], lease: Lease) -> int:
        """Lock the job row if ``lease`` still holds it (its attempts), else LeaseLostError."""
        row = cur.execute(
            f"SELECT attempts FROM {self._s}.repair_queue WHERE run_id = %s AND lease_token = %s "
            "AND state = 'leased' AND lease_until > clock_timestamp() FOR UPDATE",
            (lease.run_id, lease.token),
        ).fetchone()
        if row is None:
            raise LeaseLostError(
                f"the lease of {lease.owner} on run {lease.run_id} (attempt {lease.attempt}) expired or was "
                "taken over; its result was not written"
            )
        return int(row[0])

    def complete(self, lease: Lease, records: Sequence[tuple[str, dict[str, Any]]], *, outcome: str) -> None:
        encoded = [
            (uuid.uuid4().hex, kind, lease.run_id, encode_payload(kind, lease.run_id, p))
            for kind, p in records
        ]
        with self._transaction(f"completing the repair job of run {lease.run_id}") as conn:
            cur = conn.cursor()
            self._hold(cur, lease)
            if encoded:
                self._insert_records(cur, encoded)
            cur.execute(
                f"UPDATE {self._s}.repair_queue SET state = 'done', outcome = %s, lease_token = NULL, "
                "lease_until = NULL, updated_at = now() WHERE run_id = %s",
                (outcome, lease.run_id),
            )

    def fail(self, lease: Lease, error: str, *, max_attempts: int, backoff_s: float) -> JobState:
        with self._transaction(f"failing the repair job of run {lease.run_id}") as conn:
            cur = conn.cursor()
            attempts = self._hold(cur, lease)
            state: JobState = "dead" if attempts >= max_attempts else "queued"
            cur.execute(
                f"UPDATE {self._s}.repair_queue SET state = %s, last_error = %s, lease_token = NULL, "
                "lease_until = NULL, available_at = now() + make_interval(secs => %s), updated_at = now() "
                "WHERE run_id = %s",
                (state, error[:2000], max(0.0, float(backoff_s)), lease.run_id),
            )
        return state

    def queue_entries(self, state: JobState | None = None) -> list[QueueEntry]:
        sql = (
            "SELECT run_id, state, attempts, lease_owner, lease_until, enqueued_at, updated_at, last_error, "
            f"outcome FROM {self._s}.repair_queue"
            + (" WHERE state = %s" if state is not None else "")
            + " ORDER BY enqueued_at, run_id"
        )
        with self._reading("reading the repair queue") as conn:
            rows = conn.execute(sql, [state] if state is not None else []).fetchall()
        keys = (
            "run_id",
            "state",
            "attempts",
            "owner",
            "lease_until",
            "enqueued_at",
            "updated_at",
            "last_error",
            "outcome",
        )
        return [QueueEntry.model_validate(dict(zip(keys, row, strict=True))) for row in rows]


def _pool_timeout() -> type[Exception]:
    from psycopg_pool import PoolTimeout

    return PoolTimeout


def _check_positive(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
