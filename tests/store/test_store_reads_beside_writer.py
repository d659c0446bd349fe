"""Reads of a SQLite file never wait for this process's background writer: while the writer holds
the store's write lock in the middle of a transaction (encoding and committing a batch), runs
already in the file, and the run it is writing, still read (and read as they will once it
commits). A memory store has one connection, so its reads do wait there."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from gated_store import recording
from span_factory import emit_run

from causal_middleware.store.sqlite import SqliteSpanStore


class MidTransactionStore(SqliteSpanStore):
    """Once ``hold`` is set, the next transaction stops inside the write lock, after BEGIN, until
    ``gate`` opens (``inside`` is set when it got there)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold = threading.Event()
        self.inside = threading.Event()
        self.gate = threading.Event()

    def _transaction(self, work: Any, what: str) -> Any:
        if not self.hold.is_set():
            return super()._transaction(work, what)

        def held() -> Any:
            self.inside.set()
            self.gate.wait(10)
            return work()

        return super()._transaction(held, what)


def test_reads_go_on_while_the_writer_is_inside_its_transaction(tmp_path: Path) -> None:
    store = MidTransactionStore(tmp_path / "r.db")
    provider, processor = recording(store)
    pool = ThreadPoolExecutor(1)
    try:
        tracer = provider.get_tracer("t")
        written = emit_run(tracer, thread_id="first")
        assert processor.flush(10)
        store.annotate(written, labels={"judge": "em"})
        expected = store.get_trajectory(written).model_dump(mode="json")
        expected_spans = len(store.get_spans(written))

        store.hold.set()
        held = emit_run(tracer, thread_id="second", base_ns=2_000_000_000_000_000_000)
        assert store.inside.wait(10), "the writer never began the second run's transaction"

        def reads() -> tuple[Any, ...]:
            return (
                store.get_trajectory(written).model_dump(mode="json"),
                store.get_annotations(written).labels,
                len(store.get_spans(written)),
                store.resolve_run_id(written),
                store.get_trajectory(held).model_dump(mode="json"),  # the writer holds it whole
            )

        trajectory, labels, n_spans, resolved, early = pool.submit(reads).result(timeout=5)
        assert store.inside.is_set() and not store.gate.is_set()  # all of it read mid-transaction
        assert trajectory == expected and labels == {"judge": "em"}
        assert n_spans == expected_spans > 0
        assert resolved == written
        store.gate.set()
        assert processor.flush(10)
        store.hold.clear()
        with SqliteSpanStore(tmp_path / "r.db", create=False) as fresh:
            assert fresh.get_trajectory(held).model_dump(mode="json") == early
    finally:
        store.gate.set()
        pool.shutdown(wait=False)
        provider.shutdown()
        store.close()


def test_a_closed_store_does_not_reopen_for_reads(tmp_path: Path) -> None:
    store = SqliteSpanStore(tmp_path / "c.db")
    store.list_runs()
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.list_runs()


def test_a_store_opened_by_a_relative_path_reads_its_own_file_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    store = SqliteSpanStore("rel.db")
    provider, processor = recording(store)
    try:
        run_id = emit_run(provider.get_tracer("t"))
        assert processor.flush(10)
        monkeypatch.chdir(tmp_path / "elsewhere")  # the read connection opens on the first read
        assert store.get_trajectory(run_id).run_id == run_id
        assert [r.run_id for r in store.list_runs()] == [run_id]
        assert not (tmp_path / "elsewhere" / "rel.db").exists()
    finally:
        provider.shutdown()
        store.close()
