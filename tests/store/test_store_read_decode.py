"""The SQLite store's read side decodes a run's rows with shortcuts (issue 16): attribute names
decoded once per key set, a run's shared resource parsed once, empty event and link lists not
parsed. Each gives exactly what the plain decoding gives, and no two spans share a mutable value."""

from __future__ import annotations

import random
from pathlib import Path

from span_factory import fabricate_run

from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanEvent, SpanLink, SpanRecord
from causal_middleware.store._packing import BLOB_KEY, lift_blobs, restore_blobs
from causal_middleware.store.sqlite import SqliteSpanStore, _restore


def test_restoring_attributes_matches_restore_blobs() -> None:
    rng = random.Random(7)
    names = [
        A.INPUT_VALUE,
        A.OUTPUT_VALUE,
        A.CAUSAL_SPAN_TYPE,
        "retrieval.documents.3.document.content",
        "llm.input_messages.12.message.role",
        "custom.key",
        "\u00a7looks.coded",
        "\u00a7",
    ]
    for _ in range(300):
        attributes = {
            rng.choice(names): rng.choice(["x" * rng.randint(0, 400), 5, None, [1, 2], {"k": "v"}, True])
            for _ in range(rng.randint(0, 8))
        }
        blobs: dict[str, bytes] = {}
        stored = lift_blobs(attributes, blobs)
        stored["\u00a7odd"] = {BLOB_KEY: "not-a-stored-digest"}  # a missing blob stays a reference
        texts = {d: "".join(chr(b) for b in v[1:]) for d, v in blobs.items() if rng.random() < 0.8}
        assert _restore(stored, texts) == restore_blobs(stored, texts)
        assert _restore(stored, texts) == restore_blobs(stored, texts)  # the names now come cached


def test_a_run_read_back_equals_what_was_written(tmp_path: Path) -> None:
    run_id, records = fabricate_run()
    root = next(r for r in records if r.parent_span_id is None)
    child = next(r for r in records if r.parent_span_id is not None)
    with_extras = child.model_copy(
        update={
            "events": [SpanEvent(name="exception", time_ns=1, attributes={"exception.message": "boom"})],
            "links": [SpanLink(trace_id=root.trace_id, span_id=root.span_id, attributes={"why": "retry"})],
        }
    )
    written = [with_extras if r.span_id == child.span_id else r for r in records]
    store = SqliteSpanStore(tmp_path / "d.db")
    try:
        store.write_spans(written)
        by_id = {s.span_id: s for s in store.get_spans(run_id)}
        assert by_id == {r.span_id: r for r in written}
    finally:
        store.close()


def _spans_with_resource(resource: dict[str, object]) -> tuple[str, list[SpanRecord]]:
    run_id, records = fabricate_run()
    return run_id, [r.model_copy(update={"resource": resource}) for r in records]


def test_spans_sharing_a_flat_resource_get_their_own_dicts(tmp_path: Path) -> None:
    run_id, records = _spans_with_resource({"service.name": "agent", "service.instance": 3})
    store = SqliteSpanStore(tmp_path / "r.db")
    try:
        store.write_spans(records)
        first, second, *_ = store.get_spans(run_id)
        assert first.resource == second.resource == records[0].resource
        first.resource["service.name"] = "changed"
        assert second.resource["service.name"] == "agent"
        assert all(s.resource["service.name"] == "agent" for s in store.get_spans(run_id))
    finally:
        store.close()


def test_spans_never_share_a_nested_resource_value(tmp_path: Path) -> None:
    run_id, records = _spans_with_resource({"service.name": "agent", "process.command_args": ["a", "b"]})
    store = SqliteSpanStore(tmp_path / "n.db")
    try:
        store.write_spans(records)
        first, second, *_ = store.get_spans(run_id)
        assert first.resource == second.resource == records[0].resource
        first.resource["process.command_args"].append("c")
        assert second.resource["process.command_args"] == ["a", "b"]
    finally:
        store.close()
