"""The SpanStore contract, run against the in-memory and the SQLite store alike."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic import BaseModel
from span_factory import BASE_NS, emit_run, fabricate_run, openinference_run

from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.health import health
from causal_middleware.spans.model import Intervention, Lineage, Outcome, Status
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import SpanStore, StoreError

HOUR = 3600 * 10**9


def _write(store: SpanStore, **kwargs) -> tuple[str, list[SpanRecord]]:
    run_id, records = fabricate_run(**kwargs)
    store.write_spans(records)
    return run_id, records


def test_spans_come_back_in_start_order(store: SpanStore) -> None:
    run_id, records = _write(store)
    spans = store.get_spans(run_id)
    assert sorted(s.span_id for s in spans) == sorted(r.span_id for r in records)
    assert [s.start_time_ns for s in spans] == sorted(r.start_time_ns for r in records)
    assert {s.span_id: s for s in spans} == {r.span_id: r for r in records}


def test_unknown_run_raises_key_error_naming_it(store: SpanStore) -> None:
    _write(store)
    missing = "f" * 32
    for call in (store.get_spans, store.get_trajectory, lambda r: store.annotate(r, outcome="success")):
        with pytest.raises(KeyError, match=missing):
            call(missing)


def test_trajectory_is_the_builder_over_stored_spans(store: SpanStore) -> None:
    run_id, records = _write(store, outcome="failure", labels={"fault": "empty"})
    assert store.get_trajectory(run_id) == build_trajectory(records)


def test_summary_agrees_with_trajectory(store: SpanStore) -> None:
    run_id, _ = _write(store, thread_id="t-9", fail_hop=3)
    summary = store.list_runs()[0]
    t = store.get_trajectory(run_id)
    assert summary.run_id == run_id
    assert (summary.thread_id, summary.graph, summary.answer, summary.status) == (
        t.thread_id,
        t.graph,
        t.answer,
        t.status,
    )
    assert (summary.started_at, summary.ended_at, summary.n_hops) == (t.started_at, t.ended_at, len(t.hops))
    assert summary.n_spans == 28 and summary.status is Status.ERROR


def test_re_exporting_the_same_spans_is_idempotent(store: SpanStore) -> None:
    run_id, records = _write(store)
    before = store.get_trajectory(run_id)
    store.write_spans(records)
    store.write_spans(records[:3])
    assert store.list_runs()[0].n_spans == len(records)
    assert store.get_trajectory(run_id) == before


@pytest.mark.parametrize("order", ["children_first", "root_first", "shuffled"])
def test_batches_in_any_order_end_with_the_right_run_row(
    make_store: Callable[[], SpanStore], order: str
) -> None:
    run_id, records = fabricate_run(labels={"fault": "x"}, outcome="failure")
    reference = make_store()
    reference.write_spans(records)
    expected = reference.list_runs()[0]

    store = make_store()
    root = next(r for r in records if r.parent_span_id is None)
    children = [r for r in records if r is not root]
    if order == "children_first":
        batches = [children[:10], children[10:], [root]]
    elif order == "root_first":
        batches = [[root], children[10:], children[:10]]
    else:
        batches = [children[::3], [root, *children[1::3]], children[2::3]]
    store.write_spans(batches[0])
    if order != "root_first":
        partial = store.list_runs()[0]  # a run in progress is listed before its root arrives
        assert (partial.run_id, partial.status, partial.n_spans) == (run_id, Status.UNSET, len(batches[0]))
        with pytest.raises(ValueError, match="no root span"):
            store.get_trajectory(run_id)
    for batch in batches[1:]:
        store.write_spans(batch)
    assert store.list_runs() == [expected]
    assert store.get_trajectory(run_id) == reference.get_trajectory(run_id)


def test_annotations_override_and_merge(store: SpanStore) -> None:
    run_id, _ = _write(store, outcome="failure", reference="span-ref", labels={"fault": "empty", "hop": 2})
    parent = "0123456789abcdef0123456789abcdef"
    lineage = Lineage(parent_run_id=parent, fork_hop=2, intervention=Intervention(kind="repair", hop=2))
    store.annotate(run_id, outcome="success", labels={"hop": 3, "judge": "em"}, lineage=lineage)
    store.annotate(run_id, reference="gold", labels={"judge": "f1"})

    t = store.get_trajectory(run_id)
    assert (t.outcome, t.reference, t.lineage) == (Outcome.SUCCESS, "gold", lineage)
    assert t.labels == {"fault": "empty", "hop": 3, "judge": "f1"}
    summary = store.list_runs()[0]
    assert (summary.outcome, summary.labels, summary.parent_run_id) == (Outcome.SUCCESS, t.labels, parent)
    # spans arriving after an annotation do not undo it
    store.write_spans(store.get_spans(run_id)[:2])
    assert store.get_trajectory(run_id).outcome is Outcome.SUCCESS


def test_annotate_rejects_an_unknown_outcome(store: SpanStore) -> None:
    run_id, _ = _write(store)
    with pytest.raises(ValueError, match="unknown outcome 'great'.*success, failure, unknown"):
        store.annotate(run_id, outcome="great")


def test_returned_trajectories_are_copies(store: SpanStore) -> None:
    run_id, _ = _write(store)
    first = store.get_trajectory(run_id)
    first.hops[0].documents.clear()
    first.labels["mutated"] = True
    again = store.get_trajectory(run_id)
    assert again.hops[0].documents and "mutated" not in again.labels


def _fill_for_filters(store: SpanStore) -> dict[str, str]:
    ids = {}
    ids["old"], _ = _write(store, thread_id="a", base_ns=BASE_NS, outcome="success", labels={"split": "dev"})
    ids["mid"], _ = _write(
        store, thread_id="b", base_ns=BASE_NS + HOUR, outcome="failure", labels={"fault": "empty", "hop": 2}
    )
    ids["new"], _ = _write(
        store, thread_id="a", base_ns=BASE_NS + 2 * HOUR, labels={"fault": "drift", "hop": "3"}
    )
    ids["fork"], _ = _write(
        store, thread_id="b", base_ns=BASE_NS + 3 * HOUR, parent_run_id=ids["mid"], outcome="unknown"
    )
    return ids


def test_list_runs_filters_and_order(store: SpanStore) -> None:
    ids = _fill_for_filters(store)
    names = {v: k for k, v in ids.items()}

    def listed(**kwargs) -> list[str]:
        return [names[r.run_id] for r in store.list_runs(**kwargs)]

    start = datetime.fromtimestamp(BASE_NS // 10**9, UTC)
    assert listed() == ["fork", "new", "mid", "old"]
    assert listed(limit=2) == ["fork", "new"]
    assert listed(outcome="failure") == ["mid"]
    assert listed(outcome=Outcome.SUCCESS) == ["old"]
    assert listed(outcome="unknown") == ["fork", "new"]  # unknown also matches runs with no outcome
    assert listed(thread_id="a") == ["new", "old"]
    assert listed(since=start + timedelta(hours=1)) == ["fork", "new", "mid"]
    assert listed(until=start + timedelta(hours=1)) == ["mid", "old"]
    assert listed(
        since=(start + timedelta(minutes=30)).replace(tzinfo=None), until=start + timedelta(hours=2)
    ) == ["new", "mid"]
    assert listed(parent_run_id=ids["mid"]) == ["fork"]
    assert listed(label="fault") == ["new", "mid"]
    assert listed(label="fault=empty") == ["mid"]
    assert listed(label='fault="drift"') == ["new"]  # the value as JSON text
    assert listed(label="hop=2") == ["mid"]  # int label, plain text
    assert listed(label="hop=3") == ["new"]  # string label
    assert listed(label="fault", limit=1) == ["new"]
    assert listed(label="split=test") == []
    assert listed(thread_id="b", outcome="failure", label="hop") == ["mid"]


def test_list_runs_rejects_bad_arguments(store: SpanStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.list_runs(limit=0)
    with pytest.raises(ValueError, match="unknown outcome"):
        store.list_runs(outcome="meh")
    with pytest.raises(ValueError, match="label filter"):
        store.list_runs(label="=x")


def test_resolve_run_id_by_prefix(store: SpanStore) -> None:
    store.write_spans(
        openinference_run("abcdef01" + "0" * 23 + "1") + openinference_run("abcdef02" + "0" * 23 + "2")
    )
    first = "abcdef01" + "0" * 23 + "1"
    assert store.resolve_run_id(first) == first
    assert store.resolve_run_id("ABCDEF01") == first
    with pytest.raises(ValueError, match="ambiguous: it matches 2 runs"):
        store.resolve_run_id("abcdef")
    with pytest.raises(KeyError, match="at least 6 hex digits"):
        store.resolve_run_id("abcde")
    with pytest.raises(KeyError, match="no run id starts with it"):
        store.resolve_run_id("abcdef03")


class _Payload(BaseModel):
    score: float
    at: datetime


def test_derived_records(store: SpanStore) -> None:
    run_id, _ = _write(store)
    when = datetime(2026, 1, 2, tzinfo=UTC)
    first = store.put_record("diagnosis", run_id, {"hop": 2, "detail": _Payload(score=0.5, at=when)})
    second = store.put_record("diagnosis", "other-run", {"hop": 1})
    store.put_record("repair", run_id, {"ok": True})
    assert first != second
    assert store.get_records("diagnosis") == [
        {"hop": 2, "detail": {"score": 0.5, "at": "2026-01-02T00:00:00Z"}},
        {"hop": 1},
    ]
    assert store.get_records("diagnosis", run_id) == [
        {"hop": 2, "detail": {"score": 0.5, "at": "2026-01-02T00:00:00Z"}}
    ]
    assert store.get_records("repair", "other-run") == []
    full = store.list_records("diagnosis")  # type: ignore[attr-defined]
    assert [r.id for r in full] == [first, second] and full[0].run_id == run_id
    with pytest.raises(ValueError, match="payload must be a dict"):
        store.put_record("diagnosis", run_id, ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        store.put_record("diagnosis", run_id, {"handle": object()})
    assert len(store.get_records("diagnosis")) == 2


def test_a_failing_batch_writes_nothing(store: SpanStore) -> None:
    kept_id, _ = _write(store)
    before = store.list_runs()
    run_id, records = fabricate_run(base_ns=BASE_NS + HOUR)
    records[5].attributes["bad"] = object()
    with pytest.raises(StoreError, match=f"attributes of span {records[5].span_id}"):
        store.write_spans(records)
    with pytest.raises(KeyError):
        store.get_spans(run_id)
    assert store.list_runs() == before and store.get_trajectory(kept_id).run_id == kept_id


def test_concurrent_writers(store: SpanStore) -> None:
    errors: list[BaseException] = []
    written: list[str] = []

    def worker(n: int) -> None:
        try:
            for k in range(2):
                run_id, records = fabricate_run(thread_id=f"w{n}", base_ns=BASE_NS + (n * 2 + k) * HOUR)
                for i in range(0, len(records), 7):  # several batches per run
                    store.write_spans(records[i : i + 7])
                written.append(run_id)
                store.list_runs(thread_id=f"w{n}")
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    runs = store.list_runs(limit=None)
    assert sorted(r.run_id for r in runs) == sorted(written) and len(runs) == 12
    assert all(r.n_spans == 28 and r.n_hops == 3 and r.answer == "Quarn" for r in runs)
    assert all(len(store.get_trajectory(r).hops) == 3 for r in written)


def test_store_is_an_otel_span_exporter(store: SpanStore) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(store))  # one export per finished span
    run_id = emit_run(provider.get_tracer("t"), thread_id="live")
    t = store.get_trajectory(run_id)
    assert (t.thread_id, len(t.hops), t.answer) == ("live", 3, "Quarn")


def test_export_failures_are_counted_not_raised(store: SpanStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(records):
        raise StoreError("disk full")

    monkeypatch.setattr(store, "write_spans", broken)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(store))
    emit_run(provider.get_tracer("t"))
    assert health.errors.get("store.export") == 28


def test_async_twins(store: SpanStore) -> None:
    run_id, _ = _write(store)

    async def go():
        await store.aannotate(run_id, outcome="success")
        return (
            await store.aget_trajectory(run_id),
            await store.alist_runs(outcome="success"),
            await store.aget_spans(run_id),
        )

    t, runs, spans = asyncio.run(go())
    assert t.outcome is Outcome.SUCCESS and [r.run_id for r in runs] == [run_id] and len(spans) == 28


def test_traces_that_are_not_runs_are_kept_but_not_listed(store: SpanStore) -> None:
    run_id, records = fabricate_run()
    root = next(r for r in records if r.parent_span_id is None)
    # a repair span inside the run's trace: our own type, so its CHAIN kind must not make it a step
    records.append(
        SpanRecord(
            trace_id=run_id,
            span_id="00000000000000ab",
            parent_span_id=root.span_id,
            name="repair note",
            start_time_ns=root.start_time_ns + 5,
            attributes={"causal.span.type": "repair", "openinference.span.kind": "CHAIN"},
        )
    )
    repair_trace = "feedface" * 4
    repair = SpanRecord(
        trace_id=repair_trace,
        span_id="00000000000000cd",
        name=f"repair {run_id[:8]}",
        start_time_ns=root.start_time_ns + 10**12,
        attributes={"causal.span.type": "repair", "openinference.span.kind": "EVALUATOR"},
    )
    store.write_spans([*records, repair])
    assert [r.run_id for r in store.list_runs()] == [run_id]
    assert store.get_trajectory(run_id) == build_trajectory(records[:-1])
    assert [s.name for s in store.get_spans(repair_trace)] == [repair.name]
    with pytest.raises(KeyError):
        store.resolve_run_id(repair_trace[:8])
