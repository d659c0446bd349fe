"""Issue 16 item 2, the SQLite layout of schema version 2: long values and the resource stored
once (content-addressed), small JSON deflated; version 1 files open, migrate and read the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from span_factory import fabricate_run

from causal_middleware.spans.record import SpanRecord
from causal_middleware.store._common import encode_span
from causal_middleware.store._packing import BLOB_MIN_CHARS, PACK_MIN_BYTES
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore


def _copy(records: list[SpanRecord], trace_id: str) -> list[SpanRecord]:
    return [r.model_copy(update={"trace_id": trace_id}) for r in records]


def _long(records: list[SpanRecord]) -> set[str]:
    return {
        v for r in records for v in r.attributes.values() if isinstance(v, str) and len(v) >= BLOB_MIN_CHARS
    }


def test_long_values_and_the_resource_are_stored_once_and_read_back_whole(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    big = "passage " * 80  # one long document, in two spans of each of two runs
    records = [
        r.model_copy(update={"attributes": {**r.attributes, "retrieval.documents.0.document.content": big}})
        if i % 3 == 0
        else r
        for i, r in enumerate(records)
    ]
    # one span whose attributes JSON passes PACK_MIN_BYTES in short values: stored deflated
    many = {f"custom.key{j}": "short value" for j in range(PACK_MIN_BYTES // 20)}
    records[1] = records[1].model_copy(update={"attributes": {**records[1].attributes, **many}})
    other = _copy(records, "f" * 32)
    with SqliteSpanStore(tmp_path / "p.db") as store:
        store.write_spans(records)
        store.write_spans(other)
        n_blobs = store._conn.execute("SELECT count(*) FROM blobs").fetchone()[0]
        resources = {row[0] for row in store._conn.execute("SELECT resource FROM spans")}
        assert n_blobs == len(_long(records)) + len(resources)  # each distinct value once, both runs
        assert len(resources) == 1 and next(iter(resources)).startswith("@")
        packed = store._conn.execute("SELECT count(*) FROM spans WHERE typeof(attributes) = 'blob'")
        assert packed.fetchone()[0] > 0
        memory = InMemorySpanStore()
        memory.write_spans(records)
        by_id = {r.span_id: r for r in records}
        for span in store.get_spans(run_id):
            assert span == by_id[span.span_id]
        assert store.get_trajectory(run_id) == memory.get_trajectory(run_id)
        assert store.get_spans("f" * 32) == [
            s.model_copy(update={"trace_id": "f" * 32}) for s in store.get_spans(run_id)
        ]
    with SqliteSpanStore(tmp_path / "p.db", read_only=True) as reader:  # a fresh reader, no cache
        assert reader.get_trajectory(run_id) == memory.get_trajectory(run_id)


def _version_1_file(path: Path, records: list[SpanRecord]) -> None:
    """A file as version 1 wrote it: JSON text columns, no blobs table, user_version 1."""
    with SqliteSpanStore(path) as store:
        store.write_spans(records)
    with sqlite3.connect(path) as conn:
        for r in records:
            encoded = encode_span(r)
            conn.execute(
                "UPDATE spans SET attributes = ?, events = ?, links = ?, resource = ? "
                "WHERE trace_id = ? AND span_id = ?",
                (
                    encoded["attributes"],
                    encoded["events"],
                    encoded["links"],
                    encoded["resource"],
                    r.trace_id,
                    r.span_id,
                ),
            )
        conn.execute("DROP TABLE blobs")
        conn.execute("PRAGMA user_version = 1")
    with sqlite3.connect(path) as conn:
        assert (
            conn.execute("SELECT count(*) FROM spans WHERE typeof(attributes) != 'text'").fetchone()[0] == 0
        )


def test_a_version_1_file_reads_the_same_and_takes_new_rows(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    path = tmp_path / "v1.db"
    _version_1_file(path, records)
    memory = InMemorySpanStore()
    memory.write_spans(records)
    with SqliteSpanStore(path, read_only=True) as reader:  # read as it is, without migrating
        assert reader.get_spans(run_id) == memory.get_spans(run_id)
    with SqliteSpanStore(path) as store:
        assert store.schema_version == 2
        store.annotate(run_id, outcome="failure")  # recomputes the run from its version 1 rows
        memory.annotate(run_id, outcome="failure")
        assert store.get_trajectory(run_id) == memory.get_trajectory(run_id)
        newer = _copy(records, "e" * 32)
        store.write_spans(newer)  # version 2 rows beside version 1 rows
        memory.write_spans(newer)
        assert store.get_trajectory("e" * 32) == memory.get_trajectory("e" * 32)
        assert [r.run_id for r in store.list_runs()] == [r.run_id for r in memory.list_runs()]
