"""The first read of a run the SQLite store has just written whole is built from the records it was
given, not from the file (issue 16: a fork or a run is read back right after it is written). It
must equal what reading the file gives, share nothing with the caller's records, and give way to
the file whenever the file could say something else."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from span_factory import fabricate_run

from causal_middleware.spans import attributes as A
from causal_middleware.store._common import TrajectoryCache
from causal_middleware.store.sqlite import SqliteSpanStore


class _Counting(SqliteSpanStore):
    """Counts how often the run's rows are read from the file, and how often each run's row was
    written (a batch of its spans, with any annotations queued behind them; an annotation on its
    own)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.file_reads: list[str] = []
        self.writes: Counter[str] = Counter()

    def _read_spans_and_facts(self, run_id: str) -> Any:
        self.file_reads.append(run_id)
        return super()._read_spans_and_facts(run_id)

    def _refresh_run(self, run_id: str, *args: Any, **kwargs: Any) -> None:
        self.writes[run_id] += 1
        super()._refresh_run(run_id, *args, **kwargs)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[_Counting]:
    made = _Counting(tmp_path / "w.db")
    yield made
    made.close()


def _from_file(store: SqliteSpanStore, run_id: str) -> Any:
    with SqliteSpanStore(store.path, create=False) as fresh:
        return fresh.get_trajectory(run_id)


def test_a_just_written_run_is_read_from_its_records_as_the_file_has_it(store: _Counting) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records)
    read = store.get_trajectory(run_id)
    assert store.file_reads == []
    expected = _from_file(store, run_id)
    assert read == expected and read.model_dump_json() == expected.model_dump_json()


def test_the_trajectory_shares_nothing_with_the_callers_records(store: _Counting) -> None:
    run_id, records = fabricate_run()
    listed = records[1].model_copy(update={"attributes": {**records[1].attributes, "custom.list": [1, 2]}})
    records = [records[0], listed, *records[2:]]
    store.write_spans(records)
    read = store.get_trajectory(run_id)
    assert store.file_reads == []
    step = next(s for s in read.steps if s.step_id == listed.span_id)
    step.attributes["custom.list"].append(3)
    assert listed.attributes["custom.list"] == [1, 2]


def test_a_value_json_would_change_sends_the_read_to_the_file(store: _Counting) -> None:
    run_id, records = fabricate_run()
    tupled = records[1].model_copy(update={"attributes": {**records[1].attributes, "custom.pair": ("a", 1)}})
    store.write_spans([records[0], tupled, *records[2:]])
    read = store.get_trajectory(run_id)
    assert store.file_reads == [run_id]
    assert read == _from_file(store, run_id)
    step = next(s for s in read.steps if s.step_id == tupled.span_id)
    assert step.attributes["custom.pair"] == ["a", 1]  # as the file has it


def test_a_run_changed_after_its_write_is_read_from_the_file(store: _Counting) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records)
    store.annotate(run_id, labels={"later": 1})
    read = store.get_trajectory(run_id)
    assert store.file_reads == [run_id] and read.labels["later"] == 1
    assert read == _from_file(store, run_id)


def test_a_run_written_over_two_batches_is_read_from_the_file(store: _Counting) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records[:3])
    store.write_spans(records[3:])
    read = store.get_trajectory(run_id)
    assert store.file_reads == [run_id]
    assert len(read.steps) == len(_from_file(store, run_id).steps) > 3


def test_the_records_serve_one_read_only(store: _Counting) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records)
    first = store.get_trajectory(run_id)
    store._cache = TrajectoryCache(64)  # forget the built trajectory: the next read builds again
    assert store.get_trajectory(run_id) == first
    assert store.file_reads == [run_id]


def test_a_span_written_twice_in_one_batch_reads_as_the_last_copy(store: _Counting) -> None:
    run_id, records = fabricate_run()
    node = next(r for r in records if r.attributes.get(A.CAUSAL_SPAN_TYPE) == "node")
    renamed = node.model_copy(update={"name": "renamed"})
    store.write_spans([*records, renamed])
    read = store.get_trajectory(run_id)
    assert store.file_reads == []
    assert read == _from_file(store, run_id)
    assert next(s for s in read.steps if s.step_id == node.span_id).name == "renamed"


def test_reference_runs_and_forks_read_back_as_the_file_has_them(tmp_path: Path) -> None:
    """The instrumented reference agent and forks of it in every mode: each read straight after
    its write comes from the records and equals a fresh store's read of the file."""
    pytest.importorskip("benchmarks.reference_agent", reason="the reference agent is not in this checkout")
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.world.generator import generate_world

    world = generate_world(4, seed=0)
    store = _Counting(tmp_path / "ref.db")
    env = reference_sweep_environment(world, store=store, seed=0)
    try:
        runs = [env.run_base(q) for q in world.questions[:2]]
        read = {run_id: store.get_trajectory(run_id) for run_id in runs}
        for mode in ("regenerate", "frozen", "replay"):
            fork = env.backend.fork(runs[0], hop=1, mode=mode)
            read[fork.run_id] = fork
    finally:
        env.close()
    try:
        # every run (and each fork's own half) whose row was written once came from its records;
        # one written again before it was read (its spans handed over in parts, or an annotation
        # the writer no longer held: the background writer's timing decides) is read from the
        # file, as it must be
        assert all(store.writes[run_id] > 1 for run_id in store.file_reads)
        assert any(store.writes[run_id] == 1 for run_id in read)
        for run_id, trajectory in read.items():
            expected = _from_file(store, run_id)
            assert trajectory == expected and trajectory.model_dump_json() == expected.model_dump_json()
    finally:
        store.close()
