"""OTLP/JSON round trips keep what was learned after the run; lists travel as arrays; base64 ids."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from span_factory import BASE_NS, fabricate_run

from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Intervention, Lineage
from causal_middleware.store.base import SpanStore, StoreError
from causal_middleware.store.otlp_json import read_otlp_json

HOUR = 3600 * 10**9


def _filled(store: SpanStore) -> list[str]:
    ids = []
    for n in range(3):
        run_id, records = fabricate_run(
            thread_id=f"t{n}",
            base_ns=BASE_NS + n * HOUR,
            fail_hop=2 if n == 1 else None,
            labels={"from_spans": n} if n == 2 else None,
        )
        store.write_spans(records)
        ids.append(run_id)
    store.annotate(ids[0], outcome="success", reference="Quarn", labels={"reviewer": "ann", "tags": [1, 2]})
    store.annotate(ids[1], outcome="failure", labels={"fault": {"hop": 2}})
    store.annotate(ids[2], reference='["not", "json"]', labels={"extra": True})
    return ids


def test_round_trip_keeps_annotations(make_store: Callable[[], SpanStore], tmp_path: Path) -> None:
    source = make_store()
    ids = _filled(source)
    path = tmp_path / "runs.json"
    source.export_otlp_json(path)
    fresh = make_store()
    assert sorted(fresh.import_otlp_json(path)) == sorted(ids)
    for run_id in ids:
        assert fresh.get_trajectory(run_id) == source.get_trajectory(run_id)
    assert fresh.list_runs() == source.list_runs()
    assert [r.run_id for r in fresh.list_runs(outcome="failure")] == [ids[1]]
    assert [r.run_id for r in fresh.list_runs(label="reviewer=ann")] == [ids[0]]
    imported = fresh.get_trajectory(ids[0])
    assert (imported.outcome, imported.reference) == ("success", "Quarn")
    assert imported.labels == {"reviewer": "ann", "tags": [1, 2]}
    assert fresh.get_trajectory(ids[2]).labels == {"from_spans": 2, "extra": True}
    assert fresh.get_trajectory(ids[2]).reference == '["not", "json"]'
    # exported again from the imported store: the same file content (annotations are now spans)
    again = tmp_path / "again.json"
    fresh.export_otlp_json(again)
    assert read_otlp_json(again) == read_otlp_json(path)


def test_round_trip_keeps_annotated_lineage(make_store: Callable[[], SpanStore], tmp_path: Path) -> None:
    source = make_store()
    parent, records = fabricate_run(base_ns=BASE_NS)
    source.write_spans(records)
    child, records = fabricate_run(base_ns=BASE_NS + HOUR, thread_id="t2")
    source.write_spans(records)
    lineage = Lineage(
        parent_run_id=parent,
        fork_hop=2,
        fork_node="retrieve",
        mode="frozen",
        intervention=Intervention(kind="fault:empty_retrieval", node="retrieve", hop=2),
    )
    source.annotate(child, lineage=lineage)
    path = tmp_path / "runs.json"
    source.export_otlp_json(path)
    fresh = make_store()
    fresh.import_otlp_json(path)
    assert fresh.get_trajectory(child).lineage == lineage
    assert fresh.list_runs(parent_run_id=parent)[0].run_id == child


def test_json_lists_are_written_as_arrays_and_read_back_as_lists(
    store: SpanStore, make_store: Callable[[], SpanStore], tmp_path: Path
) -> None:
    run_id, records = fabricate_run()
    node = next(r for r in records if r.attributes.get(A.CAUSAL_SPAN_TYPE) == "node")
    node.attributes[A.CAUSAL_LANGGRAPH_TRIGGERS] = json.dumps(["branch:to:retrieve"])
    node.attributes[A.CAUSAL_LANGGRAPH_PATH] = json.dumps(["__pregel_pull", "retrieve"])
    store.write_spans(records)
    path = tmp_path / "runs.json"
    store.export_otlp_json(path)
    doc = json.loads(path.read_text())
    values = {
        a["key"]: a["value"]
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
        for a in s["attributes"]
    }
    assert values[A.CAUSAL_DECISION_OPTIONS] == {
        "arrayValue": {"values": [{"stringValue": "retrieve"}, {"stringValue": "answer"}]}
    }
    assert values[A.CAUSAL_LANGGRAPH_PATH]["arrayValue"]["values"][1] == {"stringValue": "retrieve"}
    spans = {r.span_id: r for r in read_otlp_json(path)}
    assert spans[node.span_id].attributes[A.CAUSAL_LANGGRAPH_TRIGGERS] == ["branch:to:retrieve"]
    fresh = make_store()
    fresh.import_otlp_json(path)
    # the trajectory is the same whichever form the list was read in
    assert fresh.get_trajectory(run_id) == store.get_trajectory(run_id)
    step = next(s for s in fresh.get_trajectory(run_id).steps if s.step_id == node.span_id)
    assert step.attributes[A.CAUSAL_LANGGRAPH_PATH] == ["__pregel_pull", "retrieve"]


def _as_base64(doc: dict, *, break_one: bool = False) -> dict:
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    if break_one:
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = base64.b64encode(
            b"\x07" * 15
        ).decode()
    return doc


def test_base64_ids_are_decoded_to_hex(
    store: SpanStore, make_store: Callable[[], SpanStore], tmp_path: Path
) -> None:
    run_id, records = fabricate_run()
    store.write_spans(records)
    path = tmp_path / "hex.json"
    store.export_otlp_json(path)
    b64 = tmp_path / "b64.json"
    b64.write_text(json.dumps(_as_base64(json.loads(path.read_text()))))
    fresh = make_store()
    assert fresh.import_otlp_json(b64) == [run_id]
    assert fresh.get_spans(run_id) == sorted(read_otlp_json(path), key=lambda r: (r.start_time_ns, r.span_id))
    assert fresh.get_trajectory(run_id) == store.get_trajectory(run_id)


def test_protobuf_message_to_json_output_imports(store: SpanStore, tmp_path: Path) -> None:
    from google.protobuf import json_format

    from causal_middleware.store.otlp_json import records_to_request

    run_id, records = fabricate_run()
    path = tmp_path / "proto.json"
    path.write_text(json_format.MessageToJson(records_to_request(records)))
    assert store.import_otlp_json(path) == [run_id]
    assert len(store.get_spans(run_id)) == len(records)


def test_base64_of_the_wrong_size_is_refused_with_a_hint(store: SpanStore, tmp_path: Path) -> None:
    _run_id, records = fabricate_run()
    store.write_spans(records)
    path = tmp_path / "hex.json"
    store.export_otlp_json(path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_as_base64(json.loads(path.read_text()), break_one=True)))
    with pytest.raises(StoreError) as info:
        store.import_otlp_json(bad)
    message = str(info.value)
    assert "\n" not in message
    assert "traceId must be a hex string of 32 digits" in message
    assert "read as base64 it is 15 bytes, not 16" in message
