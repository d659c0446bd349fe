"""Indexed reads of the SQLite store: the listing's query plan, label filters in SQL with their
LIMIT, keyset pages (the same on the in-memory store), and old files brought forward."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store import sqlite as sqlite_module
from causal_middleware.store.base import SpanStore
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.sqlite import SqliteSpanStore

N = 60
Synth = Callable[[int, int], list[SpanRecord]]


def _fill(store: SpanStore, synth: Synth, n: int = N) -> None:
    for first in range(0, n, 8):
        store.write_batch([s for i in range(first, min(first + 8, n)) for s in synth(i, n)])


def _statements(store: SqliteSpanStore, work: Callable[[], Any]) -> list[str]:
    seen: list[str] = []
    with store._read("tracing") as conn:  # the connection reads use
        conn.set_trace_callback(seen.append)
        try:
            work()
        finally:
            conn.set_trace_callback(None)
    return [q for q in seen if q.lstrip().startswith("SELECT r.run_id")]


def _plan(store: SqliteSpanStore, work: Callable[[], Any]) -> list[str]:
    (statement,) = _statements(store, work)
    with store._read("planning") as conn:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]


@pytest.fixture
def sqlite_store(tmp_path: Path, synth: Synth) -> Any:
    with SqliteSpanStore(tmp_path / "runs.db") as store:
        _fill(store, synth)
        yield store


def _ids(runs: list[Any]) -> list[str]:
    return [r.run_id for r in runs]


def test_the_default_listing_walks_the_listing_index(sqlite_store: SqliteSpanStore) -> None:
    for kwargs in ({}, {"limit": None}, {"outcome": "unknown"}):
        plan = _plan(sqlite_store, lambda kwargs=kwargs: sqlite_store.list_runs(**kwargs))
        assert plan == ["SEARCH r USING INDEX runs_listing (is_run=?)"], (kwargs, plan)
    cursor = _ids(sqlite_store.list_runs(limit=5))[-1]
    page = _plan(sqlite_store, lambda: sqlite_store.list_runs(after=cursor))
    assert not any("TEMP B-TREE" in step for step in page) and "runs_listing" in page[0]


def test_label_filters_use_the_label_index_in_listing_order(sqlite_store: SqliteSpanStore) -> None:
    for label, index in (("split=a", "run_labels_by_value"), ("split", "run_labels_by_key")):
        plan = _plan(sqlite_store, lambda label=label: sqlite_store.list_runs(label=label, limit=3))
        assert index in plan[0] and not any("TEMP B-TREE" in step for step in plan), plan
        (statement,) = _statements(
            sqlite_store, lambda label=label: sqlite_store.list_runs(label=label, limit=3)
        )
        assert statement.rstrip().endswith("LIMIT 3")  # the LIMIT stays with the filter


def test_label_filters_with_limit_return_the_right_rows(sqlite_store: SqliteSpanStore, synth: Synth) -> None:
    reference = InMemorySpanStore()
    _fill(reference, synth)
    everything = _ids(reference.list_runs(limit=None))
    for label in ("split=a", "split", "split=b", "needle=1", "needle", "i=7", "i", "split=c", "nope"):
        for limit in (1, 3, 10, None):
            got = _ids(sqlite_store.list_runs(label=label, limit=limit))
            assert got == _ids(reference.list_runs(label=label, limit=limit)), (label, limit)
    assert len(_ids(sqlite_store.list_runs(label="split=a", limit=None))) == N // 4
    assert _ids(sqlite_store.list_runs(label="needle=1")) == [
        r for r in everything if r == everything[N - 1 - N // 2]
    ]


@pytest.mark.parametrize(
    "value, filters, matching",
    [
        ("drift", ["k=drift", 'k="drift"', 'k= "drift" '], ["k=Drift", "k= drift"]),
        (2, ["k=2", "k= 2 "], ["k=2.0", 'k="2"']),
        (True, ["k=True", "k=true", "k= true"], ["k=1", "k=True "]),
        (None, ["k=None", "k=null"], ["k=", "k=none"]),
        (2.5, ["k=2.5"], ["k=2.50"]),
        ([1, 2], ["k=[1, 2]"], ["k=[1,2]"]),
        ({"a": 1}, ['k={"a": 1}', "k={'a': 1}"], ["k={}"]),
        (10**30, [f"k={10**30}"], ["k=1e+30"]),
        (float("nan"), ["k=NaN", "k=nan"], ["k=0"]),
        ('say "hi"\n', ['k="say \\"hi\\"\\n"'], ["k=say"]),
    ],
)
def test_label_values_of_every_type_match_as_in_memory(
    tmp_path: Path, synth: Synth, value: Any, filters: list[str], matching: list[str]
) -> None:
    """The SQL candidates never miss a match and never keep a non-match, whatever the value type
    (reals, arrays, objects, huge integers and NaN are candidates checked in Python)."""
    with SqliteSpanStore(tmp_path / "t.db") as store:
        memory = InMemorySpanStore()
        labelled = [
            s.model_copy(
                update={"attributes": {**s.attributes, A.CAUSAL_RUN_LABELS: json.dumps({"k": value})}}
            )
            if s.parent_span_id is None
            else s
            for s in synth(8, 9)
        ]
        for target in (store, memory):  # labels from the run's span (annotations pass through JSON)
            _fill(target, synth, 8)
            target.write_batch(labelled)
        for label in [*filters, *matching, "k"]:
            for limit in (1, None):
                assert _ids(store.list_runs(label=label, limit=limit)) == _ids(
                    memory.list_runs(label=label, limit=limit)
                ), label
        assert all(len(store.list_runs(label=f)) == 1 for f in [*filters, "k"])


def test_annotations_keep_the_label_index_current(sqlite_store: SqliteSpanStore) -> None:
    first = _ids(sqlite_store.list_runs(limit=None))[-1]
    sqlite_store.annotate(first, labels={"split": "z", "reviewer": "ana"})
    assert _ids(sqlite_store.list_runs(label="split=z")) == [first]
    assert first not in _ids(sqlite_store.list_runs(label="split=a", limit=None))
    assert _ids(sqlite_store.list_runs(label="reviewer=ana")) == [first]
    # a write by code that knows nothing of run_labels (an older version) is followed by the triggers
    sqlite_store._conn.execute("UPDATE runs SET labels = ? WHERE run_id = ?", (json.dumps({"x": 1}), first))
    assert _ids(sqlite_store.list_runs(label="x=1")) == [first]
    assert _ids(sqlite_store.list_runs(label="reviewer")) == []


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_pages_are_stable_and_cover_the_listing(tmp_path: Path, synth: Synth, backend: str) -> None:
    store: SpanStore = InMemorySpanStore() if backend == "memory" else SqliteSpanStore(tmp_path / "p.db")
    try:
        _fill(store, synth)
        everything = _ids(store.list_runs(limit=None))
        pages: list[list[str]] = []
        cursor = None
        while True:
            page = _ids(store.list_runs(limit=7, after=cursor))
            if not page:
                break
            pages.append(page)
            cursor = page[-1]
            if len(pages) == 2:  # newer runs recorded meanwhile do not shift the pages after the cursor
                store.write_batch([s for i in range(N, N + 3) for s in synth(i, N + 3)])
        assert [r for page in pages for r in page] == everything
        assert all(len(page) == 7 for page in pages[:-1])
        filtered = []
        cursor = None
        while page := _ids(store.list_runs(label="split=a", limit=4, after=cursor)):
            filtered += page
            cursor = page[-1]
        assert filtered == _ids(store.list_runs(label="split=a", limit=None))
        assert len(filtered) == N // 4 + 1  # run N (newer, recorded meanwhile) is split=a too
        with pytest.raises(KeyError, match="unknown run"):
            store.list_runs(after="f" * 32)
    finally:
        store.close()


def test_pages_order_runs_without_a_start_last(tmp_path: Path, synth: Synth) -> None:
    with SqliteSpanStore(tmp_path / "n.db") as store:
        memory = InMemorySpanStore()
        for target in (store, memory):
            _fill(target, synth, 6)
        ids = _ids(store.list_runs(limit=None))
        store._conn.execute("UPDATE runs SET started_at_ns = NULL WHERE run_id IN (?, ?)", (ids[0], ids[3]))
        listed = _ids(store.list_runs(limit=None))
        assert listed[-2:] == sorted([ids[0], ids[3]])
        assert _ids(store.list_runs(limit=2, after=listed[-3])) == listed[-2:]
        assert _ids(store.list_runs(limit=2, after=listed[-2])) == listed[-1:]


def _old_store(path: Path, synth: Synth, n: int = N) -> list[str]:
    """A file as a store without the derived structures wrote it (version 1, no run_labels)."""
    with SqliteSpanStore(path) as store:
        _fill(store, synth, n)
        ids = _ids(store.list_runs(limit=None))
    with sqlite3.connect(path) as conn:
        for name in reversed(list(sqlite_module._DERIVED)):
            kind = "TABLE" if name == "run_labels" else "TRIGGER" if "_on_" in name else "INDEX"
            conn.execute(f"DROP {kind} IF EXISTS {name}")
    return ids


def _derived(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")} & set(
            sqlite_module._DERIVED
        )


def test_an_old_store_is_brought_forward(tmp_path: Path, synth: Synth) -> None:
    path = tmp_path / "old.db"
    ids = _old_store(path, synth)
    assert _derived(path) == set()
    with SqliteSpanStore(path, read_only=True) as reader:  # read-only: answered without the index
        old_answer = _ids(reader.list_runs(label="split=a", limit=None))
        assert len(old_answer) == N // 4
    with SqliteSpanStore(path) as store:
        assert store.schema_version == sqlite_module.SCHEMA_VERSION
        assert _ids(store.list_runs(limit=None)) == ids
        assert _ids(store.list_runs(label="split=a", limit=None)) == old_answer
        assert "run_labels_by_value" in _plan(store, lambda: store.list_runs(label="split=a"))[0]
    assert _derived(path) == set(sqlite_module._DERIVED)


def _open(path: str) -> str:
    with SqliteSpanStore(path) as store:
        return ",".join(_ids(store.list_runs(label="split=a", limit=None)))


def test_an_old_store_opened_by_several_processes_at_once(tmp_path: Path, synth: Synth) -> None:
    path = tmp_path / "old.db"
    _old_store(path, synth)
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        answers = pool.map(_open, [str(path)] * 8)
    assert len(set(answers)) == 1 and len(answers[0].split(",")) == N // 4
    with sqlite3.connect(path) as conn:  # the backfill ran once
        assert conn.execute("SELECT count(*) FROM run_labels WHERE key = 'i'").fetchone()[0] == N
