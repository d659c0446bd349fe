"""The embedded default span store: one SQLite file (WAL mode), safe to share between threads.
Writes go through one connection; reads through another of their own, so a read never waits for
the background writer's transaction.

Tables: ``spans`` (one row per span, keyed by trace and span id, so re-exporting a span replaces
it), ``runs`` (one row per trace, recomputed from the run's spans after every batch, whatever
order spans arrive in, plus the run's annotations), ``records`` (derived records such as
interventions, diagnoses and repairs) and ``meta`` (counters the background writers keep: spans
written, spans dropped by reason). The schema version lives in ``PRAGMA user_version``; opening a
file written by a newer schema fails with a clear error instead of guessing. The migration runs
under the write lock and re-reads the version there, so processes opening a new file at once
all succeed.

Derived structures, added to any version-1 file when it is opened for writing (by the same
migration, under the same write lock, checked again there, so files written before them open and
are brought forward): ``run_labels`` (one row per label of a run: key, the value as label filters
compare it, the run's sort key; kept by triggers on ``runs``, so code that predates the table keeps
it right too) and ``runs_listing``, the index whose order is the listing's (newest first, runs
without a start last, ties by run id). ``list_runs`` reads summary columns only, through these
indexes, with the LIMIT applied in SQL whatever the filters, and pages by keyset (``after``).

Version 2 packs the span columns (:mod:`causal_middleware.store._packing`): long string values
and each distinct resource are stored once in ``blobs`` (content-addressed: documents repeat
across runs, a run's spans share one resource), attribute names as short codes, longer JSON
deflated; version 1 rows stay readable beside version 2 rows. A run written in one batch is
summarised from the batch, not read back.

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, cast
from urllib.parse import quote

from causal_middleware.spans._json import loads
from causal_middleware.spans.builder import (
    RunFacts,
    SpanFacts,
    build_trajectory,
    choose_root,
    span_facts,
    summarize_run,
)
from causal_middleware.spans.health import health
from causal_middleware.spans.model import Lineage, Outcome, Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.spans.writer import QueuedAnnotation, writers_for
from causal_middleware.store._common import (
    SUMMARY_COLUMNS,
    Annotations,
    StoredRecord,
    TrajectoryCache,
    check_label,
    check_limit,
    dumps,
    effective_summary,
    encode_payload,
    needs_stitching,
    normalize_outcome,
    overlay,
    parent_reader,
    read_trajectory,
    summary_from_row,
    summary_label_check,
    to_ns,
)
from causal_middleware.store._labels import label_texts
from causal_middleware.store._packing import (
    BLOB_KEY,
    RESOURCE_PREFIX,
    blob_refs,
    blob_text,
    compact_json,
    decoded_names,
    lift_blobs,
    pack_json,
    unpack_attributes,
    unpack_json,
)
from causal_middleware.store._records import reread, row_facts, span_record
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
from causal_middleware.store.stitch import stitch_from_store

SCHEMA_VERSION = 2
_WRITTEN_RUNS = 32  # just-written runs kept for reading back without the file
_WRITTEN_MAX_SPANS = 128  # ...of at most this many spans: a bulk import must not hold its file in memory
_Written = tuple[int, Mapping[str, SpanFacts], Mapping[str, SpanRecord]]
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


def _migrate_to_v2(conn: sqlite3.Connection) -> None:
    # version 2 rows pack their columns (store/_packing.py); version 1 rows stay readable as they are
    conn.execute(
        "CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
    )


# MIGRATIONS[n] upgrades a database at version n-1 to version n.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_to_v1, 2: _migrate_to_v2}
# The sort key of the listing order: newest first, runs without a start last (SQLite sorts NULL
# lowest, so ``coalesce`` to the smallest integer keeps them last in a descending scan).
_MIN_NS = -9223372036854775807  # fits a 64-bit integer literal (-2**63 would be parsed as a real)
_SORT_KEY = f"coalesce({{row}}started_at_ns, {_MIN_NS})"
# A run's labels as label-filter rows: ``value`` is the text a ``key=value`` filter compares
# (strings as they are, integers in decimal, ``true``/``false``/``null``); NULL for reals, arrays,
# objects and integers past 64 bits, whose matches are checked in Python. Labels that are not a
# plain JSON object (``NaN`` in them) give one row with a NULL key: a candidate for every filter.
_LABELS_OK = "(CASE WHEN json_valid({row}labels) THEN json_type({row}labels) = 'object' ELSE 0 END)"
_LABEL_ROWS = (
    "INSERT INTO run_labels (run_id, key, value, sort_key) "
    "SELECT {row}run_id, j.key, CASE j.type WHEN 'text' THEN j.value "
    "WHEN 'integer' THEN CASE WHEN typeof(j.value) = 'integer' THEN CAST(j.value AS TEXT) END "
    "WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' END, "
    + _SORT_KEY
    + " FROM {source}json_each(CASE WHEN "
    + _LABELS_OK
    + " THEN {row}labels ELSE '{{}}' END) AS j; "
    "INSERT INTO run_labels (run_id, key, value, sort_key) SELECT {row}run_id, NULL, NULL, "
    + _SORT_KEY
    + " {source_only}WHERE NOT "
    + _LABELS_OK
)


def _label_rows(row: str, source: str = "") -> str:
    return _LABEL_ROWS.format(
        row=row,
        source=f"{source}, " if source else "",
        source_only=f"FROM {source} " if source else "",
    )


_REFRESH_LABELS = "DELETE FROM run_labels WHERE run_id = new.run_id; " + _label_rows("new.") + ";"
# name -> DDL of the derived structures (all derived from ``runs``; rebuilt when missing)
_DERIVED: dict[str, str] = {
    "runs_listing": f"CREATE INDEX IF NOT EXISTS runs_listing ON runs (is_run, {_SORT_KEY.format(row='')} DESC, run_id)",
    "run_labels": "CREATE TABLE IF NOT EXISTS run_labels "
    "(run_id TEXT NOT NULL, key TEXT, value TEXT, sort_key INTEGER NOT NULL)",
    "run_labels_by_run": "CREATE INDEX IF NOT EXISTS run_labels_by_run ON run_labels (run_id)",
    "run_labels_by_value": "CREATE INDEX IF NOT EXISTS run_labels_by_value "
    "ON run_labels (key, value, sort_key DESC, run_id)",
    "run_labels_by_key": "CREATE INDEX IF NOT EXISTS run_labels_by_key ON run_labels (key, sort_key DESC, run_id)",
    "run_labels_on_insert": "CREATE TRIGGER IF NOT EXISTS run_labels_on_insert AFTER INSERT ON runs BEGIN "
    + _REFRESH_LABELS
    + " END",
    "run_labels_on_update": "CREATE TRIGGER IF NOT EXISTS run_labels_on_update "
    "AFTER UPDATE OF labels, started_at_ns ON runs "
    "WHEN old.labels IS NOT new.labels OR old.started_at_ns IS NOT new.started_at_ns BEGIN "
    + _REFRESH_LABELS
    + " END",
    "run_labels_on_delete": "CREATE TRIGGER IF NOT EXISTS run_labels_on_delete AFTER DELETE ON runs BEGIN "
    "DELETE FROM run_labels WHERE run_id = old.run_id; END",
}


def _missing_derived(conn: sqlite3.Connection) -> list[str]:
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'run%'")}
    return [name for name in _DERIVED if name not in present]


def _add_derived(conn: sqlite3.Connection) -> None:
    """Create the derived structures a file lacks (inside the migration's transaction); a new
    ``run_labels`` is filled from the runs already stored."""
    missing = _missing_derived(conn)
    for name in missing:
        conn.execute(_DERIVED[name])
    if "run_labels" in missing:
        conn.execute("DELETE FROM run_labels")
        for statement in _label_rows("runs.", "runs").split("; "):
            conn.execute(statement)


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


def _restore(attributes: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """``restore_blobs(attributes, texts)``, with the names of each distinct stored key set decoded
    once (spans of one kind share their keys): names decoded, blob references replaced by their
    text, a missing blob left a reference."""
    names = decoded_names(tuple(attributes))
    values = [
        texts[v[BLOB_KEY]] if isinstance(v, dict) and len(v) == 1 and v.get(BLOB_KEY) in texts else v
        for v in attributes.values()
    ]
    return dict(zip(names, values, strict=True))


def _restored(attributes: dict[str, Any], refs: Sequence[int], texts: Mapping[str, str]) -> dict[str, Any]:
    """``_restore(attributes, texts)`` where ``refs`` are the positions of every value that is a
    one-key map holding a string under the blob key, and no other value holds a map or list there."""
    values = list(attributes.values())
    for at in refs:
        digest = values[at][BLOB_KEY]
        if digest in texts:
            values[at] = texts[digest]
    return dict(zip(decoded_names(tuple(attributes)), values, strict=True))


def _resource(text: str, parsed: dict[str, Any]) -> dict[str, Any]:
    """The resource of one decoded span. A flat resource (the usual: strings and numbers) is
    parsed once per read and each span gets its own copy of the dict (validation copies it); a
    nested one is parsed per span, so no two spans share a list."""
    hit = parsed.get(text)
    if hit is not None:
        return cast(dict[str, Any], hit)
    value = loads(text) if type(text) is str else json.loads(text)
    if isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values()):
        parsed[text] = value
    return cast(dict[str, Any], value)


def migrate(conn: sqlite3.Connection, path: str = "<connection>") -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`, with the derived label and listing indexes, in
    one transaction; returns the version found.

    Raises :class:`StoreError` when the database was written by a newer schema. Safe when several
    processes open a new file at once: the version is read again under the write lock, so only the
    first one migrates.
    """
    found = _check_version(conn, path)
    if found == SCHEMA_VERSION and not _missing_derived(conn):
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _check_version(conn, path)  # another process may have migrated while we waited
        if found < SCHEMA_VERSION:
            for version in range(found + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](conn)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        _add_derived(conn)  # re-checked under the lock: only the first opener builds them
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
    # its background writer also writes annotations queued behind a run's spans (see annotate)
    queued_annotations: ClassVar[bool] = True
    #: build a run the writer still holds whole from what it holds, not waiting for its write
    read_queued: bool = True

    def __init__(
        self,
        path: str | os.PathLike[str] = "causal_runs.db",
        *,
        create: bool = True,
        cache_size: int = 64,
        read_only: bool | None = None,
    ):
        self.path = str(path)
        # _lock guards the write connection (the writer holds it while it encodes and commits).
        # Reads of a file go through their own connection and lock, so they never wait for the
        # writer's transaction (WAL: a reader sees the last commit); memory and read-only stores
        # have one connection, shared under _lock.
        self._lock = threading.RLock()
        self._read_lock = threading.RLock()
        self._rconn: sqlite3.Connection | None = None
        self._closed = False
        self._facts_lock = threading.Lock()  # _run_facts, _written, _blob_cache (both threads use them)
        self._cache = TrajectoryCache(cache_size)
        self._in_memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        # the read connection opens the file later: by its absolute path, in case of a chdir
        self._file = self.path if self._in_memory else os.path.abspath(self.path)
        self._key = f"sqlite-memory:{id(self)}"
        self._label_index: bool | None = None  # whether the file has run_labels (read-only old files may not)
        self._blobs_table: bool | None = None  # whether the file has blobs (read-only version 1 files do not)
        self._known_blobs: set[str] = set()
        self._blob_cache: dict[str, str] = {}
        # run id -> (its runs-row version, the facts that row was computed from): an annotation
        # recomputes the row without reading the run's spans back while the version still matches
        self._run_facts: OrderedDict[str, tuple[int, RunFacts]] = OrderedDict()
        self._staged_facts: dict[str, tuple[int, RunFacts]] = {}  # this transaction's, kept on COMMIT
        # run id -> (its runs-row version, facts and records by span id): runs this store wrote
        # whole in one batch, read back from these records (not the file) while the version matches
        self._written: OrderedDict[str, _Written] = OrderedDict()
        self._staged_written: dict[str, _Written] = {}
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
        with self._read_lock:
            self._closed = True
            if self._rconn is not None:
                self._rconn.close()
                self._rconn = None

    def __enter__(self) -> SqliteSpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._read("reading the schema version") as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def pending_key(self) -> str:
        return self._key

    @contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(exc, f"{what} in span store {self.path}") from exc

    @contextmanager
    def _read(self, what: str) -> Iterator[sqlite3.Connection]:
        """The connection a read uses, held for the block, with errors named as ``what``."""
        if self._in_memory or self.read_only:
            with self._lock, self._reading(what):
                yield self._conn
            return
        with self._read_lock, self._reading(what):
            if self._rconn is None:
                if self._closed:
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                conn = sqlite3.connect(
                    self._file, timeout=DEFAULT_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                conn.row_factory = sqlite3.Row
                conn.execute("PRAGMA query_only = 1")
                self._rconn = conn
            yield self._rconn

    def _transaction(self, work: Callable[[], Any], what: str) -> Any:
        with self._lock:
            if self.read_only:
                raise StoreReadOnlyError(
                    f"{what} failed: span store {self.path} is opened read-only "
                    f"({self.open_mode}: the file, its folder or its media cannot be written); nothing was written"
                )
            self._staged_facts.clear()
            self._staged_written.clear()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                result = work()
                self._conn.execute("COMMIT")
                self._keep_staged_facts()
                return result
            except BaseException as exc:
                self._staged_facts.clear()
                self._staged_written.clear()
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

    def _keep_staged_facts(self) -> None:
        with self._facts_lock:
            self._keep_staged()

    def _keep_staged(self) -> None:
        for run_id, entry in self._staged_facts.items():
            self._run_facts[run_id] = entry
            self._run_facts.move_to_end(run_id)
        self._staged_facts.clear()
        while len(self._run_facts) > 1024:
            self._run_facts.popitem(last=False)
        for run_id, written in self._staged_written.items():
            self._written[run_id] = written
            self._written.move_to_end(run_id)
        self._staged_written.clear()
        while len(self._written) > _WRITTEN_RUNS:
            self._written.popitem(last=False)

    # --- spans ---------------------------------------------------------------------------
    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        """Persist spans atomically. The records must not be changed afterwards: the first read of
        a run written whole here is built from them (:meth:`_just_written`)."""
        self._write(records, None)

    def write_batch(
        self,
        records: Sequence[SpanRecord],
        *,
        busy_timeout_s: float | None = None,
        counters: Mapping[str, int] | None = None,
        annotations: Sequence[QueuedAnnotation] = (),
    ) -> None:
        """Also writes ``annotations`` queued behind runs' spans (:meth:`annotate`), in the same
        transaction, after the spans; one of a run the file does not hold (its spans were dropped)
        is skipped and counted in ``health`` (``store.annotations_unknown_run``). As with
        :meth:`write_spans`, the records must not be changed afterwards."""
        if not records and not counters and not annotations:
            return
        with self._lock:
            if busy_timeout_s is None:
                self._write(records, counters, annotations)
                return
            self._conn.execute(f"PRAGMA busy_timeout = {max(0, int(busy_timeout_s * 1000))}")
            try:
                self._write(records, counters, annotations)
            finally:
                try:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(DEFAULT_BUSY_TIMEOUT_S * 1000)}")
                except sqlite3.Error:
                    pass

    def _write(
        self,
        records: Sequence[SpanRecord],
        counters: Mapping[str, int] | None,
        annotations: Sequence[QueuedAnnotation] = (),
    ) -> None:
        rows = []
        blobs: dict[str, bytes] = {}
        resources: dict[str, str] = {}  # resource JSON -> its column value (one blob per resource)
        last_resource: dict[str, Any] | None = None
        resource_json = "{}"
        in_batch: dict[str, tuple[dict[str, SpanFacts], dict[str, SpanRecord]]] = {}
        known = self._known_blobs
        for r in records:  # encode everything first: a bad span aborts before any write
            attributes = compact_json(lift_blobs(r.attributes, blobs, known), "attributes", r)
            events = compact_json([e.model_dump() for e in r.events], "events", r) if r.events else "[]"
            links = compact_json([link.model_dump() for link in r.links], "links", r) if r.links else "[]"
            if r.resource is not last_resource and r.resource != last_resource:
                last_resource, resource_json = r.resource, compact_json(r.resource, "resource", r)
            resource = resources.get(resource_json)
            if resource is None:  # a run's spans share one resource: one blob, a digest per row
                refs = list(blob_refs(lift_blobs({"": resource_json}, blobs, known, min_chars=3)))
                resource = resources[resource_json] = RESOURCE_PREFIX + refs[0] if refs else resource_json
            facts = span_facts(r)
            run_batch = in_batch.get(r.trace_id)
            if run_batch is None:
                run_batch = in_batch[r.trace_id] = ({}, {})
            run_batch[0][r.span_id] = facts
            run_batch[1][r.span_id] = r
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
                    pack_json(attributes),
                    pack_json(events),
                    links,
                    resource,
                    r.scope,
                    facts.type,
                    int(facts.declared_run),
                    facts.hop_index,
                    facts.answer_text,
                )
            )
        new_blobs = list(blobs.items())
        increments = [(k, int(v)) for k, v in (counters or {}).items() if v]
        if not rows and not increments and not annotations:
            return
        run_ids = list(dict.fromkeys(r.trace_id for r in records))
        queued: dict[str, list[QueuedAnnotation]] = {}
        for item in annotations:
            queued.setdefault(item.run_id, []).append(item)
        unknown: list[str] = []

        def work() -> None:
            if new_blobs:
                self._conn.executemany("INSERT OR IGNORE INTO blobs (digest, value) VALUES (?, ?)", new_blobs)
            stored_before: set[str] = set()
            for start in range(0, len(run_ids), 500):  # runs this batch does not start
                chunk = run_ids[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                stored_before.update(
                    row[0]
                    for row in self._conn.execute(
                        f"SELECT DISTINCT trace_id FROM spans WHERE trace_id IN ({marks})", chunk
                    )
                )
            if rows:
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO spans ({_SPAN_COLUMNS}, span_type, declared_run, hop_index, answer_text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                for run_id in run_ids:
                    # a run first seen in this batch is summarised from the batch, not read back
                    self._refresh_run(
                        run_id,
                        None if run_id in stored_before else in_batch[run_id],
                        queued.get(run_id, ()),
                    )
            for run_id, items in queued.items():  # annotations of runs written in earlier batches
                if run_id in in_batch:
                    continue
                if self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                    unknown.append(run_id)
                    continue
                self._refresh_run(run_id, None, items, reuse_facts=True)
            if increments:
                self._conn.execute(_META_TABLE)
                self._conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = meta.value + excluded.value",
                    increments,
                )

        what = (
            f"writing {len(rows)} spans"
            if rows
            else "writing annotations"
            if queued
            else "writing health counters"
        )
        self._transaction(work, what)
        self._remember_blobs(d for d, _ in new_blobs)
        if unknown:
            health.count("store.annotations_unknown_run", len(unknown))

    def read_health(self) -> dict[str, int]:
        self._await_pending()  # the counters ride with the runs still queued
        with self._read("reading health counters") as conn:
            if not conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone():
                return {}
            return {
                row["key"]: int(row["value"])
                for row in conn.execute("SELECT key, value FROM meta ORDER BY key")
            }

    def _refresh_run(
        self,
        run_id: str,
        batch: tuple[Mapping[str, SpanFacts], Mapping[str, SpanRecord]] | None = None,
        annotate: Sequence[QueuedAnnotation] = (),
        *,
        reuse_facts: bool = False,
    ) -> None:
        """Recompute the runs row of ``run_id`` from its spans and annotations, merging
        ``annotate`` into them first (inside a transaction); ``batch`` (facts and records by span
        id) when they are all its spans. ``reuse_facts`` (only the annotations changed): the
        run's facts remembered from the last time this store computed its row, while the row's
        version shows nobody changed it since, instead of reading its spans back."""
        existing = self._conn.execute(
            "SELECT annotations, version FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        with self._facts_lock:
            remembered = self._run_facts.get(run_id) if reuse_facts and existing is not None else None
        if batch is not None:
            facts = list(batch[0].values())
            root_facts = choose_root(facts)
            root = batch[1][root_facts.span_id] if root_facts is not None else None
            run_facts = summarize_run(run_id, facts, root)
        elif remembered is not None and existing is not None and remembered[0] == int(existing["version"]):
            run_facts = remembered[1]
        else:
            facts, root = self._stored_facts(run_id)
            run_facts = summarize_run(run_id, facts, root)
        annotations = Annotations.model_validate_json(existing["annotations"]) if existing else Annotations()
        for item in annotate:
            annotations = annotations.merged(
                outcome=item.outcome, reference=item.reference, labels=item.labels, lineage=item.lineage
            )
        version = int(existing["version"]) + 1 if existing is not None else 1
        self._staged_facts[run_id] = (version, run_facts)
        if batch is not None and len(batch[0]) <= _WRITTEN_MAX_SPANS:
            self._staged_written[run_id] = (version, batch[0], batch[1])
        else:  # the run grew past what it was kept as: never read again, so let it go now
            with self._facts_lock:
                self._written.pop(run_id, None)
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

    def _stored_facts(self, run_id: str) -> tuple[list[SpanFacts], SpanRecord | None]:
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
            root = self._decode_rows([row], self._conn)[0]
        return facts, root

    def get_spans(self, run_id: str) -> list[SpanRecord]:
        self._await_pending(run_id)
        return self._read_spans(run_id)

    def _read_spans(self, run_id: str) -> list[SpanRecord]:
        return self._read_spans_and_facts(run_id)[0]

    def _read_spans_and_facts(self, run_id: str) -> tuple[list[SpanRecord], dict[str, SpanFacts]]:
        """The run's spans in start order, and the facts stored beside each (what the builder
        would otherwise compute again)."""
        with self._read(f"reading the spans of run {run_id}") as conn:
            plain = conn.cursor()
            plain.row_factory = None
            rows = plain.execute(
                f"SELECT {_SPAN_COLUMNS}, span_type, declared_run, hop_index, answer_text FROM spans "
                "WHERE trace_id = ? ORDER BY start_time_ns, span_id",
                (run_id,),
            ).fetchall()
        if not rows:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        facts = {row[1]: row_facts(row) for row in rows}
        return self._decode_rows(rows), facts

    def _remember_blobs(self, digests: Iterable[str]) -> None:
        """Digests known to be in the file (blobs are never deleted): not sent again."""
        self._known_blobs.update(digests)
        if len(self._known_blobs) > 200_000:
            self._known_blobs.clear()

    def _blob_texts(self, digests: set[str], conn: sqlite3.Connection) -> dict[str, str]:
        """The text of each blob named (cached: documents repeat across runs)."""
        cache = self._blob_cache
        with self._facts_lock:
            out = {d: cache[d] for d in digests if d in cache}
        missing = [d for d in digests if d not in out]
        found: dict[str, str] = {}
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for digest, value in conn.execute(
                f"SELECT digest, value FROM blobs WHERE digest IN ({marks})", chunk
            ):
                found[digest] = blob_text(value)
        if found:
            out.update(found)
            with self._facts_lock:
                cache.update(found)
                while len(cache) > 4096:
                    cache.pop(next(iter(cache)))
        return out

    def _decode_rows(self, rows: Sequence[Any], conn: sqlite3.Connection | None = None) -> list[SpanRecord]:
        """SpanRecords from stored rows of either layout (version 1 JSON text, version 2 packed),
        columns in :data:`_SPAN_COLUMNS` order; blobs read through ``conn`` when given (the
        writer's, inside its transaction, sees its own rows), else as any read."""
        decoded = []
        wanted: set[str] = set()
        for row in rows:
            attributes, may_refer = unpack_attributes(row[9])
            resource = row[12]
            if isinstance(resource, str) and resource.startswith(RESOURCE_PREFIX):
                wanted.add(resource[1:])
            refs: list[int] = []  # where the blob references are
            odd = False  # a reference-like value _restore alone handles (it raises on it)
            if may_refer or type(attributes) is not dict:  # (not a dict: fails here, as it always did)
                for at, value in enumerate(attributes.values()):
                    if type(value) is dict and len(value) == 1:
                        digest = value.get(BLOB_KEY)
                        if isinstance(digest, str):
                            wanted.add(digest)
                            refs.append(at)
                        elif isinstance(digest, dict | list):
                            odd = True
            decoded.append((row, attributes, refs, odd))
        texts: dict[str, str] = {}
        if wanted and conn is not None:
            with self._reading("reading stored values"):
                texts = self._blob_texts(wanted, conn) if self._has_blobs(conn) else {}
        elif wanted:
            with self._read("reading stored values") as reader:
                texts = self._blob_texts(wanted, reader) if self._has_blobs(reader) else {}
        resources: dict[str, Any] = {}  # a run's spans share one resource: parsed once
        out = []
        for row, attributes, refs, odd in decoded:
            resource = row[12]
            if isinstance(resource, str) and resource.startswith(RESOURCE_PREFIX):
                resource = texts.get(resource[1:], "{}")
            hit = resources.get(resource)
            resource = _resource(resource, resources) if hit is None else hit
            events = row[10]
            links = row[11]
            out.append(
                span_record(
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    row[4],
                    row[5],
                    row[6],
                    row[7],
                    row[8],
                    _restored(attributes, refs, texts)
                    if refs and not odd
                    else _restore(attributes, texts)
                    if refs
                    else dict(zip(decoded_names(tuple(attributes)), attributes.values(), strict=True)),
                    [] if events == "[]" else unpack_json(events),
                    [] if links == "[]" else loads(links) if type(links) is str else json.loads(links),
                    dict(resource) if type(resource) is dict else resource,  # each span its own
                    row[13],
                )
            )
        return out

    def _has_blobs(self, conn: sqlite3.Connection) -> bool:
        if self._blobs_table is None:
            self._blobs_table = bool(
                conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'blobs'").fetchone()
            )
        return self._blobs_table

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
        with self._read("listing runs") as conn:
            return self._list_runs(conn, wanted, thread_id, since, until, label, parent_run_id, limit, after)

    def _list_runs(
        self,
        conn: sqlite3.Connection,
        wanted: Outcome | None,
        thread_id: str | None,
        since: datetime | None,
        until: datetime | None,
        label: str | None,
        parent_run_id: str | None,
        limit: int | None,
        after: str | None,
    ) -> list[RunSummary]:
        """The listing as one ordered, LIMITed query over ``runs_listing`` (or, for a label filter,
        over the label index joined to ``runs``); pages after ``after`` by keyset."""
        sort = _SORT_KEY.format(row="r.")
        where: list[str] = ["r.is_run = 1"]
        params: list[Any] = []
        if wanted is Outcome.UNKNOWN:
            where.append("(r.outcome = 'unknown' OR r.outcome IS NULL)")
        elif wanted is not None:
            where.append("r.outcome = ?")
            params.append(wanted.value)
        for condition, value in (
            ("r.thread_id = ?", thread_id),
            (f"{sort} >= ?", to_ns(since)),  # on the sort key, so that runs_listing serves the range
            (f"r.started_at_ns IS NOT NULL AND {sort} <= ?", to_ns(until)),
            ("r.parent_run_id = ?", parent_run_id),
        ):
            if value is not None:
                where.append(condition)
                params.append(value)
        cursor: tuple[int, str] | None = None
        if after is not None:
            row = conn.execute(
                f"SELECT {_SORT_KEY.format(row='')} AS sort_key FROM runs WHERE run_id = ?", (after,)
            ).fetchone()
            if row is None:
                raise KeyError(
                    f"unknown run {after!r} (the 'after' of a listing): span store {self.path} has none"
                )
            cursor = (int(row["sort_key"]), after)
        order = sort  # the column the keyset follows
        # a thread's or a parent's runs are few: their index serves them (sorted after), not a
        # walk of the whole listing, which the planner would otherwise prefer for its order
        source = "runs AS r" + (
            " INDEXED BY runs_by_thread"
            if thread_id is not None
            else " INDEXED BY runs_by_parent"
            if parent_run_id is not None
            else ""
        )
        check: Callable[[Sequence[Any]], bool] | None = None
        exact = True  # whether the SQL selects exactly the matches (else it over-fetches a little)
        if label is not None:
            plan = self._label_plan(conn, label)
            if plan is None:  # a read-only file without the label index: matched in Python
                check, exact = summary_label_check(label), False
            else:
                condition, label_params, exact = plan
                check = summary_label_check(label)  # candidates are checked again; see _label_plan
                if thread_id is None and parent_run_id is None:
                    # the label index drives, in listing order (CROSS JOIN keeps it outermost)
                    source = "run_labels AS l CROSS JOIN runs AS r ON r.run_id = l.run_id"
                    order = "l.sort_key"
                    where.insert(0, condition)
                    params[:0] = label_params
                else:  # the thread's or parent's index drives, labels probed per run
                    where.append(
                        f"EXISTS (SELECT 1 FROM run_labels AS l WHERE l.run_id = r.run_id AND {condition})"
                    )
                    params.extend(label_params)
        id_column = "l.run_id" if order == "l.sort_key" else "r.run_id"
        sql_head = f"SELECT {SUMMARY_COLUMNS}, {order} AS sort_key FROM {source} WHERE " + " AND ".join(where)
        sql_tail = f" ORDER BY {order} DESC, {id_column}"
        out: list[RunSummary] = []
        while True:
            sql, page_params = sql_head, list(params)
            if cursor is not None:
                sql += f" AND {order} <= ? AND ({order} < ? OR {id_column} > ?)"
                page_params += [cursor[0], cursor[0], cursor[1]]
            chunk = None if limit is None else max(limit - len(out), 1 if exact else 32)
            sql += sql_tail + (f" LIMIT {chunk}" if chunk is not None else "")
            plain = conn.cursor()
            plain.row_factory = None  # tuples in SUMMARY_COLUMNS order, then the sort key
            rows = plain.execute(sql, page_params).fetchall()
            for row in rows:
                if check is not None and not check(row):
                    continue
                out.append(summary_from_row(row))
                if limit is not None and len(out) >= limit:
                    return out
            if chunk is None or len(rows) < chunk:
                return out
            cursor = (int(rows[-1][12]), rows[-1][0])

    def _label_plan(self, conn: sqlite3.Connection, label: str) -> tuple[str, list[Any], bool] | None:
        """SQL over ``run_labels AS l`` selecting every run the label filter may match, its
        parameters, and whether it selects exactly the matches (the usual case: one key, one value
        text). Reals, arrays, objects, labels that are not plain JSON and filters with several
        candidate texts select candidates the caller checks in Python. None when the file has no
        label index."""
        if not self._has_label_index(conn):
            return None
        key, sep, wanted = label.partition("=")
        key = key.strip()
        exact = True
        if not sep:
            condition, params = "l.key = ?", [key]
        else:
            values = label_texts(wanted)
            inexact = conn.execute(
                "SELECT 1 FROM run_labels WHERE key = ? AND value IS NULL LIMIT 1", (key,)
            ).fetchone()
            if len(values) == 1 and inexact is None:  # one index range, in listing order
                condition, params = "l.key = ? AND l.value = ?", [key, values[0]]
            else:
                marks = ", ".join("?" * len(values))
                condition = f"l.key = ? AND (l.value IN ({marks}) OR l.value IS NULL)"
                params = [key, *values]
                exact = False
        if conn.execute("SELECT 1 FROM run_labels WHERE key IS NULL LIMIT 1").fetchone():
            condition, exact = f"(({condition}) OR l.key IS NULL)", False
        return condition, params, exact

    def _has_label_index(self, conn: sqlite3.Connection) -> bool:
        if self._label_index is None:
            self._label_index = not _missing_derived(conn)
        return self._label_index

    def resolve_run_id(self, run_id_or_prefix: str) -> str:
        wanted = run_id_or_prefix.strip().lower()
        self._await_pending(wanted if len(wanted) == 32 else None)
        with self._read(f"looking up run {wanted}") as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ? AND is_run = 1", (wanted,)).fetchone():
                return wanted
            known = [
                row["run_id"]
                for row in conn.execute(
                    # a range of the primary key (run ids are lower-case hex: 'g' sorts after them)
                    "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? AND substr(run_id, 1, ?) = ? "
                    "AND is_run = 1 LIMIT 6",
                    (wanted, wanted + "g", len(wanted), wanted),
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
        """While this process's background writer still holds the run's spans (a run that just
        ended), the annotation is queued behind them and written in the same transaction (no wait
        here); this store's reads of the run wait for both, so they see it. Otherwise it is written
        now."""
        merged_outcome = normalize_outcome(outcome)
        # a copy as JSON (what is stored): the caller may change its dict after the call
        copied = json.loads(dumps(labels, f"labels for run {run_id}")) if labels is not None else None
        item = QueuedAnnotation(
            run_id,
            merged_outcome,
            reference,
            copied,
            lineage.model_copy(deep=True) if lineage is not None else None,
        )
        if not self.read_only:
            for writer in writers_for(self.pending_key()):
                if writer.accepts_annotations and writer.submit_if_pending(item, key=run_id):
                    return
        self._await_pending(run_id)

        def work() -> None:
            if self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
            self._refresh_run(run_id, None, (item,), reuse_facts=True)

        self._transaction(work, f"annotating run {run_id}")

    def get_annotations(self, run_id: str) -> Annotations:
        """What ``annotate`` set for the run (empty when nothing was); KeyError when unknown."""
        self._await_pending(run_id)
        with self._read(f"reading run {run_id}") as conn:
            row = conn.execute("SELECT annotations FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        return Annotations.model_validate_json(row["annotations"])

    def get_trajectory(self, run_id: str) -> Trajectory:
        queued = self._from_writer(run_id) if self.read_queued else None
        if queued is not None:
            return queued
        self._await_pending(run_id)
        with self._read(f"reading run {run_id}") as conn:
            row = conn.execute("SELECT version, annotations FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r}: span store {self.path} has no spans of it")
        version = int(row["version"])

        def build() -> Trajectory:
            annotations = Annotations.model_validate_json(row["annotations"])
            spans, facts = self._just_written(run_id, version) or self._read_spans_and_facts(run_id)
            return overlay(build_trajectory(spans, run_id=run_id, facts=facts), annotations)

        # stitching (outside the lock) reads the parent run through get_trajectory
        return read_trajectory(
            self._cache, run_id, version, build, self._ancestor_versions, self.get_trajectory
        )

    def _from_writer(self, run_id: str) -> Trajectory | None:
        """A run this process's background writer still holds whole (its spans in one hand-over,
        with any annotations queued behind them) and the file holds nothing of yet, built from what
        the writer holds instead of waiting for its transaction: the trajectory the file will give
        (``tests/store/test_read_queued.py``). Not cached (its row's version is not known yet); the
        first read after the write is built from the records written. None: read the file."""
        payloads: list[Any] = []
        for writer in writers_for(self.pending_key()):
            payloads = writer.held(run_id)
            if payloads:
                break
        runs = [p for p in payloads if not isinstance(p, QueuedAnnotation)]
        if len(runs) != 1 or not isinstance(runs[0], Sequence):
            return None  # nothing held, or a run handed over in parts: the file has the rest
        with self._read(f"reading run {run_id}") as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None:
                return None
        try:
            records = [SpanRecord.from_readable(span) for span in runs[0]]
        except Exception:  # not OTel spans: the writer's sink knows them, this reader does not
            return None
        spans: list[SpanRecord] = []
        facts: dict[str, SpanFacts] = {}
        for record in records:
            again = reread(record)
            if again is None or again.trace_id != run_id:
                return None
            spans.append(again)
            facts[record.span_id] = span_facts(record)
        if len(facts) != len(spans):
            return None  # a span id twice: the file keeps the last, read it there
        spans.sort(key=lambda r: (r.start_time_ns, r.span_id))  # the rows' order
        annotations = Annotations()
        for item in payloads:
            if isinstance(item, QueuedAnnotation):
                annotations = annotations.merged(
                    outcome=item.outcome, reference=item.reference, labels=item.labels, lineage=item.lineage
                )
        own = overlay(build_trajectory(spans, run_id=run_id, facts=facts), annotations)
        if not needs_stitching(own):
            return own
        assert own.lineage is not None
        parent_id = own.lineage.parent_run_id
        ancestors = self._ancestor_versions(run_id, parent_id)
        return stitch_from_store(parent_reader(self._cache, parent_id, ancestors, self.get_trajectory), own)

    def _just_written(
        self, run_id: str, version: int
    ) -> tuple[list[SpanRecord], Mapping[str, SpanFacts]] | None:
        """The spans of a run this store wrote whole in one batch and nobody changed since (its
        row is still at the version that batch gave it), as reading its rows back would give them,
        from the records written; once per write. None: read the rows."""
        with self._facts_lock:
            written = self._written.pop(run_id, None)
        if written is None or written[0] != version:
            return None
        spans = []
        for record in written[2].values():
            again = reread(record)
            if again is None:
                return None
            spans.append(again)
        spans.sort(key=lambda r: (r.start_time_ns, r.span_id))  # the rows' order
        return spans, written[1]

    def _ancestor_versions(self, run_id: str, parent_run_id: str) -> tuple[int | None, ...]:
        """The versions of a fork's parent, its parent's parent...: what its stitched form reads."""
        versions: list[int | None] = []
        cursor: str | None = parent_run_id
        with self._read(f"reading the lineage of run {run_id}") as conn:
            while cursor is not None and len(versions) < 64:
                found = conn.execute(
                    "SELECT version, parent_run_id FROM runs WHERE run_id = ?", (cursor,)
                ).fetchone()
                if found is None:
                    versions.append(None)
                    break
                versions.append(int(found["version"]))
                cursor = found["parent_run_id"]
        return tuple(versions)

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
        with self._read("reading records") as conn:
            rows = conn.execute(sql, params).fetchall()
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
