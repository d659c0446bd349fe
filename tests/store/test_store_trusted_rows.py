"""The SQLite store builds the records of its own well-formed rows without pydantic validation
(issue 16): every record, and every trajectory built from them (forks stitched included), is
identical to what full validation gives; a row the shortcut cannot vouch for is validated, with
the same coercions and the same errors."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from span_factory import fabricate_run

from causal_middleware.spans.record import SpanRecord
from causal_middleware.store import sqlite
from causal_middleware.store._records import span_record
from causal_middleware.store.sqlite import SqliteSpanStore

_FIELDS = tuple(SpanRecord.model_fields)


def _validated(*values: Any) -> SpanRecord:
    return SpanRecord.model_validate(dict(zip(_FIELDS, values, strict=True)))


def _same_record(fast: SpanRecord, slow: SpanRecord) -> None:
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_fields_set == slow.model_fields_set
    assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (
        slow.__pydantic_extra__,
        slow.__pydantic_private__,
    )
    assert [type(e) for e in fast.events] == [type(e) for e in slow.events]
    assert [type(link) for link in fast.links] == [type(link) for link in slow.links]
    for event, slow_event in zip(fast.events, slow.events, strict=True):
        assert event.model_fields_set == slow_event.model_fields_set


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """Reference-agent runs and forks of them in every mode, written by the real instrumentation."""
    pytest.importorskip("benchmarks.reference_agent", reason="the reference agent is not in this checkout")
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.world.generator import generate_world

    path = tmp_path_factory.mktemp("trusted") / "runs.db"
    world = generate_world(4, seed=0)
    store = SqliteSpanStore(path)
    env = reference_sweep_environment(world, store=store, seed=0)
    try:
        base = [env.run_base(q) for q in world.questions[:3]]
        forks = [
            env.backend.fork(base[0], hop=1, mode=mode).run_id for mode in ("regenerate", "frozen", "replay")
        ]
    finally:
        env.close()
        store.close()
    yield path, base + forks


def test_records_of_reference_runs_equal_validated_ones(
    reference_store: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, run_ids = reference_store
    with SqliteSpanStore(path, create=False) as store:
        fast = {run_id: store.get_spans(run_id) for run_id in run_ids}
    monkeypatch.setattr(sqlite, "span_record", _validated)
    with SqliteSpanStore(path, create=False) as store:
        slow = {run_id: store.get_spans(run_id) for run_id in run_ids}
    assert sum(len(spans) for spans in fast.values()) > 60
    for run_id in run_ids:
        for fast_record, slow_record in zip(fast[run_id], slow[run_id], strict=True):
            _same_record(fast_record, slow_record)


def test_trajectories_of_reference_runs_and_forks_equal_fully_validated_ones(
    reference_store: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, run_ids = reference_store
    with SqliteSpanStore(path, create=False) as store:
        fast = {run_id: store.get_trajectory(run_id) for run_id in run_ids}
        again = {run_id: store.get_trajectory(run_id) for run_id in run_ids}  # from the cache
    monkeypatch.setattr(sqlite, "span_record", _validated)
    with SqliteSpanStore(path, create=False) as store:
        slow = {run_id: store.get_trajectory(run_id) for run_id in run_ids}
    assert {t.lineage.mode for t in fast.values() if t.lineage is not None} == {
        "regenerate",
        "frozen",
        "replay",
    }
    for run_id in run_ids:
        assert fast[run_id] == slow[run_id] == again[run_id]
        assert fast[run_id].model_dump_json() == slow[run_id].model_dump_json()


_GOOD: dict[str, Any] = {
    "trace_id": "a" * 32,
    "span_id": "b" * 16,
    "parent_span_id": "c" * 16,
    "name": "node",
    "kind": "INTERNAL",
    "start_time_ns": 5,
    "end_time_ns": 9,
    "status_code": "ERROR",
    "status_message": "boom",
    "attributes": {"k": [1, 2]},
    "events": [{"name": "exception", "time_ns": 7, "attributes": {"exception.message": "boom"}}],
    "links": [{"trace_id": "d" * 32, "span_id": "e" * 16, "attributes": {}}],
    "resource": {"service.name": "agent"},
    "scope": "causal",
}
_ODD = [
    ("trace_id", "A" * 32),  # the pattern is lower-case hex
    ("trace_id", "a" * 31),
    ("span_id", "b" * 16 + "\n"),
    ("parent_span_id", "xyz"),
    ("name", 3),
    ("kind", "SIDEWAYS"),
    ("kind", ["INTERNAL"]),
    ("start_time_ns", 5.0),  # coerced to 5 by validation
    ("start_time_ns", "5"),
    ("start_time_ns", True),
    ("end_time_ns", 2.5),
    ("status_code", "FINE"),
    ("status_message", 1),
    ("attributes", ["not", "a", "dict"]),
    ("events", [{"name": "e", "time_ns": "7", "attributes": {}}]),
    ("events", [{"name": "e", "time_ns": 7}]),  # attributes default
    ("events", [{"name": "e", "time_ns": 7, "attributes": {}, "extra": 1}]),
    ("events", {"not": "a list"}),
    ("links", [{"trace_id": "d" * 32, "span_id": 3, "attributes": {}}]),
    ("resource", None),
    ("scope", 1),
]


def test_a_well_formed_row_is_built_as_validation_would() -> None:
    fields = [_GOOD[name] for name in _FIELDS]
    _same_record(span_record(*fields), _validated(*_GOOD.values()))
    root = {**_GOOD, "parent_span_id": None, "end_time_ns": None, "status_message": None, "scope": None}
    _same_record(span_record(*root.values()), _validated(*root.values()))


@pytest.mark.parametrize(("name", "value"), _ODD, ids=[f"{n}={v!r}"[:40] for n, v in _ODD])
def test_an_odd_field_goes_through_validation(name: str, value: Any) -> None:
    import copy

    values = [copy.deepcopy(value) if field == name else copy.deepcopy(_GOOD[field]) for field in _FIELDS]
    try:
        expected = _validated(*copy.deepcopy(values))
    except ValidationError as exc:
        with pytest.raises(ValidationError) as raised:
            span_record(*values)
        assert raised.value.errors() == exc.errors()
        return
    _same_record(span_record(*values), expected)


def test_rows_the_store_wrote_skip_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut is taken (no ``model_validate``) for every row of a run the store wrote."""
    run_id, records = fabricate_run()
    calls: list[object] = []
    real = SpanRecord.model_validate

    def counting(cls: type[SpanRecord], value: Any, /, **kwargs: Any) -> SpanRecord:
        calls.append(value)
        return real(value, **kwargs)

    with SqliteSpanStore(tmp_path / "t.db") as store:
        store.write_spans(records)
        monkeypatch.setattr(SpanRecord, "model_validate", classmethod(counting))
        assert {s.span_id: s for s in store.get_spans(run_id)} == {r.span_id: r for r in records}
    assert calls == []


def test_reading_a_fork_again_unpickles_only_its_stitched_form(
    reference_store: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork's own trajectory is never handed out, so the cache keeps no pickle of it; reading
    the fork again unpickles the stitched trajectory alone."""
    path, run_ids = reference_store
    fork_id = run_ids[-1]
    with SqliteSpanStore(path, create=False) as store:
        first = store.get_trajectory(fork_id)
        assert store._cache._entries[fork_id][1] is None
        loads: list[int] = []
        real = pickle.loads

        def counting(data: bytes) -> Any:
            loads.append(len(data))
            return real(data)

        monkeypatch.setattr(pickle, "loads", counting)
        assert store.get_trajectory(fork_id) == first
        assert len(loads) == 1
