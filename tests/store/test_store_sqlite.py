"""SQLite-only behaviour: files, WAL, schema versions and migrations, several connections."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from span_factory import fabricate_run

from causal_middleware.store import sqlite as sqlite_module
from causal_middleware.store.base import StoreError
from causal_middleware.store.sqlite import SCHEMA_VERSION, SqliteSpanStore


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_new_store_is_wal_at_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "runs.db"
    with SqliteSpanStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 2
    assert {"spans", "runs", "records"} <= _tables(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def test_runs_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id, records = fabricate_run()
    with SqliteSpanStore(path) as store:
        store.write_spans(records)
        store.annotate(run_id, outcome="failure", labels={"k": 1})
        store.put_record("diagnosis", run_id, {"hop": 2})
        expected = store.get_trajectory(run_id)
    with SqliteSpanStore(path, create=False) as store:
        assert store.get_trajectory(run_id) == expected
        assert store.get_records("diagnosis", run_id) == [{"hop": 2}]
        assert store.list_runs()[0].labels == {"k": 1}


def test_a_second_connection_sees_writes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id, records = fabricate_run()
    with SqliteSpanStore(path) as writer, SqliteSpanStore(path, create=False) as reader:
        writer.write_spans(records[:10])
        assert reader.list_runs()[0].n_spans == 10
        writer.write_spans(records[10:])
        assert len(reader.get_trajectory(run_id).hops) == 3


def test_reading_a_missing_store_does_not_create_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(FileNotFoundError, match=f"span store not found: {path}"):
        SqliteSpanStore(path, create=False)
    assert not path.exists()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SqliteSpanStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(
        StoreError, match=r"schema version 7, newer than this causal-middleware supports \(2\)"
    ):
        SqliteSpanStore(path)


def test_files_that_are_not_stores_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("hello, I am not a database" * 100)
    with pytest.raises(StoreError, match=f"cannot open span store {text}"):
        SqliteSpanStore(text)
    with pytest.raises(StoreError, match="is a directory"):
        SqliteSpanStore(tmp_path)


def test_a_failed_migration_leaves_the_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "half.db"

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE spans (x INTEGER)")
        raise sqlite3.OperationalError("simulated failure half-way")

    monkeypatch.setitem(sqlite_module.MIGRATIONS, 1, broken)
    with pytest.raises(StoreError, match="simulated failure"):
        SqliteSpanStore(path)
    assert _tables(path) == set()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    monkeypatch.undo()
    with SqliteSpanStore(path) as store:  # the real migration then runs from version 0
        assert store.schema_version == SCHEMA_VERSION


def test_cached_trajectories_follow_new_spans_and_annotations(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    with SqliteSpanStore(tmp_path / "c.db", cache_size=1) as store:
        store.write_spans(records)
        first = store.get_trajectory(run_id)
        assert store.get_trajectory(run_id) == first
        store.annotate(run_id, outcome="success")
        assert store.get_trajectory(run_id).outcome == "success"
        extra = records[0].model_copy(update={"span_id": "00000000000000aa", "name": "late"})
        store.write_spans([extra])
        assert len(store.get_spans(run_id)) == len(records) + 1


def test_in_memory_database(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    with SqliteSpanStore(":memory:") as store:
        store.write_spans(records)
        assert store.get_trajectory(run_id).answer == "Quarn"
    assert list(tmp_path.iterdir()) == []


def test_a_batch_failing_inside_the_transaction_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept_id, kept = fabricate_run()
    run_id, records = fabricate_run()
    with SqliteSpanStore(tmp_path / "r.db") as store:
        store.write_spans(kept)

        def fail_after_inserting(run: str, *batch: object) -> None:
            raise sqlite3.OperationalError("disk I/O error (simulated)")

        monkeypatch.setattr(store, "_refresh_run", fail_after_inserting)
        with pytest.raises(
            StoreError, match=r"writing 56 spans failed .* nothing was written: disk I/O error"
        ):
            store.write_spans(records + kept)
        monkeypatch.undo()
        with pytest.raises(KeyError):
            store.get_spans(run_id)
        assert [r.run_id for r in store.list_runs()] == [kept_id]
        assert len(store.get_spans(kept_id)) == len(kept)
